/* warren-gateway: the unprivileged HTTP proxy in front of every sandbox. Shared state. */
#pragma once
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"
#include "ipc-server.h"
#include "names.h"

struct route {
	char id[SANDBOX_ID_LEN + 1];
	struct sockaddr_in sa;
	int state; /* WARREN__V1__ROUTE_STATE__* */
	char reason[256];
	uint32_t start_timeout_ms, idle_ms;
	uint64_t last_active_us;
	bool idle_reported;
	unsigned active; /* connections inside an exchange */
	bool probe_http; /* probe with an HTTP HEAD, not a bare connect (probe.c) */
	bool runtime_up;
	bool agent_api;	      /* its agent's port is open without agent_token (E2B's own) */
	char agent_token[65]; /* "" or what X-Warren-Agent-Token must equal for port 49983 */
	/* Routing across hosts (remote-routes.c): the sandbox runs on another host and sa is that
	 * host's gateway; clusterd's, never the supervisor's. A local route replaces it. */
	bool remote;
	bool lost;	      /* remote, and its host's lease lapsed: 503 at once */
	bool remote_seen;     /* remote-routes.c's mark while it applies a table */
	char host[64];	      /* remote: the owning host's name */
	struct idle_up *pool; /* proxy.c: idle keep-alive upstream connections to it */
	unsigned n_pool;
	struct route *next;
};

/* What one client may hold and for how long (options of main.c, defaults there). */
struct gateway_limits {
	unsigned header_timeout_ms;   /* a request head must be complete in this time: 408 */
	unsigned idle_timeout_ms;     /* keep-alive connection with no request: closed */
	unsigned body_timeout_ms;     /* no progress sending a body or writing either side */
	unsigned response_timeout_ms; /* upstream silent after the request: 504 */
	unsigned max_conns;	      /* client connections in all: 503 above */
	unsigned max_conns_per_ip;    /* client connections from one address: 503 above */
	unsigned max_response_head;   /* bytes of an upstream response head: 502 above */
};

#define GATEWAY_IP_BUCKETS 256
#define GATEWAY_CLUSTER_NETS 8
#define GATEWAY_REMOTE_MAX 16384 /* remote routes in all */
#define GATEWAY_REMOTE_PER_PIECE 256
#define GATEWAY_HOP_HEADER "X-Warren-Forwarded"

struct remote_staging;

struct ip_count;
struct idle_up;
struct gateway;

/* A route's state or fields changed (state -1: it is being removed and freed after the call).
 * Registered by the layers above the table (probe.c, proxy.c): the table calls nothing else. */
typedef void (*route_listener_fn)(struct gateway *g, struct route *r);
#define ROUTE_MAX_LISTENERS 4

struct gateway {
	struct daemon_common dc;
	struct ipc_server *server;
	struct route *routes;
	route_listener_fn route_listeners[ROUTE_MAX_LISTENERS];
	unsigned n_route_listeners;
	const char *domain;
	struct conn *conns;
	struct event *idle_timer;
	struct gateway_limits lim;
	unsigned n_conns;
	struct ip_count *per_ip[GATEWAY_IP_BUCKETS];
	struct evconnlistener *listener;
	bool accept_paused; /* out of fds: resumed when a connection closes or by resume_timer */
	struct event *resume_timer;
	uint64_t refused, last_refusal_log_us;
	/* Restart without loss: routes are the supervisor's to give. Until a connected supervisor
	 * has pushed them all (its second Status poll comes after its pushes), and whenever it is
	 * gone, an unknown sandbox is answered 503 with Retry-After, never 404: it may well
	 * exist. */
	unsigned status_seen;
	struct gateway_metrics *metrics; /* NULL: no metrics port */
	/* Routing across hosts, off unless --cluster-socket was given: clusterd's socket (its own
	 * dispatch table), the networks and port a remote route may point at, the hop token that
	 * marks a proxied request, the table being received. */
	struct ipc_server *cluster_server;
	struct {
		uint32_t net, mask; /* network byte order */
	} cluster_nets[GATEWAY_CLUSTER_NETS];
	unsigned n_cluster_nets;
	uint16_t cluster_port;
	char hop_token[65];
	struct remote_staging *staging;
};
/* true once the supervisor's routes are all in (see status_seen) */
static inline bool
gateway_routes_synced(const struct gateway *g)
{
	return g->status_seen >= 2;
}

/* routes.c */
struct route *route_find(struct gateway *g, const char *id);
struct route *route_set(struct gateway *g, const char *id);
void route_remove(struct gateway *g, struct route *r);
unsigned route_count(struct gateway *g);
void route_mark_active(struct route *r);
void route_set_reason(struct route *r, const char *reason);
/* agent_token as pushed: "" or 32-64 characters [0-9a-f]; -EINVAL otherwise */
int route_agent_token_valid(const char *t);
/* Constant-time: does value (not NUL-terminated) equal the route's non-empty agent token? */
bool route_agent_token_matches(const struct route *r, const char *value, size_t len);
/* The route changed: every listener hears of it, in the order they registered. */
void route_changed(struct gateway *g, struct route *r);
int route_listen(struct gateway *g, route_listener_fn fn);

/* remote-routes.c: the routes clusterd gives (routing across hosts, docs/MULTIHOST.md) */
/* --cluster-net: "A.B.C.D/N[,...]" */
int remote_nets_parse(struct gateway *g, const char *list);
/* Is ADDRESS:port a target a remote route may have (in --cluster-net, on --cluster-port)? */
bool remote_target_ok(const struct gateway *g, const char *address, uint32_t port,
		      struct sockaddr_in *sa);
/* One piece of a table (ids and host names validated by the caller; a route whose target is
 * not remote_target_ok is left out and logged); at its last piece the table replaces the
 * remote routes. 0, or -E2BIG (too many routes: the table is dropped), -ENOMEM. */
int remote_routes_piece(struct gateway *g, uint64_t generation, const char *hop_token,
			const Warren__V1__RemoteRoute *const *routes, size_t n, bool last);
/* clusterd hung up (the cluster socket's on_peer_gone): a table half received is dropped */
void remote_routes_peer_gone(void *ud, uint64_t peer_serial);
/* Constant-time: does value equal this cluster's hop token (never when none was given)? */
bool remote_hop_matches(const struct gateway *g, const char *value, size_t len);
unsigned remote_count(struct gateway *g);

/* probe.c: TCP readiness probes of starting routes (closed with RST); its listener keeps a
 * probe per route (its state the prober's own) and probes while the route is starting. */
void probe_route_changed(struct gateway *g, struct route *r);

/* proxy.c */
int proxy_listen(struct gateway *g, const char *address, unsigned port);
/* its listener: held requests retry now, or learn their sandbox is gone */
void proxy_route_changed(struct gateway *g, struct route *r);
void proxy_idle_scan_start(struct gateway *g);

/* metrics.c: the Prometheus endpoint (its own port) and the counters behind it */
int metrics_listen(struct gateway *g, const char *address, unsigned port);
void metrics_count_response(struct gateway *g, int status);
void metrics_observe_upstream(struct gateway *g, uint64_t usec);
int metrics_handle_push(struct ipc_call *call, void *ud);

/* gateway-dispatch.c: the supervisor's table, and clusterd's (on its own socket) */
extern const struct ipc_handler gateway_handlers[];
extern const unsigned gateway_n_handlers;
extern const struct ipc_handler gateway_cluster_handlers[];
extern const unsigned gateway_n_cluster_handlers;

/* gateway-events.c: events to the supervisor (RouteReady, RouteIdle, ThawNeeded) */
void gateway_emit(struct gateway *g, int kind, const char *id);

/* gateway-lockdown.c */
extern const struct seccomp_policy gateway_seccomp;
