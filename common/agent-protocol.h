/* The sandbox agent's protocol: the one place C code takes its constants and its line protocol
 * from. Shared by the agent itself (agent/warren-agent.c and agent/envd.c, a static binary of its
 * own: so this header holds its code inline and needs only libc), the host's spawner
 * (netnsd/spawner/: microvm.c, vmm-*.c, spawn.c), the gateway (the gate on the envd port) and
 * warren-e2b-api (POST /init). Scripts and tests that need one of these values keep it, with a
 * comment naming this header.
 *
 * The microVM line protocol, one request per line, host to guest:
 *   ping                  -> ok
 *   clock <sec> <nsec>    -> ok | error clock
 *   id <sandbox id>       -> ok | error id
 *   exec <ms> <len>\n<len bytes: argv, NUL-separated, each NUL-terminated>
 *                         -> exit <status> <outlen> <errlen>\n<stdout><stderr> | error exec
 * anything else           -> error unknown
 * The parsers here do no I/O, so both directions are fuzzed (tests/fuzz/fuzz-agent-protocol.c). */
#pragma once
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* A microVM guest's fixed inner address and gateway, on every VM and every clone (the agent sets
 * them on eth0; the VMM's network forwards to the guest address; docs/MICROVM.md: addressing) */
#define AGENT_PROTO_GUEST_ADDR "10.0.2.15"
#define AGENT_PROTO_HOST_ADDR "10.0.2.2"
/* QEMU's virtio-serial port the agent answers on */
#define AGENT_PROTO_PORT_NAME "org.warren.agent"
/* the vsock port it listens on for VMMs without virtio-serial (Firecracker) */
#define AGENT_PROTO_VSOCK_PORT 1024
/* the agent's envd API (agent/envd.c), forwarded by the VMM beside the template's port and
 * reachable through the gateway by E2B's routing headers (tests and scripts: 49983) */
#define AGENT_PROTO_ENVD_PORT 49983
#define AGENT_PROTO_ENVD_PORT_S "49983"
/* the header the envd API checks against the access token POST /init set (E2B's envd) */
#define AGENT_PROTO_ACCESS_TOKEN_HEADER "X-Access-Token"
/* the header the gateway checks against a sandbox's agent token before it forwards anything to
 * the envd port (never forwarded itself) */
#define AGENT_PROTO_GATE_TOKEN_HEADER "X-Warren-Agent-Token"
/* where a gVisor container sees the agent, its first process: a mount point the template
 * carries (scripts/warren-template-build makes it) */
#define AGENT_PROTO_GVISOR_PATH "/.warren/agent"
/* in a microVM guest: the kernel modules the agent loads at boot, one path a line, and those it
 * loads only for vsock (scripts/warren-vm-image writes both) */
#define AGENT_PROTO_MODULES_PATH "/etc/warren/modules"
#define AGENT_PROTO_MODULES_VSOCK_PATH "/etc/warren/modules-vsock"
/* the most argv bytes an exec request may carry */
#define AGENT_PROTO_MAX_EXEC (64 * 1024)

enum agent_proto_kind {
	AGENT_PROTO_PING,
	AGENT_PROTO_CLOCK,
	AGENT_PROTO_ID,
	AGENT_PROTO_EXEC,
	AGENT_PROTO_BAD_EXEC, /* an exec line that does not parse or asks too much */
	AGENT_PROTO_UNKNOWN,
};

struct agent_proto_request {
	enum agent_proto_kind kind;
	long long sec, nsec; /* clock: 0 0 when they do not parse */
	const char *id;	     /* id: the rest of the line */
	unsigned ms;	     /* exec: timeout */
	size_t len;	     /* exec: bytes at args */
	char *args;
};

/* One request at the start of buf (have bytes). Returns how many bytes it takes (its line and,
 * for exec, its argv bytes), or 0 when more must arrive. The line's newline becomes a NUL. */
static inline size_t
agent_proto_next(char *buf, size_t have, struct agent_proto_request *q)
{
	char *nl = memchr(buf, '\n', have);
	if (!nl)
		return 0;
	*nl = 0;
	size_t line_len = (size_t)(nl - buf) + 1;
	*q = (struct agent_proto_request){.kind = AGENT_PROTO_UNKNOWN};
	if (!strcmp(buf, "ping")) {
		q->kind = AGENT_PROTO_PING;
	} else if (!strncmp(buf, "clock ", 6)) {
		q->kind = AGENT_PROTO_CLOCK;
		if (sscanf(buf + 6, "%lld %lld", &q->sec, &q->nsec) != 2)
			q->sec = q->nsec = 0;
	} else if (!strncmp(buf, "id ", 3)) {
		q->kind = AGENT_PROTO_ID;
		q->id = buf + 3;
	} else if (!strncmp(buf, "exec ", 5)) {
		q->kind = AGENT_PROTO_BAD_EXEC;
		if (sscanf(buf + 5, "%u %zu", &q->ms, &q->len) != 2 ||
		    q->len > AGENT_PROTO_MAX_EXEC)
			return line_len;
		if (have - line_len < q->len) {
			*nl = '\n';
			return 0;
		}
		q->kind = AGENT_PROTO_EXEC;
		q->args = nl + 1;
		return line_len + q->len;
	}
	return line_len;
}

/* Run every complete request in buf through handle, in order, and keep what is left at the
 * start of buf. buf holds size bytes: when it is full without a complete request (one larger
 * than allowed), it is dropped. */
static inline void
agent_proto_drain(char *buf, size_t *have, size_t size,
		  void (*handle)(const struct agent_proto_request *q, void *ud), void *ud)
{
	for (;;) {
		struct agent_proto_request q;
		size_t used = agent_proto_next(buf, *have, &q);
		if (!used)
			break;
		handle(&q, ud);
		memmove(buf, buf + used, *have - used);
		*have -= used;
	}
	if (*have == size - 1)
		*have = 0;
}

/* An exec's argv: NULL-terminated pointers into args, one per NUL-terminated string within its
 * len bytes (bytes after the last NUL are not an argument: they may be the next request's).
 * Returns NULL when out of memory; free() the vector only. */
static inline char **
agent_proto_exec_argv(char *args, size_t len, size_t *argc)
{
	/* each string takes at least its NUL: at most len of them */
	char **argv = calloc(len + 1, sizeof *argv);
	size_t n = 0;
	if (!argv)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t k = strnlen(args + i, len - i);
		if (k == len - i)
			break;
		argv[n++] = args + i;
		i += k + 1;
	}
	*argc = n;
	return argv;
}

/* The agent's answer to exec, as the host reads it. The sizes are the guest's word. */
static inline bool
agent_proto_parse_exit(const char *line, int *status, long long *out_len, long long *err_len)
{
	return sscanf(line, "exit %d %lld %lld", status, out_len, err_len) == 3;
}
