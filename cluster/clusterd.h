/* warren-clusterd: Warren's per-host cluster daemon (docs/MULTIHOST.md). An unprivileged D-Bus
 * client of the local supervisor, like warrenctl and warren-e2b-api, that joins the host to a
 * cluster kept in etcd (membership under a lease, the sandbox catalog, idempotent placement of
 * creates) and forwards creates to other hosts' clusterd over HTTP with a shared cluster key.
 * It holds no capability; the only privilege it has is the D-Bus policy's for its user. */
#pragma once
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "bus-event.h"
#include "catalog.h"
#include "place.h"

struct seccomp_policy;
struct ipc_client;

#define CLUSTER_NAME_MAX 63 /* a host's name: [a-z0-9-] */
#define CLUSTER_RID_MAX 64  /* a create's request id: [A-Za-z0-9_-] */
#define CLUSTER_KEY_MAX 256
#define CLUSTER_MAX_ENDPOINTS 8
#define CLUSTER_TAG_MAX 32   /* a user tag: [a-z0-9_-] */
#define CLUSTER_FORK_MAX 200 /* children of one fork: ForkTag's bound */

/* etcd.c: etcd's v3 JSON gateway, blocking calls with a deadline, endpoints tried in turn */
struct etcd {
	char *hosts[CLUSTER_MAX_ENDPOINTS]; /* "ADDR:PORT" */
	size_t n, current;
	int timeout_ms;
};
struct etcd_kv {
	char *key, *value;
};
int etcd_init(struct etcd *e, const char *endpoints);
void etcd_kvs_free(struct etcd_kv *kv, size_t n);
int etcd_lease_grant(struct etcd *e, int ttl, int64_t *id);
/* 0 and the lease's remaining TTL (<= 0: the lease is gone), or -errno: etcd not reached */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl);
int etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease);
int etcd_delete(struct etcd *e, const char *key);
/* every key under prefix (a malloc'd array) */
int etcd_range_prefix(struct etcd *e, const char *prefix, struct etcd_kv **out, size_t *n);
/* one key: 0 and *value (malloc'd), -ENOENT if absent */
int etcd_get(struct etcd *e, const char *key, char **value);
/* put key=value only if key does not exist (a txn on its create revision): 1 if put, 0 and
 * *existing (malloc'd) if it was there */
int etcd_create(struct etcd *e, const char *key, const char *value, int64_t lease, char **existing);

/* the local sandboxes as the supervisor lists them */
struct local_sandbox {
	char id[16], template[72], state[24];
};

struct cluster {
	struct event_base *base;
	sd_bus *bus;
	struct bus_event *bus_ev;
	struct event *tick_ev;
	struct evhttp *http;
	struct etcd etcd;
	const char *name, *advertise, *gateway_url, *prefix;
	const char *e2b_url; /* this host's E2B control plane, published (NULL: none) */
	char key[CLUSTER_KEY_MAX + 1];
	int lease_ttl;
	unsigned k;
	int64_t lease;
	uint64_t last_keepalive_usec; /* monotonic: the last keepalive etcd answered */
	bool registered;
	/* creates accepted here and not yet sent to the supervisor: not in its list yet, so
	 * taken off the free slots published; a create sent is in the supervisor's list at once
	 * (D-Bus keeps the order of one connection's messages, and the supervisor adds the
	 * sandbox when it reads the call), so it is counted there */
	unsigned pending;
	unsigned inflight; /* creates sent to the supervisor and not answered yet */
	struct place_reservation reservations[PLACE_MAX_HOSTS];
	size_t n_reservations;
	struct local_sandbox *local;
	size_t n_local;
	/* gateway-routes.c: routing across hosts (gateway_socket NULL: off) */
	const char *gateway_socket;
	struct ipc_client *gw;
	char hop_token[65];
	char *routes_pushed; /* the table the gateway has (serialized); NULL: push it */
	uint64_t routes_generation;
	bool routes_busy;  /* a push is waiting for the gateway's answers */
	bool routes_dirty; /* the catalog changed during that push: refresh when it is done */
	struct catalog_watch *watch; /* catalog-watch.c */
	char *tags_published;	     /* cluster-fork.c: the tag records written under the lease */
};

/* cluster-bus.c: org.warren.Warren1 */
int cluster_bus_list(struct cluster *c, struct local_sandbox **out, size_t *n);
int cluster_bus_pool(struct cluster *c, uint32_t *size, uint32_t *free_slots);
/* warm templates and standby counts: a JSON object {template: standby} of the warm ones */
json_t *cluster_bus_warm(struct cluster *c);
/* CreateSandbox(template, wait) without blocking the loop: done(id or NULL, error name) */
typedef void (*cluster_create_done)(struct cluster *c, const char *id, const char *error,
				    const char *message, void *userdata);
int cluster_bus_create_async(struct cluster *c, const char *template, cluster_create_done done,
			     void *userdata);

/* member.c: membership and capacity under the lease; the catalog written from the supervisor */
uint64_t cluster_now_usec(void);
bool cluster_connected(struct cluster *c);
int member_free_slots(struct cluster *c, uint32_t *free_slots, uint32_t *pool_size);
int member_publish(struct cluster *c);
void member_tick(evutil_socket_t fd, short what, void *arg);
char *cluster_key(struct cluster *c, const char *kind, const char *name);

/* gateway-routes.c: the remote part of the catalog, pushed to the local gateway */
int gateway_routes_init(struct cluster *c);
/* builds the routes from the watched catalog and pushes them if they changed (or the gateway
 * came back); nothing before the first full read of the catalog */
void gateway_routes_refresh(struct cluster *c);

/* catalog-watch.c: the owner and host records, kept current by an etcd watch */
int catalog_watch_start(struct cluster *c);
/* NULL until the first full read */
const struct catalog_table *catalog_watch_table(struct cluster *c);

/* cluster-http.c: the front door, the cluster list, the host-to-host create */
int cluster_http_start(struct cluster *c, int listen_fd);
/* for the routes of other files: a JSON answer (takes j), a bounded body (NULL: too big) */
void cluster_http_reply(struct evhttp_request *req, int status, json_t *j);
char *cluster_http_body(struct evhttp_request *req, size_t *len);

/* cluster-fork.c: forks across hosts, on the tag's host (the tag catalog, the routes) */
void cluster_fork_tags_sync(struct cluster *c, bool fresh_lease);
/* true when it is a fork route (answered) */
bool cluster_fork_route(struct cluster *c, struct evhttp_request *req, const char *uri,
			enum evhttp_cmd_type cmd);

/* cluster-input.c: what may come in (pure; unit-tested and fuzzed) */
bool cluster_input_name_ok(const char *s);
bool cluster_input_rid_ok(const char *s);
bool cluster_input_template_ok(const char *s);
bool cluster_input_id_ok(const char *s);
bool cluster_input_addr_ok(const char *s);
/* http://ADDR:PORT (IPv4), what a host publishes as its E2B control plane */
bool cluster_input_url_ok(const char *s);
int cluster_input_create(const char *body, size_t len, char *template, size_t tlen, char *rid,
			 size_t rlen);
bool cluster_input_tag_ok(const char *s);
int cluster_input_fork(const char *body, size_t len, char tag[CLUSTER_TAG_MAX + 1], unsigned *count,
		       char rid[CLUSTER_RID_MAX + 1], char host[CLUSTER_NAME_MAX + 1]);

/* clusterd-lockdown.c */
extern const struct seccomp_policy clusterd_seccomp;
