/* warren-clusterd: the catalog as clusterd keeps it in memory for routing (docs/MULTIHOST.md,
 * "Routing across hosts"): the owner records (sandbox id -> host) and the host records (name ->
 * gateway URL), read once and then kept current by an etcd watch. catalog-table.c is the pure
 * part (what etcd's JSON gateway sends, parsed and bounded, and applied to the table), linked by
 * the unit test and the fuzzer; catalog-watch.c holds the connections. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CATALOG_MAX_OWNERS 65536   /* owner records kept; more are left out (and logged) */
#define CATALOG_MAX_HOSTS 256	   /* PLACE_MAX_HOSTS */
#define CATALOG_MAX_EVENTS 131072  /* events in one watch message or kvs in one range answer */
#define CATALOG_MSG_MAX (8u << 20) /* one watch message (a line) or one range answer */
#define CATALOG_KEY_MAX 1024
#define CATALOG_URL_MAX 200 /* --gateway-url's bound */

/* one message of the watch stream, or a range answer (its kvs as puts) */
struct catalog_event {
	bool del;
	char *key, *value; /* decoded; value "" for a delete */
};
struct catalog_msg {
	int64_t revision;	  /* header.revision (0: absent) */
	int64_t compact_revision; /* a canceled watch: history before it is gone */
	bool created, canceled;
	struct catalog_event *ev;
	size_t n;
};
/* one line of POST /v3/watch's stream: 0, -EPROTO for an error message, -EBADMSG malformed,
 * -E2BIG too many events */
int catalog_parse_watch(const char *text, size_t len, struct catalog_msg *m);
/* the answer of POST /v3/kv/range */
int catalog_parse_range(const char *text, size_t len, struct catalog_msg *m);
void catalog_msg_clear(struct catalog_msg *m);

struct catalog_table {
	json_t *owners; /* {id: host} */
	json_t *hosts;	/* {name: gateway URL ("" when it publishes none)} */
	bool overflow;	/* an owner record was left out: more than CATALOG_MAX_OWNERS */
};
int catalog_table_init(struct catalog_table *t);
void catalog_table_clear(struct catalog_table *t);
/* applies the puts and deletes under prefix/hosts/ and prefix/owners/ (anything else, or a
 * malformed key or value, is ignored; a malformed owner record counts as absent): 1 when an
 * entry was added, changed or removed, else 0 */
int catalog_table_apply(struct catalog_table *t, const char *prefix, const struct catalog_msg *m);
