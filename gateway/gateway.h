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
	struct event *probe_ev, *probe_timer;
	int probe_fd;
	unsigned probe_timeout_ms;
	bool probe_http;
	bool runtime_up;
	unsigned http_timeout_ms; /* probe_http: how long a probe waits for the answer */
	uint64_t probe_started_us;
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
	unsigned max_conns;           /* client connections in all: 503 above */
	unsigned max_conns_per_ip;    /* client connections from one address: 503 above */
	unsigned max_response_head;   /* bytes of an upstream response head: 502 above */
};

#define GATEWAY_IP_BUCKETS 256
/* the sandbox agent's envd API port (agent/envd-proto.h), reachable by E2B's routing headers */
#define GATEWAY_AGENT_PORT 49983

struct ip_count;
struct idle_up;

struct gateway {
	struct daemon_common dc;
	struct ipc_server *server;
	struct route *routes;
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
/* The state changed: held requests retry now, probing starts or stops. */
void route_changed(struct gateway *g, struct route *r);

/* probe.c: TCP readiness probes of starting routes (closed with RST). */
void probe_start(struct gateway *g, struct route *r);
void probe_stop(struct route *r);

/* proxy.c */
int proxy_listen(struct gateway *g, const char *address, unsigned port);
void proxy_route_changed(struct gateway *g, struct route *r);
void proxy_idle_scan_start(struct gateway *g);

/* metrics.c: the Prometheus endpoint (its own port) and the counters behind it */
int metrics_listen(struct gateway *g, const char *address, unsigned port);
void metrics_count_response(struct gateway *g, int status);
void metrics_observe_upstream(struct gateway *g, uint64_t usec);
int metrics_handle_push(struct ipc_call *call, void *ud);

/* gateway-dispatch.c */
extern const struct ipc_handler gateway_handlers[];
extern const unsigned gateway_n_handlers;
void gateway_emit(struct gateway *g, int kind, const char *id);

/* gateway-lockdown.c */
extern const struct seccomp_policy gateway_seccomp;
