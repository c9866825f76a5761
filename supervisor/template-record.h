/* A user template's saved record (<state-dir>/templates/<name>): pure format and parse, no
 * sd-bus and no I/O, so the fuzzer and the unit tests link it alone (supervisor). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TEMPLATE_RECORD_FORMAT 2
#define TEMPLATE_RECORD_MAX_BYTES (512 * 1024)
#define TEMPLATE_ARG_MAX 4096 /* bytes in one argv element */
#define TEMPLATE_ARGC_MAX 64
#define TEMPLATE_PATH_MAX 4096 /* the root filesystem path */
#define TEMPLATE_STANDBY_MAX 16
#define TEMPLATE_MEMORY_MIN (16ull << 20)
#define TEMPLATE_MEMORY_MAX (1ull << 50) /* the host's own bound is AddTemplate's check */
/* a template's own pids and CPU bounds (netnsd's --sandbox-pids/--sandbox-cpus ranges; those
 * stay the caps) */
#define TEMPLATE_PIDS_MIN 64
#define TEMPLATE_PIDS_MAX 65536
#define TEMPLATE_CPU_MILLIS_MIN 50
#define TEMPLATE_CPU_MILLIS_MAX 1024000
#define TEMPLATE_ENVC_MAX 128 /* environment entries (KEY=value) */
#define TEMPLATE_ID_MAX 65534 /* uid and gid of the program */

struct template_record {
	char *rootfs;
	char **argv; /* NULL-terminated */
	size_t argc;
	unsigned port;
	uint64_t memory_limit;
	bool allow_outbound;
	uint32_t idle_ms;
	bool warm;
	unsigned standby;
	uint32_t pids_max;   /* 0 (the host's) or TEMPLATE_PIDS_MIN..MAX */
	uint32_t cpu_millis; /* 0 (the host's) or TEMPLATE_CPU_MILLIS_MIN..MAX */
	char **env;	     /* NULL-terminated KEY=value, may be NULL when envc is 0 */
	size_t envc;
	char *cwd; /* NULL: / */
	bool user_set;
	uint32_t uid, gid;
	bool imported; /* its tree was made by warren-importd (removed with it) */
	char *egress;  /* its sandboxes' egress policy, canonical; NULL: allow_outbound's */
};
/* An environment entry: KEY=value, KEY not empty and without '=' (checked as every string). */
bool template_env_valid(const char *e);

/* Every field of a record in range (strings: bounded, no control characters; rootfs absolute;
 * 1..64 arguments, the first not empty; port 1-65535; memory 16 MiB..1 PiB; standby <= 16);
 * 0 or -EINVAL with why set. */
int template_record_check(const struct template_record *r, char *why, size_t whylen);
/* key=value lines, "format=2" first, each value escaped (%XX for '%' and any byte below 0x20 or
 * 0x7f), so no value can end its line. Checks the record first (-EINVAL). *out is freed by the
 * caller. */
int template_record_format(const struct template_record *r, char **out, size_t *len);
/* Parse a saved record: every key known, at most once (arg repeated), every number whole and in
 * range, every escape well-formed, the result checked as above; -EBADMSG with why otherwise.
 * A record without the format line is a 0.2.0 one (no escapes) and is held to the same rules.
 * On success r owns its strings (template_record_clear). */
int template_record_parse(const char *buf, size_t len, struct template_record *r, char *why,
			  size_t whylen);
void template_record_clear(struct template_record *r);
