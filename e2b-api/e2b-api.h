/* warren-e2b-api: the E2B control plane, an unprivileged D-Bus client of the supervisor that
 * serves E2B's REST API (spec/openapi.yml of e2b-dev/E2B) over HTTP. Its own state (lifetimes,
 * metadata, access tokens) is a file it writes atomically; it holds no privilege a member of
 * group warren does not hold. */
#pragma once
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>

#include "api-keys.h"
#include "e2b-input.h"
#include "egress-policy.h"

struct seccomp_policy;

#define E2B_TOKEN_HEX 64 /* envdAccessToken: 32 random bytes */

struct e2b_sandbox {
	char id[E2B_ID_LEN + 1];
	char template[E2B_TEMPLATE_MAX + 1];
	uint64_t started_usec; /* realtime */
	uint64_t end_usec;     /* realtime: killed (or paused) then, unless paused; the
				* supervisor holds the same end (SetTimeout) and enforces it */
	uint32_t timeout_s;    /* the last timeout asked, applied again on resume */
	bool auto_pause, paused;
	char token[E2B_TOKEN_HEX + 1]; /* envdAccessToken of a secure sandbox, else "" */
	struct e2b_kv meta[E2B_META_MAX];
	size_t n_meta;
	struct e2b_sandbox *next;
};

#define E2B_HOST_NETS_MAX 256
#define E2B_CLUSTER_KEY_MAX 256
/* calls to the local clusterd and to peers in flight at once; beyond: 503, Retry-After */
#define E2B_CLUSTER_CALLS_MAX 64
/* entries taken from one peer's part of a list */
#define E2B_LIST_PEER_MAX 16384

struct e2b_api {
	struct event_base *base;
	struct evhttp *http;
	sd_bus *bus;
	int state_dir_fd;
	const char *keys_path;
	struct api_key *keys;
	size_t n_keys;
	struct stat keys_st;
	bool keys_st_valid;
	struct e2b_sandbox *sandboxes;
	size_t n_sandboxes, max_sandboxes;
	struct sockaddr_in gateway;
	const char *domain, *envd_version, *backend, *default_user;
	unsigned cpu_count;
	uint32_t max_timeout_s;
	unsigned tick;
	struct event *timer;
	bool lifetimes_pushed; /* every record's lifetime given to the supervisor since start */
	/* fork tags still to remove: RemoveTag is refused while a child is being restored */
	char pending_tags[16][32];
	size_t n_pending_tags;
	/* e2b-cluster.c: the E2B front door on a cluster (docs/MULTIHOST.md); off without
	 * --cluster. The cluster key goes only to the local clusterd (an operator-given
	 * address); other hosts' control planes get the peer token derived from it. */
	bool clustered;
	char cluster_addr[24]; /* the local clusterd, ADDR:PORT */
	char cluster_key[E2B_CLUSTER_KEY_MAX + 1];
	char peer_token[65];
	unsigned cluster_calls; /* calls to clusterd and peers in flight (E2B_CLUSTER_CALLS_MAX) */
	/* the host's own subnets when the daemon started: closed to "on", so to allowOut too */
	struct egress_entry host_nets[E2B_HOST_NETS_MAX];
	size_t n_host_nets;
};

/* e2b-store.c: records and the state file */
struct e2b_sandbox *e2b_store_find(struct e2b_api *a, const char *id);
struct e2b_sandbox *e2b_store_add(struct e2b_api *a, const char *id, const char *template);
void e2b_store_remove(struct e2b_api *a, struct e2b_sandbox *s);
int e2b_store_save(struct e2b_api *a);
int e2b_store_load(struct e2b_api *a);
uint64_t e2b_now_usec(void);

/* e2b-bus.c: calls to org.warren.Warren1 */
struct e2b_bus_entry {
	char id[E2B_ID_LEN + 1];
	char state[24];
};
/* egress: the CreateSandbox option (NULL: the template's policy); pool_timeout_ms: how long
 * to wait for a free slot (0: the supervisor's default) */
int e2b_bus_create(struct e2b_api *a, const char *template, const char *egress,
		   uint32_t pool_timeout_ms, char id[E2B_ID_LEN + 1], sd_bus_error *e);
int e2b_bus_sandbox_call(struct e2b_api *a, const char *id, const char *method, sd_bus_error *e);
int e2b_bus_state(struct e2b_api *a, const char *id, char *state, size_t len);
/* SetTimeout(seconds, action) of the sandbox: the supervisor enforces the lifetime ("kill" or
 * "pause" at its end; 0 clears it), and EndUSec, its end as the supervisor holds it (0: none) */
int e2b_bus_set_timeout(struct e2b_api *a, const char *id, uint64_t seconds, const char *action,
			sd_bus_error *e);
/* the sandbox's egress from now on, bounded by its template's ("": the template's own) */
int e2b_bus_set_egress(struct e2b_api *a, const char *id, const char *egress, sd_bus_error *e);
int e2b_bus_end_usec(struct e2b_api *a, const char *id, uint64_t *end_usec);
int e2b_bus_memory_current(struct e2b_api *a, const char *id, uint64_t *bytes);
/* malloc'd array of the supervisor's sandboxes (*n of them); -errno if it cannot be asked */
int e2b_bus_list(struct e2b_api *a, struct e2b_bus_entry **out, size_t *n);
/* the template's memory limit; -ENOENT if there is no such template */
int e2b_bus_template_memory(struct e2b_api *a, const char *template, uint64_t *bytes);
/* BranchSandbox(id, tag, count): the children's ids in ids[*n] */
int e2b_bus_branch(struct e2b_api *a, const char *id, const char *tag, unsigned count,
		   char (*ids)[E2B_ID_LEN + 1], size_t *n, sd_bus_error *e);
/* RemoveTag(tag): 0 when it is gone (or was), -EBUSY while a child is restored from it */
int e2b_bus_remove_tag(struct e2b_api *a, const char *tag);
/* HTTP status for a D-Bus error from the supervisor */
int e2b_bus_error_status(const sd_bus_error *e, int r);

/* e2b-agent.c: the sandbox agent's /init (envd API) through the gateway */
int e2b_agent_init(struct e2b_api *a, const char *id, const char *body, size_t len,
		   const char *access_token, int deadline_ms, char *why, size_t whylen);

/* e2b-http.c */
int e2b_http_start(struct e2b_api *a, int listen_fd);
/* POST /sandboxes on this host. placed: a peer or this front door placed it here, so a host
 * without a free slot refuses at once. -EBUSY (and no answer sent) when this host is full and
 * may_refuse; else 0, the request answered. */
int e2b_http_create(struct e2b_api *a, struct evhttp_request *req, bool placed, bool may_refuse);
void e2b_http_reply_json(struct evhttp_request *req, int status, json_t *j);
void e2b_http_reply_error(struct evhttp_request *req, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* a list's entries, before they are sorted and cut into a page */
struct e2b_list_entry {
	uint64_t started_usec;
	char id[E2B_ID_LEN + 1];
	json_t *j;	 /* SandboxDetail */
	unsigned origin; /* 0: this host's records, 1: a peer's answer (this host's wins) */
};
/* e2b-list.c: sorts entries by start time and id, keeps one per id (the lowest origin) and
 * frees the others' JSON; the number kept */
size_t e2b_list_sort(struct e2b_list_entry *v, size_t n);
struct e2b_page {
	bool v2, has_token;
	unsigned limit;
	uint64_t token_started;
	char token_id[E2B_ID_LEN + 1];
};
/* sorts entries, answers the page; frees the entries and their JSON */
void e2b_http_list_reply(struct evhttp_request *req, struct e2b_list_entry *v, size_t n,
			 const struct e2b_page *page);

/* e2b-cluster.c: the E2B front door on a cluster (docs/MULTIHOST.md) */
/* before the lock-down: the cluster key (root's, not readable by others), the peer token */
int e2b_cluster_setup(struct e2b_api *a, const char *clusterd, const char *key_path);
/* 1: a peer's request with the right token, 0: none, -1: a wrong or malformed one */
int e2b_cluster_peer(struct e2b_api *a, struct evhttp_request *req);
/* a create placed by clusterd and forwarded to the chosen host's control plane */
void e2b_cluster_create(struct e2b_api *a, struct evhttp_request *req, const char *template);
/* a call for a sandbox this host has no record of: to its owner's control plane, or 404 */
void e2b_cluster_forward(struct e2b_api *a, struct evhttp_request *req, const char *id);
/* this host's entries, merged with every other host's (takes the entries) */
void e2b_cluster_list(struct e2b_api *a, struct evhttp_request *req, struct e2b_list_entry *v,
		      size_t n, const struct e2b_page *page);
void e2b_http_tick(evutil_socket_t fd, short what, void *arg);

/* e2b-api-lockdown.c */
extern const struct seccomp_policy e2b_api_seccomp;
