/* The gateway's HTTP/1.1 proxy. One request at a time per client connection, routed per
 * request (Host: <id>.<domain> or /s/<id>/...), keep-alive on both sides, bodies streamed with
 * back-pressure, Upgrade tunnelled. A starting sandbox is retried every 50 ms until it answers
 * or its start timeout passes (504); a frozen one is thawed on demand (the supervisor is asked)
 * and the request held meanwhile. Upstream connections are closed with RST.
 *
 * Clients and sandboxes are both untrusted: heads are parsed strictly (http-parse.c; 400 to a
 * client, 502 for a sandbox's garbage, which is never forwarded), every state a peer can hold
 * a connection in has a deadline (head, keep-alive idle, body stall, response, closing), the
 * connections per client address and in all are capped (503 above), and running out of fds
 * pauses accepting instead of spinning, so connections already accepted still reach their
 * sandboxes. */
#include "agent-protocol.h"
#include "clock.h"
#include "gateway.h"
#include "http-parse.h"
#include "log.h"
#include "macro.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <inttypes.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define RETRY_US 50000
#define HIGH_WATER (256 * 1024)
#define LOW_WATER (64 * 1024)
#define DEFAULT_HOLD_MS 30000
#define MAX_INTERIM 8		/* 1xx responses before the final one */
#define ACCEPT_RESUME_MS 250	/* retry accepting this long after running out of fds */
#define CLOSING_TIMEOUT_MS 5000 /* a client that does not read its error response */
#define REMOTE_CONNECT_MS 3000	/* another host's gateway: a LAN connect takes milliseconds */

enum conn_state { S_HEAD, S_HOLD, S_CONNECT, S_EXCHANGE, S_TUNNEL, S_CLOSING };
/* What the connection's timer waits for. */
enum conn_wait { W_NONE, W_HEAD, W_IDLE, W_CLOSING };

struct ip_count {
	uint32_t addr;
	unsigned n;
	struct ip_count *next;
};

struct conn {
	struct gateway *g;
	struct bufferevent *client, *up;
	enum conn_state state;
	char route_id[SANDBOX_ID_LEN + 1]; /* the route of the exchange (and of up) */
	uint16_t port; /* E2b-Sandbox-Port of the exchange (and of up); 0: the route's own */
	char *head;    /* rewritten request head waiting for upstream */
	size_t head_len;
	bool head_is_head_method, req_keep_alive, req_upgrade;
	enum http_body req_body;
	uint64_t req_remaining;
	struct http_chunked req_chunk;
	bool req_done;
	bool resp_started;
	enum http_body resp_body;
	uint64_t resp_remaining;
	struct http_chunked resp_chunk;
	bool resp_keep_alive;
	uint64_t hold_deadline_us;
	bool thaw_asked;
	uint64_t sent_us;  /* the request head went upstream (metrics: upstream latency) */
	bool reused;	   /* the upstream carried an earlier exchange */
	bool up_idle;	   /* up is between exchanges, clean: it may serve another client */
	bool nodelay;	   /* TCP_NODELAY set on the client socket */
	bool was_starting; /* the sandbox was starting when the request came: keep retrying */
	unsigned interim;  /* 1xx responses seen in this exchange */
	uint32_t addr;	   /* the client's, for the per-address count */
	size_t scanned;	   /* bytes of an incomplete head already looked at */
	enum conn_wait wait;
	struct event *timer;
	struct event *retry;
	struct conn *next, *prev;
};

static void client_read(struct bufferevent *bev, void *arg);
static void up_read(struct bufferevent *bev, void *arg);
static void up_event(struct bufferevent *bev, short what, void *arg);
static void try_upstream(struct conn *c);
static void accept_resume(struct gateway *g);

static struct timeval
ms_tv(unsigned ms)
{
	return (struct timeval){ms / 1000, (ms % 1000) * 1000};
}

static void
conn_wait(struct conn *c, enum conn_wait w, unsigned ms)
{
	c->wait = w;
	if (w == W_NONE || !ms) {
		evtimer_del(c->timer);
		return;
	}
	struct timeval tv = ms_tv(ms);
	evtimer_add(c->timer, &tv);
}

/* Read and write timeouts of a bufferevent; 0 = none. */
static void
bev_timeouts(struct bufferevent *bev, unsigned read_ms, unsigned write_ms)
{
	struct timeval r = ms_tv(read_ms), w = ms_tv(write_ms);
	bufferevent_set_timeouts(bev, read_ms ? &r : NULL, write_ms ? &w : NULL);
}

/* A bufferevent reads and writes in 16 KiB steps: a 1 MiB body took 64 reads and 64 writes. */
#define MAX_SINGLE_IO (256 * 1024)

/* Sockets are written through: bytes added to an output buffer are written at once (one writev)
 * and EV_WRITE is enabled only while some are left, so the common exchange (a head each way,
 * a small body) costs no epoll_ctl and no extra loop turn; a bufferevent left to itself adds
 * and removes its write event around every write (two epoll_ctl and a loop turn per write).
 * bev_new (accepted sockets) and up_event (once connected) disable EV_WRITE; what a write
 * leaves is written by libevent, which calls the write callback (resume_reader), and that
 * disables EV_WRITE again once the output is empty. Errors are left to libevent too: its own
 * write then reports them through the event callback, as before. */
static void
flush_now(struct bufferevent *bev)
{
	if (!bev)
		return;
	struct evbuffer *out = bufferevent_get_output(bev);
	if (!evbuffer_get_length(out) || (bufferevent_get_enabled(bev) & EV_WRITE))
		return;
	int fd = bufferevent_getfd(bev);
	if (fd >= 0) {
		/* a socket bufferevent keeps its output's start frozen outside its own callbacks */
		bool frozen = evbuffer_unfreeze(out, 1) == 0;
		(void)evbuffer_write_atmost(out, fd, MAX_SINGLE_IO);
		if (frozen)
			evbuffer_freeze(out, 1);
	}
	if (evbuffer_get_length(out))
		bufferevent_enable(bev, EV_WRITE);
}

/* libevent 2.1 reads a socket 4 KiB at a time (EVBUFFER_MAX_READ, whatever the bufferevent's
 * max single read), one FIONREAD ioctl and one readv each: 512 system calls for a 1 MiB body.
 * After a read that filled those 4 KiB, the read callbacks read on here into the input buffer,
 * up to `limit` bytes buffered. A read that finds nothing, the end or an error leaves it to
 * libevent's next read, which reports it through the event callback as before. */
#define LIBEVENT_READ 4096

static void
read_more(struct bufferevent *bev, size_t limit)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t have = evbuffer_get_length(in);
	int fd = bufferevent_getfd(bev);
	if (have < LIBEVENT_READ || have >= limit || fd < 0 ||
	    !(bufferevent_get_enabled(bev) & EV_READ))
		return;
	size_t want = limit - have < MAX_SINGLE_IO ? limit - have : MAX_SINGLE_IO;
	/* a socket bufferevent keeps its input's end frozen outside its own callbacks */
	bool frozen = evbuffer_unfreeze(in, 0) == 0;
	struct evbuffer_iovec v[2];
	int n = evbuffer_reserve_space(in, (ev_ssize_t)want, v, 2);
	if (n > 0) {
		struct iovec iov[2];
		for (int i = 0; i < n; i++)
			iov[i] = (struct iovec){v[i].iov_base, v[i].iov_len};
		ssize_t k = readv(fd, iov, n);
		size_t left = k > 0 ? (size_t)k : 0;
		for (int i = 0; i < n; i++) {
			v[i].iov_len = left < v[i].iov_len ? left : v[i].iov_len;
			left -= v[i].iov_len;
		}
		evbuffer_commit_space(in, v, n);
	}
	if (frozen)
		evbuffer_freeze(in, 0);
}

static struct bufferevent *
bev_new(struct gateway *g, int fd)
{
	struct bufferevent *bev = bufferevent_socket_new(g->dc.base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!bev)
		return NULL;
	bufferevent_set_max_single_read(bev, MAX_SINGLE_IO);
	bufferevent_set_max_single_write(bev, MAX_SINGLE_IO);
	if (fd >= 0)
		bufferevent_disable(bev, EV_WRITE); /* written through (flush_now) */
	return bev;
}

/* Nagle's algorithm holds a response's last small segment until the peer ACKs the one before,
 * and a client delays that ACK by up to 40 ms: a 1 MiB or chunked answer on a keep-alive
 * connection then took 40 ms more now and then (p99 of one connection: 89 and 45 ms, nginx's
 * 18 and 4). Set, as nginx does, once a connection carries more than one exchange: on a
 * client connection kept alive, on every upstream connection (they are reused). */
static void
set_nodelay(struct bufferevent *bev)
{
	int fd = bufferevent_getfd(bev), one = 1;
	if (fd >= 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static struct ip_count **
ip_slot(struct gateway *g, uint32_t addr)
{
	struct ip_count **pp =
		&g->per_ip[(addr ^ (addr >> 8) ^ (addr >> 16) ^ (addr >> 24)) % GATEWAY_IP_BUCKETS];
	while (*pp && (*pp)->addr != addr)
		pp = &(*pp)->next;
	return pp;
}

static void
close_upstream(struct conn *c)
{
	if (!c->up)
		return;
	int fd = bufferevent_getfd(c->up);
	if (fd >= 0) {
		struct linger l = {1, 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
	}
	bufferevent_free(c->up);
	c->up = NULL;
	c->up_idle = false;
}

/* Idle upstream connections outlive their client, as nginx's `upstream { keepalive; }`: a
 * client that closes (or asked for `Connection: close`) leaves a clean keep-alive upstream
 * connection to its sandbox here, and the next request to that sandbox without an upstream of
 * its own takes it instead of connecting (a connect, a handshake through the slot's veth and an
 * RST close per request otherwise). Bounded per sandbox and in all; an idle one is closed (RST,
 * as every upstream) when the sandbox says anything or closes, after POOL_IDLE_MS, and on any
 * route change: a sandbox about to be frozen or checkpointed must have no open connection. */
#define POOL_PER_ROUTE 64
#define POOL_MAX 1024
#define POOL_IDLE_MS 30000

struct idle_up {
	struct route *r;
	struct bufferevent *bev;
	struct idle_up *next, *prev;
};
static unsigned pool_total;

static void
pool_drop(struct idle_up *u)
{
	if (u->prev)
		u->prev->next = u->next;
	else
		u->r->pool = u->next;
	if (u->next)
		u->next->prev = u->prev;
	u->r->n_pool--;
	pool_total--;
	int fd = bufferevent_getfd(u->bev);
	if (fd >= 0) {
		struct linger l = {1, 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
	}
	bufferevent_free(u->bev);
	free(u);
}

static void
pool_read(struct bufferevent *bev, void *arg)
{
	pool_drop(arg); /* an idle upstream has nothing to say */
}

static void
pool_event(struct bufferevent *bev, short what, void *arg)
{
	pool_drop(arg); /* closed, failed or idle too long */
}

static void
pool_flush(struct route *r)
{
	while (r->pool)
		pool_drop(r->pool);
}

/* Keep c's upstream for the next client of its sandbox; false: the caller closes it. */
static bool
pool_park(struct conn *c)
{
	/* only connections to the route's own port: one named by E2B's headers (the agent's) is
	 * never handed to a client of the template's port */
	struct route *r = c->up_idle && !c->port ? route_find(c->g, c->route_id) : NULL;
	if (!r || r->state != WARREN__V1__ROUTE_STATE__ROUTE_RUNNING ||
	    r->n_pool >= POOL_PER_ROUTE || pool_total >= POOL_MAX ||
	    evbuffer_get_length(bufferevent_get_input(c->up)) ||
	    evbuffer_get_length(bufferevent_get_output(c->up)))
		return false;
	struct idle_up *u = calloc(1, sizeof *u);
	if (!u)
		return false;
	u->r = r;
	u->bev = c->up;
	u->next = r->pool;
	if (r->pool)
		r->pool->prev = u;
	r->pool = u;
	r->n_pool++;
	pool_total++;
	bufferevent_setcb(u->bev, pool_read, NULL, pool_event, u);
	bufferevent_enable(u->bev, EV_READ); /* back-pressure may have paused it: hear a close */
	bev_timeouts(u->bev, POOL_IDLE_MS, 0);
	c->up = NULL;
	c->up_idle = false;
	return true;
}

/* An idle upstream to r left by another client, or NULL. */
static struct bufferevent *
pool_take(struct route *r)
{
	struct idle_up *u = r->pool;
	if (!u)
		return NULL;
	struct bufferevent *bev = u->bev;
	r->pool = u->next;
	if (r->pool)
		r->pool->prev = NULL;
	r->n_pool--;
	pool_total--;
	free(u);
	return bev;
}

/* Done with c's upstream: to the pool when it is clean, else closed. */
static void
release_upstream(struct conn *c)
{
	if (c->up && !pool_park(c))
		close_upstream(c);
}

static void
exchange_end(struct conn *c)
{
	if (c->state == S_EXCHANGE || c->state == S_TUNNEL || c->state == S_HOLD ||
	    c->state == S_CONNECT) {
		struct route *r = route_find(c->g, c->route_id);
		if (r) {
			if (r->active)
				r->active--;
			route_mark_active(r);
		}
	}
}

static void
conn_free(struct conn *c)
{
	struct gateway *g = c->g;
	exchange_end(c);
	struct ip_count **pp = ip_slot(g, c->addr), *ic = *pp;
	if (ic && !--ic->n) {
		*pp = ic->next;
		free(ic);
	}
	g->n_conns--;
	if (c->prev)
		c->prev->next = c->next;
	else
		c->g->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	release_upstream(c);
	if (c->client)
		bufferevent_free(c->client);
	if (c->retry)
		event_free(c->retry);
	if (c->timer)
		event_free(c->timer);
	free(c->head);
	free(c);
	if (g->accept_paused)
		accept_resume(g); /* fds were freed */
}

static void
closing_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	flush_now(bev);
	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		conn_free(c);
}

static void
closing_read(struct bufferevent *bev, void *arg)
{
	/* discard: closing with unread bytes would send RST, which can destroy the answer
	 * before the client reads it */
	evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
}

static void
closing_event(struct bufferevent *bev, short what, void *arg)
{
	/* a client that half-closed after its request still gets the answer */
	if ((what & BEV_EVENT_EOF) && evbuffer_get_length(bufferevent_get_output(bev)))
		return;
	conn_free(arg);
}

/* Read nothing more; free the connection once what is queued has been written (or the client
 * has not read it in CLOSING_TIMEOUT_MS). */
static void
close_after_flush(struct conn *c)
{
	exchange_end(c);
	c->state = S_CLOSING;
	release_upstream(c);
	closing_read(c->client, c);
	bufferevent_setwatermark(c->client, EV_READ, 0, 0);
	bufferevent_setwatermark(c->client, EV_WRITE, 0, 0);
	bufferevent_setcb(c->client, closing_read, closing_write, closing_event, c);
	bufferevent_enable(c->client, EV_READ);
	bev_timeouts(c->client, 0, 0);
	conn_wait(c, W_CLOSING, CLOSING_TIMEOUT_MS);
	closing_write(c->client, c);
}

static void
send_error(struct conn *c, int status, const char *fmt, ...)
{
	static const struct {
		int code;
		const char *text;
	} texts[] = {{400, "Bad Request"},
		     {403, "Forbidden"},
		     {404, "Not Found"},
		     {408, "Request Timeout"},
		     {431, "Request Header Fields Too Large"},
		     {502, "Bad Gateway"},
		     {503, "Service Unavailable"},
		     {504, "Gateway Timeout"}};
	const char *text = "Error";
	for (size_t i = 0; i < ELEMENTSOF(texts); i++)
		if (texts[i].code == status)
			text = texts[i].text;
	char body[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(body, sizeof body - 1, fmt, ap);
	va_end(ap);
	strcat(body, "\n");
	metrics_count_response(c->g, status);
	evbuffer_add_printf(bufferevent_get_output(c->client),
			    "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
			    "Connection: close\r\nX-Warren-Error: %d\r\n%s\r\n%s",
			    status, text, strlen(body), status,
			    status == 503 ? "Retry-After: 1\r\n" : "", body);
	close_after_flush(c);
}

/* No route for id: 404 once the supervisor's routes are in, 503 + Retry-After before (a
 * restarted gateway, a supervisor away): never a wrong answer for a sandbox that exists. */
static void
send_unknown(struct conn *c, const char *id)
{
	if (gateway_routes_synced(c->g))
		send_error(c, 404, "no sandbox %s", id);
	else
		send_error(c, 503,
			   "sandbox %s is not known yet (Warren's supervisor is away or "
			   "still sending routes); retry",
			   id);
}

/* Move up to n bytes (all when n == UINT64_MAX) from src to dst, pausing src when dst is full. */
static size_t
move(struct bufferevent *src, struct bufferevent *dst, uint64_t n)
{
	struct evbuffer *in = bufferevent_get_input(src);
	size_t avail = evbuffer_get_length(in);
	size_t take = n < avail ? (size_t)n : avail;
	evbuffer_remove_buffer(in, bufferevent_get_output(dst), take);
	flush_now(dst);
	if (evbuffer_get_length(bufferevent_get_output(dst)) > HIGH_WATER)
		bufferevent_disable(src, EV_READ);
	return take;
}

/* Move a chunked body: as much as the framing says belongs to this message. */
static int
move_chunked(struct bufferevent *src, struct bufferevent *dst, struct http_chunked *ch, bool *done)
{
	struct evbuffer *in = bufferevent_get_input(src);
	*done = false;
	while (evbuffer_get_length(in) && !*done) {
		struct evbuffer_iovec v;
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		ssize_t k = http_chunked_advance(ch, v.iov_base, v.iov_len, done);
		if (k < 0)
			return (int)k;
		evbuffer_remove_buffer(in, bufferevent_get_output(dst), (size_t)k);
	}
	flush_now(dst);
	if (evbuffer_get_length(bufferevent_get_output(dst)) > HIGH_WATER)
		bufferevent_disable(src, EV_READ);
	return 0;
}

static void
resume_reader(struct bufferevent *bev, void *arg)
{
	/* dst drained below the low watermark: let its source read again */
	struct conn *c = arg;
	struct bufferevent *src = bev == c->client ? c->up : c->client;
	if (!evbuffer_get_length(bufferevent_get_output(bev)))
		bufferevent_disable(bev, EV_WRITE); /* written through again (flush_now) */
	if (src && c->state != S_CLOSING)
		bufferevent_enable(src, EV_READ);
}

/* Stall limits of an exchange: the client may be silent once its body is sent, the sandbox
 * until then (it may answer early, but its thinking time counts from the end of the request). */
static void
exchange_timeouts(struct conn *c)
{
	const struct gateway_limits *lim = &c->g->lim;
	bev_timeouts(c->client, c->req_done ? 0 : lim->body_timeout_ms, lim->body_timeout_ms);
	bev_timeouts(c->up, c->req_done ? lim->response_timeout_ms : 0, lim->body_timeout_ms);
}

static void
forward_request_body(struct conn *c)
{
	if (c->req_done || !c->up || c->state != S_EXCHANGE)
		return;
	if (c->req_body == HTTP_BODY_LENGTH) {
		c->req_remaining -= move(c->client, c->up, c->req_remaining);
		c->req_done = c->req_remaining == 0;
	} else if (c->req_body == HTTP_BODY_CHUNKED) {
		bool done;
		if (move_chunked(c->client, c->up, &c->req_chunk, &done) < 0) {
			send_error(c, 400, "bad chunked request body");
			return;
		}
		c->req_done = done;
	} else
		c->req_done = true;
	if (c->req_done && c->resp_started)
		bev_timeouts(c->client, 0, c->g->lim.body_timeout_ms); /* answered early */
	else if (c->req_done)
		exchange_timeouts(c);
}

static void
exchange_complete(struct conn *c)
{
	bool keep = c->req_keep_alive && c->resp_keep_alive && c->req_done;
	flush_now(c->client); /* a response without a body was only moved, not written */
	c->up_idle = c->resp_keep_alive && c->req_done &&
		     !evbuffer_get_length(bufferevent_get_input(c->up));
	if (!keep) {
		close_after_flush(c);
		return;
	}
	exchange_end(c);
	c->state = S_HEAD;
	if (!c->nodelay) {
		set_nodelay(c->client);
		c->nodelay = true;
	}
	if (evbuffer_get_length(bufferevent_get_input(c->up)))
		close_upstream(c); /* bytes after a complete response: never the next answer */
	else
		bev_timeouts(c->up, 0, 0);
	bev_timeouts(c->client, 0, c->g->lim.body_timeout_ms);
	bufferevent_enable(c->client, EV_READ);
	/* A pipelined request may already be buffered. */
	if (evbuffer_get_length(bufferevent_get_input(c->client))) {
		conn_wait(c, W_HEAD, c->g->lim.header_timeout_ms);
		client_read(c->client, c);
	} else
		conn_wait(c, W_IDLE, c->g->lim.idle_timeout_ms);
}

static void
forward_response(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->up);
	while (!c->resp_started) {
		size_t len = evbuffer_get_length(in);
		if (len == 0)
			return;
		size_t max = c->g->lim.max_response_head;
		size_t want = len < max ? len : max;
		const char *p = (const char *)evbuffer_pullup(in, (ssize_t)want);
		struct http_head h;
		ssize_t k = http_parse_head(p, want, false, max, &h);
		if (k == 0)
			return;
		if (k < 0 || (h.status == 101 && !c->req_upgrade) || ++c->interim > MAX_INTERIM) {
			const char *why = k == -EMSGSIZE || k == -E2BIG ? "too large"
					  : k < 0			? h.error
					  : h.status == 101 ? "an upgrade nobody asked for"
							    : "too many interim responses";
			log_warning("Sandbox %s: malformed response (%s): answering 502",
				    c->route_id, why);
			send_error(c, 502, "sandbox %s sent a malformed response", c->route_id);
			return;
		}
		if (h.status == 101 || h.status >= 200) {
			metrics_count_response(c->g, h.status);
			if (c->sent_us)
				metrics_observe_upstream(c->g, now_usec() - c->sent_us);
		}
		if (h.status == 101) {
			evbuffer_remove_buffer(in, bufferevent_get_output(c->client), (size_t)k);
			c->state = S_TUNNEL;
			/* an open tunnel may be silent for long; one side not reading is a stall */
			bev_timeouts(c->up, 0, c->g->lim.body_timeout_ms);
			bev_timeouts(c->client, 0, c->g->lim.body_timeout_ms);
			move(c->up, c->client, UINT64_MAX);
			move(c->client, c->up, UINT64_MAX);
			return;
		}
		evbuffer_remove_buffer(in, bufferevent_get_output(c->client), (size_t)k);
		if (h.status >= 100 && h.status < 200) {
			flush_now(c->client);
			continue; /* interim response: the real one follows */
		}
		http_response_framing(&h, c->head_is_head_method);
		c->resp_started = true;
		/* from the first byte of the answer, silence is a stall */
		bev_timeouts(c->up, c->g->lim.body_timeout_ms, c->g->lim.body_timeout_ms);
		free(c->head);
		c->head = NULL;
		c->resp_body = h.body;
		c->resp_remaining = h.content_length;
		c->resp_keep_alive = h.keep_alive;
		memset(&c->resp_chunk, 0, sizeof c->resp_chunk);
	}
	bool done = false;
	switch (c->resp_body) {
	case HTTP_BODY_NONE:
		done = true;
		break;
	case HTTP_BODY_LENGTH:
		c->resp_remaining -= move(c->up, c->client, c->resp_remaining);
		done = c->resp_remaining == 0;
		break;
	case HTTP_BODY_CHUNKED:
		if (move_chunked(c->up, c->client, &c->resp_chunk, &done) < 0) {
			close_after_flush(c);
			return;
		}
		break;
	case HTTP_BODY_UNTIL_CLOSE:
		move(c->up, c->client, UINT64_MAX);
		break;
	}
	if (done)
		exchange_complete(c);
}

static void
up_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	read_more(bev, HIGH_WATER);
	if (c->state == S_TUNNEL)
		move(c->up, c->client, UINT64_MAX);
	else if (c->state == S_EXCHANGE)
		forward_response(c);
	else
		close_upstream(c); /* an idle keep-alive upstream has nothing to say */
}

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
	try_upstream(arg);
}

static void
hold(struct conn *c)
{
	c->state = S_HOLD;
	if (!c->retry)
		c->retry = evtimer_new(c->g->dc.base, retry_cb, c);
	struct timeval tv = {0, RETRY_US};
	evtimer_add(c->retry, &tv);
}

static void
up_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	if (what & BEV_EVENT_CONNECTED) {
		c->state = S_EXCHANGE;
		c->up_idle = false;
		/* The head stays until the answer starts, for one retry on a stale keep-alive. */
		if (!c->reused) {
			bufferevent_disable(c->up, EV_WRITE); /* connected: written through now */
			set_nodelay(c->up);
		}
		bufferevent_write(c->up, c->head, c->head_len);
		c->sent_us = now_usec();
		flush_now(c->up);
		exchange_timeouts(c);
		forward_request_body(c);
		return;
	}
	struct route *r = route_find(c->g, c->route_id);
	if (c->state == S_CONNECT) {
		close_upstream(c);
		/* While a sandbox starts, gVisor taking over its interface can lose or reset a
		 * connection even after the readiness probe got through: retry until the deadline.
		 */
		if (r && (r->state == WARREN__V1__ROUTE_STATE__ROUTE_STARTING || c->was_starting) &&
		    now_usec() < c->hold_deadline_us) {
			hold(c);
			return;
		}
		if (r && r->remote) /* that host is down, or its catalog record is stale */
			send_error(c, 503,
				   "sandbox %s: the gateway of its host %s did not accept the "
				   "connection",
				   c->route_id, r->host);
		else
			send_error(c, 502, "sandbox %s did not accept the connection%s%s",
				   c->route_id, r && r->reason[0] ? ": " : "", r ? r->reason : "");
		return;
	}
	if (c->state == S_TUNNEL ||
	    (c->state == S_EXCHANGE && c->resp_started && c->resp_body == HTTP_BODY_UNTIL_CLOSE)) {
		if (evbuffer_get_length(bufferevent_get_input(c->up)))
			move(c->up, c->client, UINT64_MAX);
		close_after_flush(c);
		return;
	}
	if (c->state == S_EXCHANGE && (c->reused || c->was_starting) && !c->resp_started &&
	    c->req_body == HTTP_BODY_NONE && !(what & BEV_EVENT_TIMEOUT) &&
	    now_usec() < c->hold_deadline_us) {
		close_upstream(c);
		c->reused = false;
		hold(c);
		return;
	}
	if (c->state == S_EXCHANGE) {
		if (c->resp_started)
			close_after_flush(c); /* nothing can be added to a started answer */
		else if (what & BEV_EVENT_TIMEOUT)
			send_error(c, 504, "sandbox %s did not answer in %u ms", c->route_id,
				   (what & BEV_EVENT_READING) ? c->g->lim.response_timeout_ms
							      : c->g->lim.body_timeout_ms);
		else
			send_error(c, 502, "sandbox %s closed the connection%s%s", c->route_id,
				   r && r->reason[0] ? ": " : "", r ? r->reason : "");
		return;
	}
	close_upstream(c); /* idle keep-alive upstream went away */
}

static void
try_upstream(struct conn *c)
{
	struct route *r = route_find(c->g, c->route_id);
	if (!r) {
		send_unknown(c, c->route_id);
		return;
	}
	if (r->state == WARREN__V1__ROUTE_STATE__ROUTE_FAILED) {
		send_error(c, 502, "sandbox %s is not running: %s", c->route_id,
			   r->reason[0] ? r->reason : "failed");
		return;
	}
	if (r->state == WARREN__V1__ROUTE_STATE__ROUTE_FROZEN) {
		/* Ask once per request; the supervisor thaws and sets the route running. */
		if (!c->thaw_asked) {
			c->thaw_asked = true;
			gateway_emit(c->g, WARREN__V1__RESPONSE__BODY_THAW_NEEDED, r->id);
		}
	}
	if (now_usec() >= c->hold_deadline_us) {
		send_error(c, 504, "sandbox %s did not become ready in %u ms", c->route_id,
			   r->start_timeout_ms ? r->start_timeout_ms : DEFAULT_HOLD_MS);
		return;
	}
	if (r->state == WARREN__V1__ROUTE_STATE__ROUTE_FROZEN ||
	    r->state == WARREN__V1__ROUTE_STATE__ROUTE_STARTING) {
		/* Nothing answers before the runtime runs: wait for SetRoute to say it does. A
		 * microVM's VMM accepts before the guest listens and forwards the request into a
		 * guest that may drop it (its retransmit would cost seconds): wait for the probe.
		 * A starting gVisor sandbox too: the probe wakes held requests the moment it gets
		 * through, so their own connects every 50 ms found nothing sooner and only added
		 * to what a fork of 100 spent on connects. */
		hold(c);
		return;
	}
	if (!c->up && !c->port && (c->up = pool_take(r))) {
		/* another client's idle upstream to this sandbox */
		bufferevent_setcb(c->up, up_read, resume_reader, up_event, c);
		bufferevent_setwatermark(c->up, EV_WRITE, LOW_WATER, 0);
	}
	if (c->up) {
		/* keep-alive upstream to the same sandbox: reuse it */
		c->reused = true;
		up_event(c->up, BEV_EVENT_CONNECTED, c);
		return;
	}
	c->state = S_CONNECT;
	c->reused = false;
	c->up = bev_new(c->g, -1);
	bufferevent_setcb(c->up, up_read, resume_reader, up_event, c);
	bufferevent_setwatermark(c->up, EV_WRITE, LOW_WATER, 0);
	bufferevent_enable(c->up, EV_READ);
	if (r->state == WARREN__V1__ROUTE_STATE__ROUTE_STARTING) {
		/* a lost SYN during start-up would cost 1 s: retry a fresh connect instead */
		bev_timeouts(c->up, 0, 100);
	} else if (r->remote) {
		/* a host that vanished (no RST) is answered 503 soon, not after the body timeout */
		bev_timeouts(c->up, 0, REMOTE_CONNECT_MS);
	} else
		bev_timeouts(c->up, 0, c->g->lim.body_timeout_ms); /* connect timeout */
	struct sockaddr_in sa = r->sa;
	if (c->port)
		sa.sin_port = htons(c->port);
	if (bufferevent_socket_connect(c->up, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close_upstream(c);
		hold(c);
	}
}

void
proxy_route_changed(struct gateway *g, struct route *r)
{
	pool_flush(r);
	for (struct conn *c = g->conns; c; c = c->next) {
		if (strcmp(c->route_id, r->id))
			continue;
		if (c->state == S_CONNECT && r->state == WARREN__V1__ROUTE_STATE__ROUTE_RUNNING) {
			/* the probe got through while this connect may be waiting on a SYN lost
			 * during start-up: connect again now */
			close_upstream(c);
			c->state = S_HOLD;
			try_upstream(c);
		} else if (c->state == S_HOLD) {
			evtimer_del(c->retry);
			if (r->state == -1) {
				c->route_id[0] = 0;
				send_error(c, 404, "sandbox %s was removed", r->id);
			} else
				try_upstream(c);
		} else if (r->state == -1) {
			c->route_id[0] = 0; /* its route is gone */
		} else if (r->state == WARREN__V1__ROUTE_STATE__ROUTE_FROZEN &&
			   c->state == S_HEAD) {
			/* An idle keep-alive connection would make a checkpoint fail (and runsc
			 * then kills the sandbox): close it, with RST so no TIME_WAIT stays inside.
			 */
			close_upstream(c);
		}
	}
}

/* E2B's routing headers (E2b-Sandbox-Id, E2b-Sandbox-Port: what the e2b SDK sends to one
 * E2B_SANDBOX_URL): 1 and the id and port when both are there, once each and well formed; 0 when
 * neither is; -EBADMSG otherwise. */
static int
request_e2b_route(const struct http_head *h, char id[SANDBOX_ID_LEN + 1], uint16_t *port)
{
	const struct http_header *hid = NULL, *hport = NULL;
	for (size_t i = 0; i < h->n_headers; i++) {
		const struct http_header *hd = &h->headers[i];
		if (http_header_is(hd, "E2b-Sandbox-Id")) {
			if (hid)
				return -EBADMSG;
			hid = hd;
		} else if (http_header_is(hd, "E2b-Sandbox-Port")) {
			if (hport)
				return -EBADMSG;
			hport = hd;
		}
	}
	if (!hid && !hport)
		return 0;
	if (!hid || !hport || hid->value_len != SANDBOX_ID_LEN || hport->value_len == 0 ||
	    hport->value_len > 5)
		return -EBADMSG;
	unsigned p = 0;
	for (size_t i = 0; i < hport->value_len; i++) {
		if (hport->value[i] < '0' || hport->value[i] > '9')
			return -EBADMSG;
		p = p * 10 + (unsigned)(hport->value[i] - '0');
	}
	memcpy(id, hid->value, SANDBOX_ID_LEN);
	id[SANDBOX_ID_LEN] = 0;
	if (!sandbox_id_valid(id) || p == 0 || p > 65535)
		return -EBADMSG;
	*port = (uint16_t)p;
	return 1;
}

/* Which sandbox does this request name? Rewrites /s/<id>/rest to /rest. */
static int
request_route(struct conn *c, const struct http_head *h, char id[SANDBOX_ID_LEN + 1], size_t *strip)
{
	*strip = 0;
	if (h->target_len >= 3 + SANDBOX_ID_LEN && !strncmp(h->target, "/s/", 3)) {
		memcpy(id, h->target + 3, SANDBOX_ID_LEN);
		id[SANDBOX_ID_LEN] = 0;
		size_t after = 3 + SANDBOX_ID_LEN;
		if (sandbox_id_valid(id) && (h->target_len == after || h->target[after] == '/' ||
					     h->target[after] == '?')) {
			*strip = after;
			return 0;
		}
	}
	if (h->host && h->host_len > SANDBOX_ID_LEN + 1 && h->host[SANDBOX_ID_LEN] == '.') {
		memcpy(id, h->host, SANDBOX_ID_LEN);
		id[SANDBOX_ID_LEN] = 0;
		const char *dom = h->host + SANDBOX_ID_LEN + 1;
		size_t dl = h->host_len - SANDBOX_ID_LEN - 1, want = strlen(c->g->domain);
		const char *colon = memchr(dom, ':', dl);
		if (colon)
			dl = (size_t)(colon - dom);
		if (sandbox_id_valid(id) && dl == want && !strncasecmp(dom, c->g->domain, dl))
			return 0;
	}
	return -ENOENT;
}

/* The agent's port (49983) is the sandbox's shell: open only to routes of the E2B control plane
 * (whose agent checks E2B's own access token) or with the sandbox's agent token, which its
 * creator gets from the supervisor. 0 or -EACCES. */
static int
agent_gate(const struct route *r, const struct http_head *h)
{
	if (r->agent_api)
		return 0;
	const struct http_header *tok = NULL;
	for (size_t i = 0; i < h->n_headers; i++)
		if (http_header_is(&h->headers[i], AGENT_PROTO_GATE_TOKEN_HEADER)) {
			if (tok)
				return -EACCES; /* two: which one would the agent see? */
			tok = &h->headers[i];
		}
	return tok && route_agent_token_matches(r, tok->value, tok->value_len) ? 0 : -EACCES;
}

/* Copy head bytes [from, to) to o, without the Connection header lines when drop is set, never
 * with the hop marker (a client's is not ours; ours is for the next gateway, which sets its
 * own), and without the agent token unless keep_token (it is the gateway's to check, not the
 * sandbox's to read; a request to another host keeps it for that host's gateway to check). */
static char *
copy_head(char *o, const char *from, const char *to, const struct http_head *h, bool drop,
	  bool keep_token)
{
	for (size_t i = 0; i < h->n_headers; i++) {
		const struct http_header *hd = &h->headers[i];
		if (hd->name >= to)
			break;
		if (hd->name < from ||
		    !((drop && http_header_is(hd, "Connection")) ||
		      http_header_is(hd, GATEWAY_HOP_HEADER) ||
		      (!keep_token && http_header_is(hd, AGENT_PROTO_GATE_TOKEN_HEADER))))
			continue;
		const char *v_end = hd->value + hd->value_len;
		const char *lf = memchr(v_end, '\n', (size_t)(to - v_end));
		if (!lf)
			break;
		memcpy(o, from, (size_t)(hd->name - from));
		o += hd->name - from;
		from = lf + 1;
	}
	memcpy(o, from, (size_t)(to - from));
	return o + (to - from);
}

/* Was this request proxied here by another gateway of the cluster? Only when it carries the
 * hop marker once, with this cluster's hop token: a client's marker is not (it is stripped and
 * the request routed as any other). A proxied request is served only from local routes, so
 * two gateways with stale catalogs never send it back and forth. */
static bool
request_forwarded(const struct gateway *g, const struct http_head *h)
{
	const struct http_header *m = NULL;
	for (size_t i = 0; i < h->n_headers; i++)
		if (http_header_is(&h->headers[i], GATEWAY_HOP_HEADER)) {
			if (m)
				return false;
			m = &h->headers[i];
		}
	return m && remote_hop_matches(g, m->value, m->value_len);
}

static void
client_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(c->client);
	if (c->state == S_TUNNEL) {
		read_more(bev, HIGH_WATER);
		move(c->client, c->up, UINT64_MAX);
		return;
	}
	if (c->state == S_EXCHANGE) {
		read_more(bev, HIGH_WATER);
		forward_request_body(c);
		return;
	}
	if (c->state != S_HEAD)
		return; /* held or connecting: the body waits in the buffer */
	size_t len = evbuffer_get_length(in);
	if (len == 0)
		return;
	if (c->wait == W_IDLE)
		conn_wait(c, W_HEAD, c->g->lim.header_timeout_ms); /* a request begins */
	size_t want = len < HTTP_MAX_HEAD ? len : HTTP_MAX_HEAD;
	/* Parse again only once a line has ended since the last try: a head trickling in byte by
	 * byte costs one parse per line, not one per byte. */
	const char *p = (const char *)evbuffer_pullup(in, (ssize_t)want);
	if (c->scanned && want > c->scanned && want < HTTP_MAX_HEAD &&
	    !memchr(p + c->scanned, '\n', want - c->scanned)) {
		c->scanned = want;
		return;
	}
	struct http_head h;
	ssize_t k = http_parse_head(p, want, true, HTTP_MAX_HEAD, &h);
	if (k == 0) {
		c->scanned = want;
		return;
	}
	c->scanned = 0;
	if (k == -EMSGSIZE || k == -E2BIG) {
		send_error(c, 431, "request head too large (limit %d bytes, %d headers)",
			   HTTP_MAX_HEAD, HTTP_MAX_HEADERS);
		return;
	}
	if (k < 0) {
		send_error(c, 400, "malformed request: %s", h.error);
		return;
	}
	conn_wait(c, W_NONE, 0);
	char id[SANDBOX_ID_LEN + 1];
	size_t strip = 0;
	uint16_t port = 0;
	int e2b = request_e2b_route(&h, id, &port);
	if (e2b < 0) {
		send_error(c, 400, "E2b-Sandbox-Id and E2b-Sandbox-Port go together, once each");
		return;
	}
	if (!e2b && request_route(c, &h, id, &strip) < 0) {
		send_error(c, 404, "name a sandbox as http://<id>.%s/ or /s/<id>/", c->g->domain);
		return;
	}
	struct route *r = route_find(c->g, id);
	bool forwarded = request_forwarded(c->g, &h);
	if (r && r->remote && forwarded) {
		send_error(c, 503,
			   "sandbox %s is not on this host (a request another gateway forwarded is "
			   "served only from local routes); retry",
			   id);
		return;
	}
	if (!r) {
		send_unknown(c, id);
		return;
	}
	if (r->remote && r->lost) {
		send_error(c, 503, "sandbox %s: its host %s is gone (its lease lapsed)", id,
			   r->host);
		return;
	}
	if (r->remote) {
		/* Its own host's gateway routes it from the unchanged head (Host, /s/<id>/, E2B's
		 * headers) and applies its own rules: the port and the agent token are checked
		 * there, by the gateway that knows the sandbox's token. */
		port = 0;
		strip = 0;
	} else if (port == ntohs(r->sa.sin_port)) {
		/* Only the template's port and the agent's envd API are reachable by header. */
		port = 0;
	}
	if (!r->remote && port && port != AGENT_PROTO_ENVD_PORT) {
		send_error(c, 403, "sandbox %s: port %u is not served (only its own and %u)", id,
			   port, AGENT_PROTO_ENVD_PORT);
		return;
	}
	if (!r->remote && (port ? port : ntohs(r->sa.sin_port)) == AGENT_PROTO_ENVD_PORT &&
	    agent_gate(r, &h) < 0) {
		send_error(c, 403, "sandbox %s: its agent's port %u needs its agent token (%s)", id,
			   AGENT_PROTO_ENVD_PORT, AGENT_PROTO_GATE_TOKEN_HEADER);
		return;
	}
	/* Rewrite the request line when the sandbox was named in the path. */
	free(c->head);
	const char *rest = h.target + strip;
	size_t rest_len = h.target_len - strip;
	size_t after_target = (size_t)(h.target + h.target_len - p);
	bool need_slash = strip && (rest_len == 0 || rest[0] == '?');
	/* a request to another host's gateway carries the hop marker, after the request line */
	size_t marker =
		r->remote ? strlen(GATEWAY_HOP_HEADER) + 2 + strlen(c->g->hop_token) + 2 : 0;
	c->head = malloc((size_t)k - strip + (need_slash ? 1 : 0) + marker);
	if (!c->head) {
		send_error(c, 503, "out of memory");
		return;
	}
	char *o = c->head;
	memcpy(o, p, (size_t)(h.target - p));
	o += h.target - p;
	if (need_slash)
		*o++ = '/';
	memcpy(o, rest, rest_len);
	o += rest_len;
	/* `Connection: close` is the client's hop: the upstream connection stays open for the
	 * pool (hop-by-hop, RFC 9110 7.6.1; an Upgrade's Connection header goes through). */
	bool drop_connection = !h.keep_alive && !h.upgrade && h.version_minor == 1;
	const char *eol = memchr(p + after_target, '\n', (size_t)k - after_target);
	o = copy_head(o, p + after_target, eol + 1, &h, drop_connection, r->remote);
	if (r->remote) {
		o += sprintf(o, "%s: ", GATEWAY_HOP_HEADER);
		memcpy(o, c->g->hop_token, strlen(c->g->hop_token));
		o += strlen(c->g->hop_token);
		*o++ = '\r';
		*o++ = '\n';
	}
	o = copy_head(o, eol + 1, p + k, &h, drop_connection, r->remote);
	c->head_len = (size_t)(o - c->head);
	evbuffer_drain(in, (size_t)k);

	if (c->up && (strcmp(c->route_id, id) || c->port != port))
		release_upstream(c); /* different sandbox or port: its own connection */
	c->port = port;
	snprintf(c->route_id, sizeof c->route_id, "%s", id);
	c->head_is_head_method = h.method_len == 4 && !strncmp(h.method, "HEAD", 4);
	c->req_keep_alive = h.keep_alive;
	c->req_upgrade = h.upgrade;
	c->req_body = h.body;
	c->req_remaining = h.content_length;
	memset(&c->req_chunk, 0, sizeof c->req_chunk);
	c->req_done = h.body == HTTP_BODY_NONE;
	c->resp_started = false;
	c->interim = 0;
	c->thaw_asked = false;
	c->was_starting = r->state == WARREN__V1__ROUTE_STATE__ROUTE_STARTING;
	unsigned hold_ms = r->start_timeout_ms ? r->start_timeout_ms : DEFAULT_HOLD_MS;
	c->hold_deadline_us = now_usec() + (uint64_t)hold_ms * 1000;
	r->active++;
	route_mark_active(r);
	c->state = S_HOLD; /* counted as in an exchange from here */
	try_upstream(c);
}

static void
client_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	if (c->state == S_TUNNEL && (what & BEV_EVENT_EOF) && c->up) {
		/* half-close towards the sandbox once everything is written */
		bufferevent_flush(c->up, EV_WRITE, BEV_FINISHED);
	}
	conn_free(c);
}

static void
conn_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	enum conn_wait w = c->wait;
	c->wait = W_NONE;
	if (w == W_HEAD && c->state == S_HEAD)
		send_error(c, 408, "request head not complete in %u ms",
			   c->g->lim.header_timeout_ms);
	else if (w == W_IDLE || w == W_CLOSING || w == W_HEAD)
		conn_free(c);
}

/* A refusal costs no buffers: a fixed answer written once, then close. */
static void
refuse(struct gateway *g, int fd, const char *why)
{
	static const char msg[] = "HTTP/1.1 503 Service Unavailable\r\n"
				  "Content-Type: text/plain\r\nContent-Length: 20\r\n"
				  "Connection: close\r\nX-Warren-Error: 503\r\n\r\n"
				  "too many connections";
	if (send(fd, msg, sizeof msg - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
	}
	close(fd);
	g->refused++;
	metrics_count_response(g, 503);
	uint64_t now = now_usec();
	if (now - g->last_refusal_log_us >= 10000000) { /* one line per 10 s at most */
		g->last_refusal_log_us = now;
		log_warning("Refusing connections (%s): %" PRIu64 " so far", why, g->refused);
	}
}

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
	struct gateway *g = arg;
	uint32_t addr = sa->sa_family == AF_INET ? ((struct sockaddr_in *)sa)->sin_addr.s_addr : 0;
	if (g->lim.max_conns && g->n_conns >= g->lim.max_conns) {
		refuse(g, fd, "total connection cap");
		return;
	}
	struct ip_count **pp = ip_slot(g, addr), *ic = *pp;
	if (g->lim.max_conns_per_ip && ic && ic->n >= g->lim.max_conns_per_ip) {
		refuse(g, fd, "per-address connection cap");
		return;
	}
	struct conn *c = calloc(1, sizeof *c);
	if (!ic)
		ic = calloc(1, sizeof *ic);
	if (!c || !ic) {
		if (ic && !*pp)
			free(ic);
		free(c);
		close(fd);
		return;
	}
	if (!*pp) {
		ic->addr = addr;
		*pp = ic;
	}
	ic->n++;
	g->n_conns++;
	c->g = g;
	c->addr = addr;
	c->timer = evtimer_new(g->dc.base, conn_timeout, c);
	c->client = bev_new(g, fd);
	c->next = g->conns;
	if (g->conns)
		g->conns->prev = c;
	g->conns = c;
	if (!c->timer || !c->client) {
		if (!c->client)
			close(fd);
		conn_free(c);
		return;
	}
	bufferevent_setcb(c->client, client_read, resume_reader, client_event, c);
	bufferevent_setwatermark(c->client, EV_WRITE, LOW_WATER, 0);
	bufferevent_setwatermark(c->client, EV_READ, 0, HIGH_WATER);
	bev_timeouts(c->client, 0, g->lim.body_timeout_ms);
	bufferevent_enable(c->client, EV_READ);
	conn_wait(c, W_HEAD, g->lim.header_timeout_ms);
}

static void
accept_resume(struct gateway *g)
{
	g->accept_paused = false;
	evtimer_del(g->resume_timer);
	evconnlistener_enable(g->listener);
}

static void
accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	accept_resume(arg);
}

static void
accept_error(struct evconnlistener *l, void *arg)
{
	struct gateway *g = arg;
	int err = EVUTIL_SOCKET_ERROR();
	if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM) {
		log_warning("accept: %s", strerror(err));
		return;
	}
	/* The pending connection stays in the backlog, so the listener would wake at once again:
	 * stop listening until a connection closes (conn_free) or ACCEPT_RESUME_MS have passed. */
	evconnlistener_disable(l);
	if (!g->accept_paused)
		log_warning("Out of file descriptors (%s): accepting paused", strerror(err));
	g->accept_paused = true;
	struct timeval tv = ms_tv(ACCEPT_RESUME_MS);
	evtimer_add(g->resume_timer, &tv);
}

int
proxy_listen(struct gateway *g, const char *address, unsigned port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, address, &sa.sin_addr) != 1)
		return -EINVAL;
	/* A backlog of 4096 (the kernel's somaxconn caps it): 1,000 clients connecting at once
	 * without keep-alive overflowed 256 while the loop was busy, and a dropped SYN is retried
	 * by the client only after 1 s (bench/bench-gateway.py, 1000 conns, no keep-alive). */
	g->listener = evconnlistener_new_bind(g->dc.base, on_accept, g,
					      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 4096,
					      (struct sockaddr *)&sa, sizeof sa);
	if (!g->listener)
		return log_error_errno(-errno, "Cannot listen on %s:%u: %m", address, port);
	evconnlistener_set_error_cb(g->listener, accept_error);
	g->resume_timer = evtimer_new(g->dc.base, accept_resume_cb, g);
	if (!g->resume_timer)
		return -ENOMEM;
	return 0;
}

static void
idle_scan(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *g = arg;
	uint64_t now = now_usec();
	for (struct route *r = g->routes; r; r = r->next) {
		if (r->state != WARREN__V1__ROUTE_STATE__ROUTE_RUNNING || !r->idle_ms ||
		    r->active || r->idle_reported)
			continue;
		if (now - r->last_active_us >= (uint64_t)r->idle_ms * 1000) {
			r->idle_reported = true;
			gateway_emit(g, WARREN__V1__RESPONSE__BODY_ROUTE_IDLE, r->id);
		}
	}
}

void
proxy_idle_scan_start(struct gateway *g)
{
	g->idle_timer = event_new(g->dc.base, -1, EV_PERSIST, idle_scan, g);
	struct timeval tv = {0, 200000};
	event_add(g->idle_timer, &tv);
}
