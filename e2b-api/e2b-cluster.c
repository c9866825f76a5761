/* warren-e2b-api: the E2B front door on a cluster (docs/MULTIHOST.md, "The E2B front door").
 * With --cluster, a create is placed by the local warren-clusterd (POST /v1/place: its policy,
 * its view of every host's capacity) and forwarded to the chosen host's control plane, which
 * makes it as its own (its records hold the metadata, token and lifetime); a call for a
 * sandbox this host has no record of goes to the control plane of the host the catalog names
 * (GET /v1/owners/<id>); a list merges every host's. The cluster key goes only to the local
 * clusterd, whose address the operator gives; other hosts' control planes are sent the peer
 * token derived from it (SHA-256 of "warren-e2b-peer\n" and the key), which opens their E2B
 * routes for this host's local records only (a peer's request is never forwarded again) and
 * nothing of clusterd's; the SHA-256 of the client's API key goes with it, and the peer checks
 * it against its own keys. A URI goes on only if printable ASCII (e2b-http.c checks it). Every call
 * is asynchronous on the loop (two front doors forwarding to each other never wait for each other),
 * has a deadline, and its answer is bounded while it is read and checked before it is relayed; at
 * most E2B_CLUSTER_CALLS_MAX are in flight. */
#include "e2b-api.h"
#include "log.h"
#include "macro.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PEER_HEADER "X-Warren-E2b-Peer"
#define KEY_HEADER "X-Warren-Cluster-Key"
#define CLIENT_KEY_HEADER "X-Warren-E2b-Client-Key"
#define CLUSTERD_ANSWER_MAX 65536
#define PEER_ANSWER_MAX (4 * 1024 * 1024) /* a list of up to 1024 records */
#define CLUSTERD_TIMEOUT_S 10
#define PEER_TIMEOUT_S 150 /* a create waits for its sandbox (60 s) and its /init (15 s) */
#define LIST_TIMEOUT_S 10
#define ROUTE_WAIT_MS 10000

/* --- set-up --- */

static int
read_key(const char *path, char *key)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	int r;
	if (fd < 0)
		return log_error_errno(-errno, "Cannot open the cluster key %s: %m", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 0007) ||
	    (st.st_uid != 0 && st.st_uid != geteuid()))
		return log_error_errno(-EPERM,
				       "The cluster key %s must be a file of root's, not readable "
				       "by others (0640)",
				       path);
	/* a key and its line end ("\r\n") fit; a file with more is refused, never cut */
	char buf[E2B_CLUSTER_KEY_MAX + 2], more;
	ssize_t n = read(fd, buf, sizeof buf);
	if (n < 0)
		return log_error_errno(-errno, "Cannot read %s: %m", path);
	if (n == (ssize_t)sizeof buf && read(fd, &more, 1) != 0)
		n = sizeof buf; /* too long, whatever follows */
	else
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			n--;
	r = n < 16 || n > E2B_CLUSTER_KEY_MAX ? -EINVAL : 0;
	for (ssize_t i = 0; r == 0 && i < n; i++)
		if (buf[i] < 0x21 || buf[i] > 0x7e)
			r = -EILSEQ;
	if (r == 0) {
		memcpy(key, buf, (size_t)n);
		key[n] = 0;
	}
	explicit_bzero(buf, sizeof buf);
	if (r == -EINVAL)
		return log_error_errno(r, "The cluster key must be 16-256 characters");
	if (r < 0)
		return log_error_errno(-EINVAL, "The cluster key must be printable ASCII");
	return 0;
}

/* ADDR:PORT, IPv4 (what clusterd publishes, after "http://") */
static bool
addr_ok(const char *s)
{
	unsigned a, b, c, d, port;
	char tail;
	if (!s || strlen(s) > 21)
		return false;
	if (sscanf(s, "%u.%u.%u.%u:%u%c", &a, &b, &c, &d, &port, &tail) != 5)
		return false;
	return a < 256 && b < 256 && c < 256 && d < 256 && port > 0 && port < 65536;
}

static bool
name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

int
e2b_cluster_setup(struct e2b_api *a, const char *clusterd, const char *key_path)
{
	if (!addr_ok(clusterd))
		return log_error_errno(-EINVAL, "Bad --cluster (ADDR:PORT, IPv4): %s", clusterd);
	snprintf(a->cluster_addr, sizeof a->cluster_addr, "%s", clusterd);
	int r = read_key(key_path, a->cluster_key);
	if (r < 0)
		return r;
	char *text = NULL;
	uint8_t d[32];
	if (asprintf(&text, "warren-e2b-peer\n%s", a->cluster_key) < 0)
		return -ENOMEM;
	r = api_key_digest(text, strlen(text), d);
	explicit_bzero(text, strlen(text));
	free(text);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof d; i++)
		snprintf(a->peer_token + 2 * i, 3, "%02x", d[i]);
	explicit_bzero(d, sizeof d);
	a->clustered = true;
	return 0;
}

int
e2b_cluster_peer(struct e2b_api *a, struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const char *t = evhttp_find_header(h, PEER_HEADER);
	if (!t)
		return 0;
	/* one header only: which one would be checked? */
	int count = 0;
	for (struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next)
		count += !strcasecmp(kv->key, PEER_HEADER);
	if (!a->clustered || count != 1 || strlen(t) != 64 ||
	    CRYPTO_memcmp(t, a->peer_token, 64) != 0)
		return -1;
	return 1;
}

/* --- one asynchronous HTTP call --- */

/* status -1: no connection (refused, unreachable, connect timed out): the request was never
 * sent; status 0: connected but no answer (reset, timed out, too large): the request may have
 * been acted on; body: its JSON (NULL if empty); bad: a body that is not JSON */
typedef void (*call_done)(struct e2b_api *a, int status, json_t *body, bool bad, void *arg);

struct call {
	struct e2b_api *a;
	struct evhttp_connection *conn;
	call_done done;
	void *arg;
	bool counted;	/* in a->cluster_calls */
	bool connected; /* the connection was made: the request may have been sent */
};

/* evhttp calls it when it resets a connection that was made (before the request's callback) */
static void
call_closed(struct evhttp_connection *conn, void *arg)
{
	struct call *c = arg;
	(void)conn;
	c->connected = true;
}

/* the client's request refused for want of room for one more call: it may retry */
static void
reply_busy(struct evhttp_request *req)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
	e2b_http_reply_error(req, 503,
			     "This front door has too many cluster calls in flight: retry later");
}

static void
free_conn(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	evhttp_connection_free(arg);
}

static void
call_finished(struct evhttp_request *r, void *arg)
{
	struct call *c = arg;
	int status = r ? evhttp_request_get_response_code(r) : 0;
	json_t *body = NULL;
	bool bad = false;
	if (status < 100 || status > 599)
		status = c->connected ? 0 : -1;
	if (status > 0) {
		struct evbuffer *in = evhttp_request_get_input_buffer(r);
		size_t len = evbuffer_get_length(in);
		if (len) {
			unsigned char *p = evbuffer_pullup(in, (ev_ssize_t)len);
			json_error_t err;
			body = p ? json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &err)
				 : NULL;
			bad = !body;
		}
	}
	struct timeval zero = {0, 0};
	evhttp_connection_set_closecb(c->conn, NULL, NULL);
	if (c->counted)
		c->a->cluster_calls--;
	event_base_once(c->a->base, -1, EV_TIMEOUT, free_conn, c->conn, &zero);
	c->done(c->a, status, body, bad, c->arg);
	json_decref(body);
	free(c);
}

/* to the local clusterd (the cluster key) or to another host's control plane at to,
 * "ADDR:PORT" (the peer token, and the SHA-256 of the client's API key, which that host checks
 * against its own keys): which one is the caller's choice, never the address's.
 * -EBUSY when E2B_CLUSTER_CALLS_MAX are in flight, unless always (a reservation given back) */
static int
call_(struct e2b_api *a, const char *to, struct evhttp_request *client, enum evhttp_cmd_type method,
      const char *uri, const void *body, size_t len, size_t max, int timeout_s, call_done done,
      void *arg, bool always)
{
	bool clusterd = to == NULL;
	if (!always && a->cluster_calls >= E2B_CLUSTER_CALLS_MAX)
		return -EBUSY;
	if (clusterd)
		to = a->cluster_addr;
	char host[24];
	const char *colon = strrchr(to, ':');
	if (!addr_ok(to) || !colon)
		return -EINVAL;
	snprintf(host, sizeof host, "%.*s", (int)(colon - to), to);
	struct call *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->a = a;
	c->done = done;
	c->arg = arg;
	c->conn = evhttp_connection_base_new(a->base, NULL, host, (unsigned short)atoi(colon + 1));
	struct evhttp_request *r = c->conn ? evhttp_request_new(call_finished, c) : NULL;
	if (!r) {
		if (c->conn)
			evhttp_connection_free(c->conn);
		free(c);
		return -ENOMEM;
	}
	evhttp_connection_set_timeout(c->conn, timeout_s);
	evhttp_connection_set_retries(c->conn, 0);
	evhttp_connection_set_closecb(c->conn, call_closed, c);
	/* an answer is bounded while it is read, not after evhttp buffered all of it */
	evhttp_connection_set_max_body_size(c->conn, (ev_ssize_t)max);
	evhttp_connection_set_max_headers_size(c->conn, 16384);
	struct evkeyvalq *h = evhttp_request_get_output_headers(r);
	evhttp_add_header(h, "Host", to);
	evhttp_add_header(h, "Content-Type", "application/json");
	if (clusterd)
		evhttp_add_header(h, KEY_HEADER, a->cluster_key);
	else {
		const char *key =
			client ? evhttp_find_header(evhttp_request_get_input_headers(client),
						    "X-API-Key")
			       : NULL;
		char hex[65];
		evhttp_add_header(h, PEER_HEADER, a->peer_token);
		if (key && api_key_digest_hex(key, strlen(key), hex) == 0)
			evhttp_add_header(h, CLIENT_KEY_HEADER, hex);
	}
	if (body && len)
		evbuffer_add(evhttp_request_get_output_buffer(r), body, len);
	c->counted = true;
	a->cluster_calls++;
	/* on failure evhttp calls call_finished with NULL, which frees */
	evhttp_make_request(c->conn, r, method, uri);
	return 0;
}

static int
call(struct e2b_api *a, const char *to, struct evhttp_request *client, enum evhttp_cmd_type method,
     const char *uri, const void *body, size_t len, size_t max, int timeout_s, call_done done,
     void *arg)
{
	return call_(a, to, client, method, uri, body, len, max, timeout_s, done, arg, false);
}

/* "http://ADDR:PORT" as published: ADDR:PORT, or NULL */
static const char *
url_addr(const char *url)
{
	return url && !strncmp(url, "http://", 7) && addr_ok(url + 7) ? url + 7 : NULL;
}

/* a peer's answer, relayed: its status and JSON body (checked: JSON, bounded) */
static void
relay(struct evhttp_request *req, int status, json_t *body, bool bad, const char *host)
{
	if (status <= 0 || bad || status < 200) {
		e2b_http_reply_error(req, 502, "Host %s did not answer%s", host,
				     bad ? " with JSON" : "");
		return;
	}
	/* the client's key was good here: a peer's 401 is the cluster's misconfiguration (no
	 * --cluster there, or another key), not the client's */
	if (status == 401) {
		log_warning("Host %s refused this host's peer token: is it started with --cluster "
			    "and the same cluster key?",
			    host);
		e2b_http_reply_error(req, 502, "Host %s refused this host's cluster credentials",
				     host);
		return;
	}
	if (!body) {
		evhttp_send_reply(req, status, NULL, NULL);
		return;
	}
	e2b_http_reply_json(req, status, json_incref(body));
}

/* --- a call for a sandbox of another host --- */

/* clusterd's answers about owners (found, or 404) kept for a second, so repeated calls for a
 * sandbox do not each cost clusterd a blocking etcd read; direct-mapped by the id's digits */
#define OWNER_MEMO 256
#define OWNER_MEMO_USEC 1000000ull
static struct owner_memo {
	char id[E2B_ID_LEN + 1];
	int status;
	json_t *body;
	uint64_t until_usec;
} owner_memo[OWNER_MEMO];

static struct owner_memo *
owner_memo_slot(const char *id)
{
	return &owner_memo[strtoull(id + E2B_ID_LEN - 4, NULL, 16) % OWNER_MEMO];
}

struct forward {
	struct evhttp_request *req;
	char id[E2B_ID_LEN + 1], host[64];
	bool remembered; /* the owner came from owner_memo, not from clusterd */
};

static void
forward_answered(struct e2b_api *a, int status, json_t *body, bool bad, void *arg)
{
	struct forward *f = arg;
	(void)a;
	if (status <= 0)
		log_warning("Host %s did not answer a call for sandbox %s", f->host, f->id);
	relay(f->req, status, body, bad, f->host);
	free(f);
}

static void
owner_answered(struct e2b_api *a, int status, json_t *body, bool bad, void *arg)
{
	struct forward *f = arg;
	if (!f->remembered && ((status == 200 && !bad) || status == 404)) {
		struct owner_memo *m = owner_memo_slot(f->id);
		json_decref(m->body);
		snprintf(m->id, sizeof m->id, "%s", f->id);
		m->status = status;
		m->body = json_incref(body);
		m->until_usec = e2b_now_usec() + OWNER_MEMO_USEC;
	}
	const char *self = json_string_value(json_object_get(body, "self"));
	const char *host = json_string_value(json_object_get(body, "host"));
	const char *e2b = json_string_value(json_object_get(body, "e2b"));
	const char *to = url_addr(e2b);
	if (status == 404 || (status == 200 && self && host && !strcmp(self, host))) {
		/* unknown to the cluster, or this host's and not E2B's (or gone) */
		e2b_http_reply_error(f->req, 404, "sandbox \"%s\" not found", f->id);
		goto out;
	}
	if (status != 200 || bad || !host || !name_ok(host)) {
		e2b_http_reply_error(f->req, 503,
				     "The cluster cannot say where sandbox %s is (clusterd: %d)",
				     f->id, status);
		goto out;
	}
	snprintf(f->host, sizeof f->host, "%s", host);
	if (!to) {
		e2b_http_reply_error(f->req, 503,
				     "Sandbox %s is on host %s, which is gone or runs no E2B "
				     "control plane",
				     f->id, host);
		goto out;
	}
	struct evhttp_request *req = f->req;
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	unsigned char *p = len ? evbuffer_pullup(in, (ev_ssize_t)len) : NULL;
	int r = call(a, to, req, evhttp_request_get_command(req), evhttp_request_get_uri(req), p,
		     len, PEER_ANSWER_MAX, PEER_TIMEOUT_S, forward_answered, f);
	if (r == -EBUSY) {
		reply_busy(req);
		goto out;
	}
	if (r < 0) {
		e2b_http_reply_error(req, 500, "Cannot forward the call: %s", strerror(-r));
		goto out;
	}
	return;
out:
	free(f);
}

void
e2b_cluster_forward(struct e2b_api *a, struct evhttp_request *req, const char *id)
{
	struct forward *f = calloc(1, sizeof *f);
	char uri[64];
	if (!f)
		return e2b_http_reply_error(req, 500, "Out of memory");
	f->req = req;
	snprintf(f->id, sizeof f->id, "%s", id);
	struct owner_memo *m = owner_memo_slot(id);
	uint64_t now = e2b_now_usec();
	/* (the clock set back: the memo is not trusted longer than it was meant to be) */
	if (!strcmp(m->id, id) && now < m->until_usec && m->until_usec - now <= OWNER_MEMO_USEC) {
		json_t *body = json_incref(m->body);
		f->remembered = true;
		owner_answered(a, m->status, body, false, f);
		json_decref(body);
		return;
	}
	snprintf(uri, sizeof uri, "/v1/owners/%s", id);
	int r = call(a, NULL, NULL, EVHTTP_REQ_GET, uri, NULL, 0, CLUSTERD_ANSWER_MAX,
		     CLUSTERD_TIMEOUT_S, owner_answered, f);
	if (r < 0) {
		free(f);
		if (r == -EBUSY)
			return reply_busy(req);
		e2b_http_reply_error(req, 500, "Cannot ask the cluster: %s", strerror(-r));
	}
}

/* --- a create: placed, forwarded, the route awaited --- */

struct create {
	struct e2b_api *a;
	struct evhttp_request *req;
	char template[E2B_TEMPLATE_MAX + 1], self[64];
	json_t *hosts; /* [{name, e2b}] in the order to try */
	size_t next;
	char host[64], to[24], id[E2B_ID_LEN + 1];
	json_t *answer; /* the 201 body, held while the route is awaited */
	uint64_t route_deadline_usec;
	struct event *timer;
};

static void try_next(struct create *c);
static void forward_create(struct create *c);

static void
create_free(struct create *c)
{
	json_decref(c->hosts);
	json_decref(c->answer);
	if (c->timer)
		event_free(c->timer);
	free(c);
}

static void route_check(evutil_socket_t fd, short what, void *arg);

/* The sandbox is another host's: this host's gateway routes it once the catalog has it (about
 * two clusterd ticks). The SDK goes to the gateway at once, so the create is answered when the
 * gateway routes it (its agent's /health, no token needed), or after ROUTE_WAIT_MS regardless. */
static void
route_answered(struct e2b_api *a, int status, json_t *body, bool bad, void *arg)
{
	struct create *c = arg;
	(void)body;
	(void)bad;
	if ((status >= 200 && status < 300) || e2b_now_usec() >= c->route_deadline_usec) {
		if (status < 200 || status >= 300)
			log_warning("Sandbox %s on %s: this host's gateway does not route it yet",
				    c->id, c->host);
		log_info("Sandbox %s created on host %s", c->id, c->host);
		e2b_http_reply_json(c->req, 201, json_incref(c->answer));
		return create_free(c);
	}
	struct timeval t = {0, 100000};
	if (!c->timer)
		c->timer = evtimer_new(a->base, route_check, c);
	if (!c->timer) {
		e2b_http_reply_json(c->req, 201, json_incref(c->answer));
		return create_free(c);
	}
	evtimer_add(c->timer, &t);
}

/* the agent's /health through this host's gateway, routed by E2B's headers */
static void
route_check(evutil_socket_t fd, short what, void *arg)
{
	struct create *c = arg;
	struct e2b_api *a = c->a;
	(void)fd;
	(void)what;
	char host[INET_ADDRSTRLEN], id_hdr[E2B_ID_LEN + 1];
	inet_ntop(AF_INET, &a->gateway.sin_addr, host, sizeof host);
	snprintf(id_hdr, sizeof id_hdr, "%s", c->id);
	struct evhttp_connection *conn =
		evhttp_connection_base_new(a->base, NULL, host, ntohs(a->gateway.sin_port));
	struct call *k = conn ? calloc(1, sizeof *k) : NULL;
	struct evhttp_request *r = k ? evhttp_request_new(call_finished, k) : NULL;
	if (!r) {
		free(k);
		if (conn)
			evhttp_connection_free(conn);
		c->route_deadline_usec = 0;
		return route_answered(a, 0, NULL, false, c);
	}
	k->a = a;
	k->conn = conn;
	k->done = route_answered;
	k->arg = c;
	evhttp_connection_set_timeout(conn, 2);
	evhttp_connection_set_retries(conn, 0);
	evhttp_connection_set_max_body_size(conn, 4096);
	evhttp_connection_set_max_headers_size(conn, 8192);
	struct evkeyvalq *h = evhttp_request_get_output_headers(r);
	evhttp_add_header(h, "Host", host);
	evhttp_add_header(h, "E2b-Sandbox-Id", id_hdr);
	evhttp_add_header(h, "E2b-Sandbox-Port", "49983");
	evhttp_make_request(conn, r, EVHTTP_REQ_GET, "/health");
}

static void
reserved(struct e2b_api *a, int status, json_t *body, bool bad, void *arg)
{
	(void)a;
	(void)body;
	(void)bad;
	if (status != 200)
		log_debug("clusterd did not take a reservation (%d)", status);
	if (arg)
		forward_create(arg);
}

/* placement counts a create forwarded to host (delta 1) until it answers (-1), as clusterd's
 * own front door does; then (c) forwards it */
static void
reserve(struct e2b_api *a, const char *host, int delta, struct create *c)
{
	json_t *b = json_pack("{s:s, s:i}", "host", host, "delta", delta);
	_cleanup_free_ char *text = b ? json_dumps(b, JSON_COMPACT) : NULL;
	json_decref(b);
	/* a reservation is always given back, whatever is in flight */
	int r = text ? call_(a, NULL, NULL, EVHTTP_REQ_POST, "/v1/reserve", text, strlen(text),
			     CLUSTERD_ANSWER_MAX, CLUSTERD_TIMEOUT_S, reserved, c, delta < 0)
		     : -ENOMEM;
	if (r == -EBUSY && c) {
		reply_busy(c->req);
		return create_free(c);
	}
	if (r < 0 && c)
		forward_create(c);
}

static void
peer_created(struct e2b_api *a, int status, json_t *body, bool bad, void *arg)
{
	struct create *c = arg;
	reserve(a, c->host, -1, NULL);
	/* a host that is full (or cannot be reached) is skipped for the next, as clusterd's own
	 * front door does: a stale capacity record costs one round trip */
	if (status == -1 || status == 503 || status == 429) {
		log_info("Host %s refused a %s create (%d): trying the next", c->host, c->template,
			 status);
		return try_next(c);
	}
	/* sent, and then no answer: the host may have made the sandbox, so another is not made
	 * elsewhere (the client decides) */
	if (status == 0) {
		log_warning("Host %s did not answer a %s create in time: not tried elsewhere",
			    c->host, c->template);
		e2b_http_reply_error(c->req, 504,
				     "Host %s did not answer the create in time: the sandbox may "
				     "exist there (list the sandboxes before retrying)",
				     c->host);
		return create_free(c);
	}
	const char *id = json_string_value(json_object_get(body, "sandboxID"));
	if (status == 201 && (bad || !id || !e2b_input_id_ok(id))) {
		e2b_http_reply_error(c->req, 502, "Host %s answered a create without a sandbox id",
				     c->host);
		return create_free(c);
	}
	if (status != 201) {
		relay(c->req, status, body, bad, c->host);
		return create_free(c);
	}
	snprintf(c->id, sizeof c->id, "%s", id);
	c->answer = json_incref(body);
	c->route_deadline_usec = e2b_now_usec() + ROUTE_WAIT_MS * 1000ull;
	route_check(-1, 0, c);
	(void)a;
}

static void
try_next(struct create *c)
{
	struct e2b_api *a = c->a;
	for (;;) {
		json_t *h = json_array_get(c->hosts, c->next);
		if (!h) {
			e2b_http_reply_error(c->req, 503,
					     "No host of the cluster could take a %s sandbox (%zu "
					     "tried)",
					     c->template, c->next);
			return create_free(c);
		}
		c->next++;
		const char *name = json_string_value(json_object_get(h, "name"));
		const char *to = url_addr(json_string_value(json_object_get(h, "e2b")));
		if (!name || !name_ok(name) || !to)
			continue;
		snprintf(c->host, sizeof c->host, "%s", name);
		if (!strcmp(name, c->self)) {
			if (e2b_http_create(a, c->req, true, true) == -EBUSY) {
				log_info("This host is full: trying the next for %s", c->template);
				continue;
			}
			return create_free(c);
		}
		snprintf(c->to, sizeof c->to, "%s", to);
		return reserve(a, c->host, 1, c);
	}
}

/* the client's body, unchanged, to the chosen host's control plane */
static void
forward_create(struct create *c)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(c->req);
	size_t len = evbuffer_get_length(in);
	unsigned char *p = len ? evbuffer_pullup(in, (ev_ssize_t)len) : NULL;
	int r = call(c->a, c->to, c->req, EVHTTP_REQ_POST, evhttp_request_get_uri(c->req), p, len,
		     PEER_ANSWER_MAX, PEER_TIMEOUT_S, peer_created, c);
	if (r < 0)
		reserve(c->a, c->host, -1, NULL);
	if (r == -EBUSY) {
		reply_busy(c->req);
		create_free(c);
	} else if (r < 0)
		try_next(c);
}

static void
placed(struct e2b_api *a, int status, json_t *body, bool bad, void *arg)
{
	struct create *c = arg;
	(void)a;
	const char *self = json_string_value(json_object_get(body, "self"));
	json_t *hosts = json_object_get(body, "hosts");
	const char *err = json_string_value(json_object_get(body, "error"));
	if (status != 200 || bad || !self || !json_is_array(hosts)) {
		bool full = err && !strcmp(err, "ClusterFull");
		e2b_http_reply_error(c->req, 503, "%s",
				     full ? "The cluster is full: no host has a free slot"
					  : "The cluster cannot place a sandbox now");
		return create_free(c);
	}
	snprintf(c->self, sizeof c->self, "%s", self);
	c->hosts = json_incref(hosts);
	try_next(c);
}

void
e2b_cluster_create(struct e2b_api *a, struct evhttp_request *req, const char *template)
{
	struct create *c = calloc(1, sizeof *c);
	if (!c)
		return e2b_http_reply_error(req, 500, "Out of memory");
	c->a = a;
	c->req = req;
	snprintf(c->template, sizeof c->template, "%s", template);
	json_t *b = json_pack("{s:s}", "template", template);
	_cleanup_free_ char *text = b ? json_dumps(b, JSON_COMPACT) : NULL;
	json_decref(b);
	int r = text ? call(a, NULL, NULL, EVHTTP_REQ_POST, "/v1/place", text, strlen(text),
			    CLUSTERD_ANSWER_MAX, CLUSTERD_TIMEOUT_S, placed, c)
		     : -ENOMEM;
	if (r < 0) {
		free(c);
		if (r == -EBUSY)
			return reply_busy(req);
		e2b_http_reply_error(req, 500, "Cannot ask the cluster: %s", strerror(-r));
	}
}

/* --- a list: every host's E2B sandboxes --- */

struct list {
	struct evhttp_request *req;
	struct e2b_list_entry *v;
	size_t n, cap;
	struct e2b_page page;
	unsigned waiting;
	bool busy; /* a host could not be asked for want of room for a call */
};

static void
list_done(struct list *l)
{
	if (l->busy) {
		for (size_t i = 0; i < l->n; i++)
			json_decref(l->v[i].j);
		free(l->v);
		reply_busy(l->req);
	} else
		e2b_http_list_reply(l->req, l->v, l->n, &l->page);
	free(l);
}

/* duplicates are left to e2b_list_sort (this host's entry wins) */
static void
list_add(struct list *l, json_t *j, const char *id, uint64_t started)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct e2b_list_entry *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return;
		l->v = v;
		l->cap = cap;
	}
	struct e2b_list_entry *e = &l->v[l->n++];
	e->started_usec = started;
	snprintf(e->id, sizeof e->id, "%s", id);
	e->j = json_incref(j);
	e->origin = 1;
}

/* a peer's list: [{SandboxDetail..., "_startedUsec": N}], each checked */
static void
peer_listed(struct e2b_api *a, int status, json_t *body, bool bad, void *arg)
{
	struct list *l = arg;
	(void)a;
	size_t i, taken = 0;
	json_t *j;
	if (status != 200 || bad || !json_is_array(body))
		log_warning("A host did not answer the list (%d): its sandboxes are left out",
			    status);
	else
		json_array_foreach(body, i, j)
		{
			if (taken == E2B_LIST_PEER_MAX) {
				log_warning("A host listed more than %d sandboxes: the rest are "
					    "left out",
					    E2B_LIST_PEER_MAX);
				break;
			}
			const char *id = json_string_value(json_object_get(j, "sandboxID"));
			json_t *st = json_object_get(j, "_startedUsec");
			if (!json_is_object(j) || !id || !e2b_input_id_ok(id) ||
			    !json_is_integer(st) || json_integer_value(st) < 0)
				continue;
			uint64_t started = (uint64_t)json_integer_value(st);
			json_object_del(j, "_startedUsec");
			list_add(l, j, id, started);
			taken++;
		}
	if (--l->waiting == 0)
		list_done(l);
}

static void
hosts_answered(struct e2b_api *a, int status, json_t *body, bool bad, void *arg)
{
	struct list *l = arg;
	const char *self = json_string_value(json_object_get(body, "self"));
	json_t *hosts = json_object_get(body, "hosts"), *h;
	size_t i;
	if (status != 200 || bad || !self || !json_is_array(hosts)) {
		log_warning("clusterd did not list the hosts (%d): only this host's sandboxes",
			    status);
		return list_done(l);
	}
	l->waiting = 1; /* this function's own, so no peer's answer ends it early */
	json_array_foreach(hosts, i, h)
	{
		const char *name = json_string_value(json_object_get(h, "name"));
		const char *to = url_addr(json_string_value(json_object_get(h, "e2b")));
		if (!name || !to || !strcmp(name, self))
			continue;
		l->waiting++;
		int r = call(a, to, l->req, EVHTTP_REQ_GET, evhttp_request_get_uri(l->req), NULL, 0,
			     PEER_ANSWER_MAX, LIST_TIMEOUT_S, peer_listed, l);
		if (r < 0)
			l->waiting--;
		if (r == -EBUSY)
			l->busy = true;
	}
	if (--l->waiting == 0)
		list_done(l);
}

void
e2b_cluster_list(struct e2b_api *a, struct evhttp_request *req, struct e2b_list_entry *v, size_t n,
		 const struct e2b_page *page)
{
	struct list *l = calloc(1, sizeof *l);
	if (!l)
		return e2b_http_list_reply(req, v, n, page);
	l->req = req;
	l->v = v;
	l->n = l->cap = n;
	l->page = *page;
	int r = call(a, NULL, NULL, EVHTTP_REQ_GET, "/v1/hosts", NULL, 0, CLUSTERD_ANSWER_MAX,
		     CLUSTERD_TIMEOUT_S, hosts_answered, l);
	if (r == -EBUSY)
		l->busy = true;
	if (r < 0)
		list_done(l);
}
