/* Readiness probes (gateway): a starting sandbox is probed, once its runtime runs (runsc returned,
 * the VMM started), with a TCP connect every 10 ms for 3 s and every 50 ms after that; the
 * first accepted connection is closed with RST (no TIME_WAIT is left inside the sandbox, which
 * would make a later runsc checkpoint fail) and the supervisor gets RouteReady. A microVM's port
 * is its VMM's forwarder, which accepts before the guest listens: there the probe sends a HEAD
 * request and waits for an HTTP answer (probe_http). The probe's state is the prober's, one
 * per route, kept by listening to the route table. Runs in warren-gateway. */
#include "gateway.h"
#include "clock.h"
#include "log.h"
#include "macro.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Probe often while a sandbox is young (a refused connect costs microseconds), then every 50 ms. */
#define PROBE_FAST_US 10000
#define PROBE_FAST_FOR_US 3000000
#define PROBE_INTERVAL_US 50000

/* Probes in all, per second, at most 1 s / PROBE_SHARE_US: each costs the gateway ~6 system
 * calls and the sandbox's netstack a SYN, so 100 children of a fork probed every 10 ms (10,000
 * probes a second) took CPU from the restores they were waiting for. With few sandboxes
 * starting, each is still probed every 10 ms. */
#define PROBE_SHARE_US 500
static unsigned n_probing; /* routes with a probe timer */

/* A route's probe: the prober's own state, kept beside the route table (gateway/LAYERS). */
struct probe {
	struct route *r;
	struct event *ev, *timer;
	int fd;
	unsigned timeout_ms;
	unsigned http_timeout_ms; /* probe_http: how long a probe waits for the answer */
	uint64_t started_us;
	bool runtime_up; /* as last heard: its coming up restarts the probe's clock */
	struct probe *next;
};
static struct probe *probes;

static struct timeval
probe_interval(struct probe *p)
{
	bool young = now_usec() - p->started_us < PROBE_FAST_FOR_US;
	uint64_t us = young ? PROBE_FAST_US : PROBE_INTERVAL_US;
	if ((uint64_t)n_probing * PROBE_SHARE_US > us)
		us = (uint64_t)n_probing * PROBE_SHARE_US;
	return (struct timeval){(time_t)(us / 1000000), (suseconds_t)(us % 1000000)};
}

static void probe_try(evutil_socket_t fd, short what, void *arg);

static void
close_rst(int fd)
{
	struct linger l = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
	close(fd);
}

static struct gateway *probe_gateway;

static void probe_ready(struct probe *p);
static void probe_http_send(struct probe *p);

static void
probe_result(evutil_socket_t fd, short what, void *arg)
{
	struct probe *p = arg;
	int err = 0;
	socklen_t len = sizeof err;
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	event_free(p->ev);
	p->ev = NULL;
	if (err == 0 && (what & EV_WRITE) && p->r->probe_http &&
	    p->r->state == WARREN__V1__ROUTE_STATE__ROUTE_STARTING) {
		probe_http_send(p); /* keeps the connection */
		return;
	}
	close_rst(p->fd);
	p->fd = -1;
	if (!(what & EV_WRITE)) {
		/* SYNs are lost while gVisor takes the interface over (a restore takes longer than
		 * a cold start): keep retrying fast while the sandbox is young, back off later. */
		bool young = now_usec() - p->started_us < PROBE_FAST_FOR_US;
		if (p->timeout_ms < (young ? 80u : 1000u))
			p->timeout_ms *= 2;
		err = ETIMEDOUT;
	}
	if (err == 0 && p->r->state == WARREN__V1__ROUTE_STATE__ROUTE_STARTING) {
		probe_ready(p);
		return;
	}
	struct timeval tv = probe_interval(p);
	evtimer_add(p->timer, &tv);
}

static void
probe_ready(struct probe *p)
{
	struct route *r = p->r;
	r->state = WARREN__V1__ROUTE_STATE__ROUTE_RUNNING;
	route_mark_active(r);
	log_info("Sandbox %s answers", r->id);
	gateway_emit(probe_gateway, WARREN__V1__RESPONSE__BODY_ROUTE_READY, r->id);
	route_changed(probe_gateway, r);
}

static void
probe_http_result(evutil_socket_t fd, short what, void *arg)
{
	struct probe *p = arg;
	char buf[16];
	ssize_t k = (what & EV_READ) ? recv(fd, buf, sizeof buf, 0) : -1;
	event_free(p->ev);
	p->ev = NULL;
	close_rst(p->fd);
	p->fd = -1;
	if (!(what & EV_READ) && p->http_timeout_ms < 1000)
		p->http_timeout_ms = p->http_timeout_ms * 2 > 1000 ? 1000 : p->http_timeout_ms * 2;
	if (k >= 5 && !memcmp(buf, "HTTP/", 5) &&
	    p->r->state == WARREN__V1__ROUTE_STATE__ROUTE_STARTING) {
		probe_ready(p);
		return;
	}
	struct timeval tv = probe_interval(p);
	evtimer_add(p->timer, &tv);
}

/* The connection is up; is an app behind it? (The forwarder closes it if none listens.) */
static void
probe_http_send(struct probe *p)
{
	static const char req[] = "HEAD / HTTP/1.0\r\nUser-Agent: warren-probe\r\n\r\n";
	if (send(p->fd, req, sizeof req - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof req - 1)) {
		close_rst(p->fd);
		p->fd = -1;
		struct timeval tv = probe_interval(p);
		evtimer_add(p->timer, &tv);
		return;
	}
	p->ev = event_new(event_get_base(p->timer), p->fd, EV_READ, probe_http_result, p);
	/* A guest that is booting or was just restored can drop the forwarded connection, and the
	 * forwarder's retransmit would come after 1 s: give up after 200 ms and probe again on a
	 * new connection. Each unanswered probe doubles the wait (up to 1 s), so guests slowed
	 * down by many others starting at once still get to answer. */
	if (!p->http_timeout_ms)
		p->http_timeout_ms = 200;
	struct timeval tv = {p->http_timeout_ms / 1000, (p->http_timeout_ms % 1000) * 1000};
	event_add(p->ev, &tv);
}

static void
probe_try(evutil_socket_t unused, short what, void *arg)
{
	struct probe *p = arg;
	if (p->r->state != WARREN__V1__ROUTE_STATE__ROUTE_STARTING || p->fd >= 0)
		return;
	if (!p->r->runtime_up)
		return; /* nothing can answer before its runtime runs: SetRoute with runtime_up
			 * starts the probe (100 children restoring at once were probed 10k times a
			 * second for nothing) */
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || (connect(fd, (struct sockaddr *)&p->r->sa, sizeof p->r->sa) < 0 &&
		       errno != EINPROGRESS)) {
		/* out of fds (EMFILE) is passing too: probe again, or the sandbox would never be
		 * seen ready */
		if (fd >= 0)
			close(fd);
		struct timeval tv = probe_interval(p);
		evtimer_add(p->timer, &tv);
		return;
	}
	p->fd = fd;
	p->ev = event_new(event_get_base(p->timer), fd, EV_WRITE, probe_result, p);
	/* While gVisor takes the interface over, a SYN can be lost and the kernel would retry it
	 * only after 1 s. Give up on a probe after 20 ms (doubling while the machine is slow, up
	 * to 1 s) and send a fresh SYN instead. */
	struct timeval tv = {0, (suseconds_t)p->timeout_ms * 1000};
	if (p->timeout_ms >= 1000)
		tv = (struct timeval){1, 0};
	event_add(p->ev, &tv);
}

static void
probe_start(struct gateway *g, struct probe *p)
{
	probe_gateway = g;
	if (!p->timeout_ms)
		p->timeout_ms = 20;
	if (!p->started_us)
		p->started_us = now_usec();
	if (!p->timer) {
		p->timer = evtimer_new(g->dc.base, probe_try, p);
		if (p->timer)
			n_probing++;
	}
	if (p->fd < 0 && !evtimer_pending(p->timer, NULL)) {
		struct timeval tv = {0, 0};
		evtimer_add(p->timer, &tv);
	}
}

static void
probe_stop(struct probe *p)
{
	if (p->ev) {
		event_free(p->ev);
		p->ev = NULL;
	}
	if (p->fd >= 0) {
		close_rst(p->fd);
		p->fd = -1;
	}
	if (p->timer) {
		event_free(p->timer);
		p->timer = NULL;
		n_probing--;
	}
}

static struct probe *
probe_find(struct route *r)
{
	for (struct probe *p = probes; p; p = p->next)
		if (p->r == r)
			return p;
	return NULL;
}

/* The route table's listener: a probe per route for as long as the route lives (its timeouts
 * and age outlive a stop, as they did inside the route), probing while the route is starting. */
void
probe_route_changed(struct gateway *g, struct route *r)
{
	struct probe *p = probe_find(r);
	if (r->remote && r->state != -1)
		return;	      /* another host's gateway: that one probes its sandbox */
	if (r->state == -1) { /* removed: freed after this call */
		if (!p)
			return;
		probe_stop(p);
		for (struct probe **pp = &probes; *pp; pp = &(*pp)->next)
			if (*pp == p) {
				*pp = p->next;
				break;
			}
		free(p);
		return;
	}
	if (!p) {
		p = calloc(1, sizeof *p);
		if (!p) {
			log_error("Sandbox %s: out of memory for its readiness probe", r->id);
			return;
		}
		p->r = r;
		p->fd = -1;
		p->next = probes;
		probes = p;
	}
	if (r->runtime_up && !p->runtime_up) {
		/* probe afresh: fast timeouts, from now */
		p->http_timeout_ms = 0;
		p->started_us = 0;
	}
	p->runtime_up = r->runtime_up;
	if (r->state == WARREN__V1__ROUTE_STATE__ROUTE_STARTING)
		probe_start(g, p);
	else
		probe_stop(p);
}
