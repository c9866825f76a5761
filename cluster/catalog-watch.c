/* warren-clusterd: the owner and host records kept current by an etcd watch (docs/MULTIHOST.md,
 * "Routing across hosts"), for the routes pushed to the local gateway. One range read of the
 * keys from prefix/hosts/ to prefix/owners/ (both kinds, one revision R), then POST /v3/watch on
 * the same range from R+1 through etcd's JSON gateway: a long-lived HTTP/1.0 answer of one JSON
 * message a line, applied to the table as it comes; when the routes may have changed,
 * gateway-routes.c pushes them. Both exchanges are non-blocking on the loop (bufferevents), never
 * a call that waits. When the watch is lost (EOF, an error message, a member that stays silent:
 * every registered host rewrites its record each second, so a healthy watch hears something at
 * least that often), or canceled because R+1 was compacted, it starts again with a full read,
 * on the next member: the table is replaced whole, so nothing missed in between survives. */
#include "catalog.h"
#include "clusterd.h"
#include "log.h"
#include "macro.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEAD_MAX 16384
#define RANGE_TIMEOUT_S 3
#define WATCH_IDLE_S 5	    /* no message for this long: the member is cut off, or dead */
#define RETRY_FAST_MS 100   /* the next member at once */
#define RETRY_ROUND_MS 1000 /* every member failed: a pause before the next round */

enum watch_state { WATCH_IDLE, WATCH_RANGE, WATCH_STREAM };

struct catalog_watch {
	struct cluster *c;
	struct bufferevent *bev;
	struct event *retry_ev;
	enum watch_state state;
	bool head_done;
	size_t member;
	unsigned failures;
	int64_t revision; /* the last revision applied */
	bool synced;	  /* the table holds a full read (and what followed it) */
	struct catalog_table table;
	char *lo, *hi; /* the range: prefix/hosts/ to prefix/owners0, base64 */
	uint64_t resyncs, messages;
};

static char *
b64(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(4 * ((n + 2) / 3) + 1);
	if (out)
		EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
	return out;
}

static void connect_now(struct catalog_watch *w, enum watch_state st);

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	connect_now(arg, WATCH_RANGE);
}

/* the watch (or the read) is lost: a full read again, from the next member */
static void
lost(struct catalog_watch *w, const char *why)
{
	if (w->bev) {
		bufferevent_free(w->bev);
		w->bev = NULL;
	}
	w->state = WATCH_IDLE;
	w->failures++;
	w->member = (w->member + 1) % w->c->etcd.n;
	if (w->failures == 1 || w->failures % 30 == 0)
		log_info("The catalog watch is lost (%s): reading the catalog again", why);
	else
		log_debug("The catalog watch is lost (%s)", why);
	unsigned ms = w->failures % w->c->etcd.n ? RETRY_FAST_MS : RETRY_ROUND_MS;
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	event_add(w->retry_ev, &tv);
}

/* the status line and the head of the answer: 0 when read and 200, 1 when more is needed */
static int
read_head(struct catalog_watch *w, struct evbuffer *in)
{
	struct evbuffer_ptr p = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (p.pos < 0)
		return evbuffer_get_length(in) > HEAD_MAX ? -EMSGSIZE : 1;
	if ((size_t)p.pos > HEAD_MAX)
		return -EMSGSIZE;
	char line[64] = "";
	size_t n = (size_t)p.pos < sizeof line - 1 ? (size_t)p.pos : sizeof line - 1;
	evbuffer_copyout(in, line, n);
	line[n] = 0;
	int status = 0;
	if (sscanf(line, "HTTP/1.%*d %d", &status) != 1 || status != 200)
		return status >= 500 ? -EAGAIN : -EPROTO;
	evbuffer_drain(in, (size_t)p.pos + 4);
	w->head_done = true;
	return 0;
}

/* the full read arrived (the whole answer, at EOF): the table is replaced by it */
static void
range_done(struct catalog_watch *w)
{
	struct evbuffer *in = bufferevent_get_input(w->bev);
	size_t len = evbuffer_get_length(in);
	struct catalog_msg m;
	struct catalog_table t;
	char *text = (char *)evbuffer_pullup(in, -1);
	int r = text ? catalog_parse_range(text, len, &m) : -EBADMSG;
	if (r < 0)
		return lost(w, "a malformed range answer");
	if ((r = catalog_table_init(&t)) >= 0) {
		catalog_table_apply(&t, w->c->prefix, &m);
		if (t.overflow)
			log_warning("More than %d owner records: the routes leave some out",
				    CATALOG_MAX_OWNERS);
		catalog_table_clear(&w->table);
		w->table = t;
		w->revision = m.revision;
		w->synced = true;
		w->resyncs++;
	}
	catalog_msg_clear(&m);
	if (r < 0)
		return lost(w, "out of memory");
	log_info("Watching the catalog from revision %lld (%zu owner records, %zu hosts) on %s",
		 (long long)w->revision + 1, json_object_size(w->table.owners),
		 json_object_size(w->table.hosts), w->c->etcd.hosts[w->member]);
	gateway_routes_refresh(w->c);
	connect_now(w, WATCH_STREAM);
}

/* each complete line of the stream is one message */
static void
stream_lines(struct catalog_watch *w)
{
	struct evbuffer *in = bufferevent_get_input(w->bev);
	for (;;) {
		struct evbuffer_ptr eol = evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF);
		if (eol.pos < 0) {
			if (evbuffer_get_length(in) > CATALOG_MSG_MAX)
				return lost(w, "a watch message over the bound");
			return;
		}
		size_t len = (size_t)eol.pos;
		if (len > CATALOG_MSG_MAX)
			return lost(w, "a watch message over the bound");
		char *text = (char *)evbuffer_pullup(in, (ev_ssize_t)len + 1);
		struct catalog_msg m;
		int r = text ? catalog_parse_watch(text, len, &m) : -ENOMEM;
		evbuffer_drain(in, len + 1);
		if (r < 0)
			return lost(w, r == -EPROTO ? "etcd ended it with an error"
						    : "a malformed watch message");
		w->messages++;
		if (m.canceled) {
			log_info("The catalog watch was canceled (compacted at %lld)",
				 (long long)m.compact_revision);
			catalog_msg_clear(&m);
			return lost(w, "canceled");
		}
		if (m.created)
			w->failures = 0;
		bool overflow = w->table.overflow;
		int changed = catalog_table_apply(&w->table, w->c->prefix, &m);
		if (m.revision > w->revision)
			w->revision = m.revision;
		catalog_msg_clear(&m);
		if (w->table.overflow && !overflow)
			log_warning("More than %d owner records: the routes leave some out",
				    CATALOG_MAX_OWNERS);
		if (changed) {
			log_debug("Catalog at revision %lld: %zu owner records, %zu hosts",
				  (long long)w->revision, json_object_size(w->table.owners),
				  json_object_size(w->table.hosts));
			gateway_routes_refresh(w->c);
		}
	}
}

static void
read_cb(struct bufferevent *bev, void *arg)
{
	struct catalog_watch *w = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	if (!w->head_done) {
		int r = read_head(w, in);
		if (r < 0)
			return lost(w, r == -EAGAIN ? "etcd answered 5xx" : "a bad HTTP answer");
		if (r > 0)
			return;
	}
	if (w->state == WATCH_RANGE) {
		if (evbuffer_get_length(in) > CATALOG_MSG_MAX)
			lost(w, "a range answer over the bound");
		return; /* complete at EOF */
	}
	stream_lines(w);
}

static void
event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct catalog_watch *w = arg;
	(void)bev;
	if (what & BEV_EVENT_CONNECTED)
		return;
	if ((what & BEV_EVENT_EOF) && w->state == WATCH_RANGE && w->head_done)
		return range_done(w);
	lost(w, what & BEV_EVENT_TIMEOUT ? "no answer in time"
		: what & BEV_EVENT_EOF	 ? "the member closed it"
					 : "a connection error");
}

static void
connect_now(struct catalog_watch *w, enum watch_state st)
{
	struct etcd *e = &w->c->etcd;
	const char *host = e->hosts[w->member];
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char addr[32];
	const char *colon = strrchr(host, ':');
	snprintf(addr, sizeof addr, "%.*s", (int)(colon - host), host);
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	if (w->bev)
		bufferevent_free(w->bev);
	w->head_done = false;
	w->state = st;
	w->bev = bufferevent_socket_new(w->c->base, -1, BEV_OPT_CLOSE_ON_FREE);
	_cleanup_free_ char *body = NULL, *start = NULL;
	int n;
	if (st == WATCH_RANGE)
		n = asprintf(&body, "{\"key\":\"%s\",\"range_end\":\"%s\"}", w->lo, w->hi);
	else
		n = asprintf(&body,
			     "{\"create_request\":{\"key\":\"%s\",\"range_end\":\"%s\","
			     "\"start_revision\":\"%lld\"}}",
			     w->lo, w->hi, (long long)(w->revision + 1));
	if (n < 0 || !w->bev || inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return lost(w, "cannot start");
	bufferevent_setcb(w->bev, read_cb, NULL, event_cb, w);
	struct timeval tmo = {st == WATCH_RANGE ? RANGE_TIMEOUT_S : WATCH_IDLE_S, 0};
	bufferevent_set_timeouts(w->bev, &tmo, &tmo);
	evbuffer_add_printf(bufferevent_get_output(w->bev),
			    "POST %s HTTP/1.0\r\nHost: %s\r\nContent-Type: application/json\r\n"
			    "Content-Length: %d\r\n\r\n%s",
			    st == WATCH_RANGE ? "/v3/kv/range" : "/v3/watch", host, n, body);
	if (bufferevent_socket_connect(w->bev, (struct sockaddr *)&sa, sizeof sa) < 0) {
		/* the bufferevent is freed by lost(); nothing was called back */
		return lost(w, "cannot connect");
	}
	bufferevent_enable(w->bev, EV_READ | EV_WRITE);
}

int
catalog_watch_start(struct cluster *c)
{
	struct catalog_watch *w = calloc(1, sizeof *w);
	if (!w)
		return -ENOMEM;
	_cleanup_free_ char *lo = cluster_key(c, "hosts", NULL);
	_cleanup_free_ char *hi = cluster_key(c, "owners", NULL);
	if (!lo || !hi || catalog_table_init(&w->table) < 0) {
		free(w);
		return -ENOMEM;
	}
	hi[strlen(hi) - 1]++; /* prefix/owners0: every owner record, nothing after them */
	w->c = c;
	w->lo = b64(lo);
	w->hi = b64(hi);
	w->member = c->etcd.current;
	w->retry_ev = evtimer_new(c->base, retry_cb, w);
	if (!w->lo || !w->hi || !w->retry_ev)
		return -ENOMEM;
	c->watch = w;
	connect_now(w, WATCH_RANGE);
	return 0;
}

const struct catalog_table *
catalog_watch_table(struct cluster *c)
{
	return c->watch && c->watch->synced ? &c->watch->table : NULL;
}
