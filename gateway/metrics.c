/* The metrics endpoint, served by the gateway (the one Warren process that may listen on TCP;
 * the supervisor's seccomp allows AF_UNIX only). `GET /metrics` on --metrics-port (127.0.0.1
 * by default) answers Prometheus text: the gateway's own counters (requests by status code,
 * upstream latency, connections, routes by state) and the supervisor's part, asked for on each
 * scrape with a MetricsNeeded event and pushed back in PushMetrics pieces. A supervisor that
 * is not connected or does not answer within METRICS_WAIT_MS leaves its part out and
 * warren_supervisor_scrape_ok at 0: the scrape is never held for long. The listener is its
 * own, so the metrics are not reachable through the sandbox port, and it serves at most
 * METRICS_MAX_CONNS connections with small bounded requests. Runs in warren-gateway. */
#include "clock.h"
#include "gateway.h"
#include "log.h"
#include "macro.h"
#include "prom.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define METRICS_MAX_CONNS 8
#define METRICS_HEAD_MAX 4096
#define METRICS_WAIT_MS 2000	    /* for the supervisor's part */
#define METRICS_IO_TIMEOUT_MS 5000  /* a scraper that sends no request or reads nothing */
#define METRICS_PUSH_MAX (8u << 20) /* the supervisor's part, at most */

struct mconn {
	struct gateway_metrics *m;
	struct bufferevent *bev;
	bool waiting; /* for the supervisor's part */
	bool answered;
	struct mconn *next;
};

struct gateway_metrics {
	struct gateway *g;
	struct evconnlistener *listener;
	struct mconn *conns;
	unsigned n_conns;
	uint64_t requests[600]; /* by status code sent to clients, 100-599 */
	uint64_t requests_other;
	struct prom_hist upstream;
	uint64_t scrapes, supervisor_timeouts;
	/* the supervisor's part being received, for seq */
	uint64_t seq;
	bool pending; /* a MetricsNeeded is out for seq */
	struct prom_buf push;
	struct event *timer;
};

void
metrics_count_response(struct gateway *g, int status)
{
	struct gateway_metrics *m = g->metrics;
	if (!m)
		return;
	if (status >= 100 && status < 600)
		m->requests[status]++;
	else
		m->requests_other++;
}

void
metrics_observe_upstream(struct gateway *g, uint64_t usec)
{
	if (g->metrics)
		prom_hist_observe(&g->metrics->upstream, usec);
}

static void
mconn_free(struct mconn *c)
{
	struct gateway_metrics *m = c->m;
	for (struct mconn **pp = &m->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	m->n_conns--;
	bufferevent_free(c->bev);
	free(c);
}

static void
mconn_written(struct bufferevent *bev, void *arg)
{
	struct mconn *c = arg;
	if (c->answered && !evbuffer_get_length(bufferevent_get_output(bev)))
		mconn_free(c);
}

static void
mconn_reply(struct mconn *c, int status, const char *type, const char *body, size_t len)
{
	const char *text = status == 200 ? "OK" : status == 404 ? "Not Found" : "Bad Request";
	struct evbuffer *out = bufferevent_get_output(c->bev);
	evbuffer_add_printf(out,
			    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			    "Connection: close\r\n\r\n",
			    status, text, type, len);
	evbuffer_add(out, body, len);
	c->answered = true;
	c->waiting = false;
	bufferevent_disable(c->bev, EV_READ);
	bufferevent_enable(c->bev, EV_WRITE);
}

static void
route_states(struct gateway *g, unsigned counts[4])
{
	memset(counts, 0, 4 * sizeof counts[0]);
	for (struct route *r = g->routes; r; r = r->next)
		if (r->state >= 0 && r->state < 4 && !r->remote)
			counts[r->state]++;
}

/* The gateway's own part, then the supervisor's (when it came). */
static void
metrics_render(struct gateway_metrics *m, struct prom_buf *b, bool supervisor_ok)
{
	struct gateway *g = m->g;
	prom_header(b, "warren_gateway_requests_total", "counter",
		    "HTTP responses the gateway sent to clients, by status code (its own errors "
		    "and the sandboxes' answers).");
	for (int code = 100; code < 600; code++)
		if (m->requests[code]) {
			char labels[32];
			snprintf(labels, sizeof labels, "code=\"%d\"", code);
			prom_sample_u64(b, "warren_gateway_requests_total", labels,
					m->requests[code]);
		}
	prom_header(b, "warren_gateway_upstream_latency_seconds", "histogram",
		    "From sending a request to a sandbox to the head of its final answer.");
	prom_hist_write(b, "warren_gateway_upstream_latency_seconds", "", &m->upstream);
	prom_header(b, "warren_gateway_connections", "gauge", "Open client connections.");
	prom_sample_u64(b, "warren_gateway_connections", "", g->n_conns);
	prom_header(b, "warren_gateway_connections_refused_total", "counter",
		    "Client connections refused at accept (connection caps).");
	prom_sample_u64(b, "warren_gateway_connections_refused_total", "", g->refused);
	static const char *const names[4] = {"starting", "running", "frozen", "failed"};
	unsigned counts[4];
	route_states(g, counts);
	prom_header(b, "warren_gateway_routes", "gauge", "Routes the gateway holds, by state.");
	for (int i = 0; i < 4; i++) {
		char labels[32];
		snprintf(labels, sizeof labels, "state=\"%s\"", names[i]);
		prom_sample_u64(b, "warren_gateway_routes", labels, counts[i]);
	}
	prom_header(b, "warren_metrics_scrapes_total", "counter", "Scrapes of this endpoint.");
	prom_sample_u64(b, "warren_metrics_scrapes_total", "", m->scrapes);
	prom_header(b, "warren_supervisor_scrape_ok", "gauge",
		    "1 when the supervisor's part of this scrape came in time.");
	prom_sample_u64(b, "warren_supervisor_scrape_ok", "", supervisor_ok);
	prom_header(b, "warren_supervisor_scrape_timeouts_total", "counter",
		    "Scrapes answered without the supervisor's part.");
	prom_sample_u64(b, "warren_supervisor_scrape_timeouts_total", "", m->supervisor_timeouts);
	if (supervisor_ok)
		prom_append(b, m->push.data, m->push.len);
}

/* Answer every scrape waiting for the supervisor, with its part or without. */
static void
metrics_answer_waiting(struct gateway_metrics *m, bool supervisor_ok)
{
	struct prom_buf b = {0};
	metrics_render(m, &b, supervisor_ok);
	for (struct mconn *c = m->conns; c; c = c->next)
		if (c->waiting) {
			if (b.failed)
				mconn_reply(c, 500, "text/plain", "out of memory\n", 14);
			else
				mconn_reply(c, 200, "text/plain; version=0.0.4; charset=utf-8",
					    b.data, b.len);
		}
	prom_buf_free(&b);
	m->pending = false;
	prom_buf_free(&m->push);
	m->push.failed = false;
	evtimer_del(m->timer);
}

static void
metrics_wait_over(evutil_socket_t fd, short what, void *arg)
{
	struct gateway_metrics *m = arg;
	m->supervisor_timeouts++;
	log_warning("Metrics: the supervisor did not send its part within %d ms", METRICS_WAIT_MS);
	metrics_answer_waiting(m, false);
}

static void
metrics_scrape(struct mconn *c)
{
	struct gateway_metrics *m = c->m;
	m->scrapes++;
	c->waiting = true;
	if (m->pending)
		return; /* answered with the part already asked for */
	m->pending = true;
	m->seq++;
	prom_buf_free(&m->push);
	m->push = (struct prom_buf){.max = METRICS_PUSH_MAX};
	IpcResponse ev = WARREN__V1__RESPONSE__INIT;
	Warren__V1__MetricsNeededEvent need = WARREN__V1__METRICS_NEEDED_EVENT__INIT;
	need.seq = m->seq;
	ev.body_case = WARREN__V1__RESPONSE__BODY_METRICS_NEEDED;
	ev.metrics_needed = &need;
	ipc_server_broadcast(m->g->server, &ev);
	struct timeval tv = {METRICS_WAIT_MS / 1000, (METRICS_WAIT_MS % 1000) * 1000};
	evtimer_add(m->timer, &tv);
}

static void
mconn_read(struct bufferevent *bev, void *arg)
{
	struct mconn *c = arg;
	if (c->answered || c->waiting)
		return;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (end.pos < 0) {
		if (evbuffer_get_length(in) > METRICS_HEAD_MAX)
			mconn_reply(c, 400, "text/plain", "request too large\n", 18);
		return;
	}
	char line[128] = "";
	size_t n = evbuffer_get_length(in);
	const char *p = (const char *)evbuffer_pullup(in, (ssize_t)(n < 127 ? n : 127));
	size_t i = 0;
	while (i < 127 && i < n && p[i] != '\r') {
		line[i] = p[i];
		i++;
	}
	line[i] = 0;
	evbuffer_drain(in, n);
	if (!strcmp(line, "GET /metrics HTTP/1.1") || !strcmp(line, "GET /metrics HTTP/1.0"))
		metrics_scrape(c);
	else if (!strncmp(line, "GET ", 4))
		mconn_reply(c, 404, "text/plain", "only /metrics here\n", 19);
	else
		mconn_reply(c, 400, "text/plain", "GET /metrics only\n", 18);
}

static void
mconn_event(struct bufferevent *bev, short what, void *arg)
{
	mconn_free(arg);
}

static void
metrics_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
	       void *arg)
{
	struct gateway_metrics *m = arg;
	if (m->n_conns >= METRICS_MAX_CONNS) {
		close(fd);
		return;
	}
	struct mconn *c = calloc(1, sizeof *c);
	if (!c) {
		close(fd);
		return;
	}
	c->m = m;
	c->bev = bufferevent_socket_new(m->g->dc.base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev) {
		close(fd);
		free(c);
		return;
	}
	c->next = m->conns;
	m->conns = c;
	m->n_conns++;
	struct timeval tv = {METRICS_IO_TIMEOUT_MS / 1000, 0};
	bufferevent_set_timeouts(c->bev, &tv, &tv);
	bufferevent_setcb(c->bev, mconn_read, mconn_written, mconn_event, c);
	bufferevent_enable(c->bev, EV_READ);
}

int
metrics_listen(struct gateway *g, const char *address, unsigned port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, address, &sa.sin_addr) != 1)
		return log_error_errno(-EINVAL, "Bad --metrics-listen %s", address);
	struct gateway_metrics *m = calloc(1, sizeof *m);
	if (!m)
		return -ENOMEM;
	m->g = g;
	m->timer = evtimer_new(g->dc.base, metrics_wait_over, m);
	m->listener = evconnlistener_new_bind(g->dc.base, metrics_accept, m,
					      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
					      (struct sockaddr *)&sa, sizeof sa);
	if (!m->listener || !m->timer) {
		int r = log_error_errno(-errno, "Cannot listen for metrics on %s:%u: %m", address,
					port);
		if (m->timer)
			event_free(m->timer);
		free(m);
		return r;
	}
	g->metrics = m;
	return 0;
}

/* From the supervisor: a piece of its part for the scrape seq. A piece for an older scrape
 * (answered already without it) is dropped. */
int
metrics_handle_push(struct ipc_call *call, void *ud)
{
	struct gateway *g = ud;
	struct gateway_metrics *m = g->metrics;
	const Warren__V1__PushMetricsRequest *q = call->req->push_metrics;
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	if (!m)
		return ipc_call_error(call, -EOPNOTSUPP, "no metrics port");
	if (!m->pending || q->seq != m->seq)
		return ipc_call_reply(call, &resp, NULL, 0);
	prom_append(&m->push, q->text.data, q->text.len);
	if (m->push.failed) {
		log_warning("Metrics: the supervisor's part is over %u bytes: left out",
			    METRICS_PUSH_MAX);
		metrics_answer_waiting(m, false);
		return ipc_call_error(call, -EMSGSIZE, "metrics text too large");
	}
	if (q->last)
		metrics_answer_waiting(m, true);
	return ipc_call_reply(call, &resp, NULL, 0);
}
