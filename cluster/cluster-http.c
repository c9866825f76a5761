/* warren-clusterd: its HTTP API on libevent's evhttp (docs/MULTIHOST.md). The front door
 * (POST /v1/sandboxes) places a create and forwards it to the chosen host's clusterd
 * (POST /v1/internal/create), which makes it idempotent with an etcd transaction on the request
 * id and asks its supervisor. Every route but /v1/health needs the cluster key; every body is
 * checked (cluster-input.c) before anything is kept, sent to etcd or sent on D-Bus; bodies and
 * heads are bounded by evhttp; answers from other hosts are bounded and checked too. */
#include "clusterd.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define BODY_MAX 4096
#define PEER_ANSWER_MAX 65536
#define FORWARD_TIMEOUT_S 120 /* a create waits for its sandbox: the supervisor's 60 s and more */

static void
reply_json(struct evhttp_request *req, int status, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	struct evbuffer *b = evbuffer_new();
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/json");
	if (text && b)
		evbuffer_add(b, text, strlen(text));
	evhttp_send_reply(req, status, NULL, b);
	if (b)
		evbuffer_free(b);
	free(text);
}

/* errors are {"error": Name, "message": "..."}; the name is what a client acts on */
static void __attribute__((format(printf, 4, 5)))
reply_error(struct evhttp_request *req, int status, const char *name, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	reply_json(req, status, json_pack("{s:s, s:s}", "error", name, "message", msg));
}

static bool
authorized(struct cluster *c, struct evhttp_request *req)
{
	const char *k =
		evhttp_find_header(evhttp_request_get_input_headers(req), "X-Warren-Cluster-Key");
	size_t n = strlen(c->key);
	return k && strlen(k) == n && CRYPTO_memcmp(k, c->key, n) == 0;
}

static char *
body_of(struct evhttp_request *req, size_t *len)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	*len = evbuffer_get_length(in);
	if (*len > BODY_MAX)
		return NULL;
	char *s = malloc(*len + 1);
	if (!s)
		return NULL;
	evbuffer_copyout(in, s, *len);
	s[*len] = 0;
	return s;
}

/* --- a create on this host (the target side) --- */

/* the answer of a create on one host: an HTTP status and a JSON body */
typedef void (*create_answer)(struct cluster *c, int status, json_t *body, void *userdata);

struct local_create {
	char template[72], rid[CLUSTER_RID_MAX + 1];
	create_answer answer;
	void *userdata;
};

static json_t *
created_body(struct cluster *c, const char *id, bool existing)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:b}", "id", id, "host", c->name, "gateway",
			 c->gateway_url, "state", "running", "existing", existing);
}

static void
local_create_done(struct cluster *c, const char *id, const char *error, const char *message,
		  void *userdata)
{
	struct local_create *lc = userdata;
	_cleanup_free_ char *rk = cluster_key(c, "requests", lc->rid);
	c->inflight--;
	if (id) {
		json_t *rec = json_pack("{s:s, s:s}", "host", c->name, "id", id);
		_cleanup_free_ char *text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
		json_decref(rec);
		if (rk && text)
			etcd_put(&c->etcd, rk, text, c->lease);
		/* the catalog records at once, not at the next tick: the creator may list next */
		json_t *o = json_pack("{s:s, s:s}", "host", c->name, "template", lc->template);
		json_t *s = json_pack("{s:s, s:s, s:s, s:s}", "id", id, "host", c->name, "state",
				      "running", "template", lc->template);
		_cleanup_free_ char *ot = o ? json_dumps(o, JSON_COMPACT) : NULL;
		_cleanup_free_ char *st = s ? json_dumps(s, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		_cleanup_free_ char *ok = cluster_key(c, "owners", id);
		_cleanup_free_ char *sk = cluster_key(c, "sandboxes", id);
		json_decref(o);
		json_decref(s);
		if (ot && ok)
			etcd_put(&c->etcd, ok, ot, 0);
		if (st && sk)
			etcd_put(&c->etcd, sk, st, c->lease);
		member_publish(c);
		log_info("Created sandbox %s (%s) for request %s", id, lc->template, lc->rid);
		lc->answer(c, 201, created_body(c, id, false), lc->userdata);
	} else {
		/* a retry may try again: the request record goes */
		if (rk)
			etcd_delete(&c->etcd, rk);
		member_publish(c);
		int status = 500;
		const char *name = error;
		if (!strcmp(error, "PoolExhausted")) {
			status = 503;
			name = "HostFull";
		} else if (!strcmp(error, "NoSuchTemplate")) {
			status = 404;
		} else if (!strcmp(error, "TemplateNotBuilt") ||
			   !strcmp(error, "InvalidArgument")) {
			status = 400;
		}
		log_warning("Create of %s for request %s failed: %s: %s", lc->template, lc->rid,
			    error, message);
		lc->answer(c, status, json_pack("{s:s, s:s}", "error", name, "message", message),
			   lc->userdata);
	}
	free(lc);
}

/* checks there is room, claims the request id in etcd, then asks the supervisor */
static void
local_create(struct cluster *c, const char *template, const char *rid, create_answer answer,
	     void *userdata)
{
	uint32_t free_slots = 0, size = 0;
	if (!cluster_connected(c))
		return answer(c, 503,
			      json_pack("{s:s, s:s}", "error", "ClusterUnavailable", "message",
					"this host is cut off from etcd"),
			      userdata);
	int r = member_free_slots(c, &free_slots, &size);
	if (r < 0)
		return answer(c, 503,
			      json_pack("{s:s, s:s}", "error", "HelperUnavailable", "message",
					"cannot read the supervisor's pool"),
			      userdata);
	if (free_slots == 0)
		return answer(c, 503,
			      json_pack("{s:s, s:s}", "error", "HostFull", "message",
					"no free slot on this host"),
			      userdata);
	_cleanup_free_ char *rk = cluster_key(c, "requests", rid);
	json_t *rec = json_pack("{s:s, s:s}", "host", c->name, "id", "");
	_cleanup_free_ char *text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
	json_decref(rec);
	char *existing = NULL;
	r = rk && text ? etcd_create(&c->etcd, rk, text, c->lease, &existing) : -ENOMEM;
	if (r < 0)
		return answer(c, 503,
			      json_pack("{s:s, s:s}", "error", "ClusterUnavailable", "message",
					"etcd did not answer"),
			      userdata);
	if (r == 0) {
		/* a retry: the request was taken already (here or on another host) */
		json_error_t err;
		json_t *e = json_loads(existing, 0, &err);
		free(existing);
		const char *id = json_string_value(json_object_get(e, "id"));
		const char *host = json_string_value(json_object_get(e, "host"));
		if (id && cluster_input_id_ok(id) && host && cluster_input_name_ok(host)) {
			json_t *b =
				json_pack("{s:s, s:s, s:b}", "id", id, "host", host, "existing", 1);
			json_decref(e);
			return answer(c, 200, b, userdata);
		}
		json_decref(e);
		return answer(c, 409,
			      json_pack("{s:s, s:s}", "error", "CreateInProgress", "message",
					"this request id is being created; ask again"),
			      userdata);
	}
	struct local_create *lc = calloc(1, sizeof *lc);
	if (!lc)
		return answer(c, 500, NULL, userdata);
	snprintf(lc->template, sizeof lc->template, "%s", template);
	snprintf(lc->rid, sizeof lc->rid, "%s", rid);
	lc->answer = answer;
	lc->userdata = userdata;
	/* pending from the accept until the call is on the bus: a capacity record written in
	 * between counts it (none is, today: nothing here waits in between) */
	c->pending++;
	c->inflight++;
	r = cluster_bus_create_async(c, template, local_create_done, lc);
	c->pending--;
	/* the record written now reads the list after the call: the sandbox is in it */
	if (r >= 0)
		member_publish(c);
	if (r < 0) {
		char msg[128];
		snprintf(msg, sizeof msg, "cannot call the supervisor: %s", strerror(-r));
		local_create_done(c, NULL, "HelperUnavailable", msg, lc);
	}
}

static void
internal_answer(struct cluster *c, int status, json_t *body, void *userdata)
{
	(void)c;
	reply_json(userdata, status, body);
}

static void
handle_internal_create(struct cluster *c, struct evhttp_request *req)
{
	size_t len;
	char template[72], rid[CLUSTER_RID_MAX + 1];
	_cleanup_free_ char *body = body_of(req, &len);
	if (!body ||
	    cluster_input_create(body, len, template, sizeof template, rid, sizeof rid) < 0 ||
	    !rid[0])
		return reply_error(req, 400, "InvalidArgument",
				   "a body {\"template\", \"request_id\"} is needed");
	local_create(c, template, rid, internal_answer, req);
}

/* --- the front door: placement and forwarding --- */

struct candidate {
	char name[CLUSTER_NAME_MAX + 1], addr[24];
	char e2b[32]; /* its E2B control plane's http://ADDR:PORT, or "" */
};

struct front_create {
	struct cluster *c;
	struct evhttp_request *req;
	char template[72], rid[CLUSTER_RID_MAX + 1];
	struct candidate *cand;
	size_t n, next;
	char tried_on[CLUSTER_NAME_MAX + 1]; /* the host whose answer is awaited (reserved) */
};

static void try_next(struct front_create *f);

static uint32_t
rnd(void *arg)
{
	(void)arg;
	uint32_t v = 0;
	if (getrandom(&v, sizeof v, 0) != sizeof v)
		v = (uint32_t)random();
	return v;
}

static void
front_free(struct front_create *f)
{
	free(f->cand);
	free(f);
}

/* a host answered (or could not be reached: status 0): the reservation ends now, when that
 * host's capacity record already counts the create (it republishes before it answers) */
static void
front_answer(struct cluster *c, int status, json_t *body, void *userdata)
{
	struct front_create *f = userdata;
	place_reserve(c->reservations, &c->n_reservations, f->tried_on, -1);
	const char *err = json_string_value(json_object_get(body, "error"));
	if (status == 0 || (status == 503 && err &&
			    (!strcmp(err, "HostFull") || !strcmp(err, "ClusterUnavailable") ||
			     !strcmp(err, "HelperUnavailable")))) {
		log_debug("Host %s refused a create (%s): trying the next", f->tried_on,
			  err ? err : "unreachable");
		json_decref(body);
		return try_next(f);
	}
	reply_json(f->req, status ? status : 502, body);
	front_free(f);
}

static void
free_conn(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	evhttp_connection_free(arg);
}

struct forward {
	struct front_create *f;
	struct evhttp_connection *conn;
};

static void
forward_done(struct evhttp_request *r, void *arg)
{
	struct forward *fw = arg;
	struct front_create *f = fw->f;
	int status = r ? evhttp_request_get_response_code(r) : 0;
	json_t *body = NULL;
	if (status) {
		struct evbuffer *in = evhttp_request_get_input_buffer(r);
		size_t len = evbuffer_get_length(in);
		char *text = len <= PEER_ANSWER_MAX ? malloc(len + 1) : NULL;
		if (text) {
			json_error_t err;
			evbuffer_copyout(in, text, len);
			text[len] = 0;
			body = json_loads(text, 0, &err);
			free(text);
		}
		/* another host's answer is checked like any input */
		const char *id = json_string_value(json_object_get(body, "id"));
		const char *e = json_string_value(json_object_get(body, "error"));
		if (!json_is_object(body) || (status < 300 && (!id || !cluster_input_id_ok(id))) ||
		    (status >= 300 && (!e || !cluster_input_template_ok(e)))) {
			json_decref(body);
			body = json_pack("{s:s, s:s}", "error", "BadPeerAnswer", "message",
					 "a malformed answer from the placed host");
			status = 502;
		}
	}
	struct timeval zero = {0, 0};
	event_base_once(f->c->base, -1, EV_TIMEOUT, free_conn, fw->conn, &zero);
	free(fw);
	front_answer(f->c, status, body, f);
}

static int
forward(struct front_create *f, const struct candidate *to)
{
	char host[20];
	const char *colon = strrchr(to->addr, ':');
	snprintf(host, sizeof host, "%.*s", (int)(colon - to->addr), to->addr);
	struct forward *fw = calloc(1, sizeof *fw);
	if (!fw)
		return -ENOMEM;
	fw->f = f;
	fw->conn =
		evhttp_connection_base_new(f->c->base, NULL, host, (unsigned short)atoi(colon + 1));
	struct evhttp_request *r = fw->conn ? evhttp_request_new(forward_done, fw) : NULL;
	json_t *b = json_pack("{s:s, s:s}", "template", f->template, "request_id", f->rid);
	_cleanup_free_ char *text = b ? json_dumps(b, JSON_COMPACT) : NULL;
	json_decref(b);
	if (!r || !text) {
		if (fw->conn)
			evhttp_connection_free(fw->conn);
		free(fw);
		return -ENOMEM;
	}
	evhttp_connection_set_timeout(fw->conn, FORWARD_TIMEOUT_S);
	/* a peer's answer is bounded while it is read, not after evhttp buffered all of it */
	evhttp_connection_set_max_body_size(fw->conn, PEER_ANSWER_MAX);
	evhttp_connection_set_max_headers_size(fw->conn, 8192);
	struct evkeyvalq *h = evhttp_request_get_output_headers(r);
	evhttp_add_header(h, "Host", to->addr);
	evhttp_add_header(h, "Content-Type", "application/json");
	evhttp_add_header(h, "X-Warren-Cluster-Key", f->c->key);
	evbuffer_add(evhttp_request_get_output_buffer(r), text, strlen(text));
	/* on failure evhttp calls forward_done with NULL, which frees */
	evhttp_make_request(fw->conn, r, EVHTTP_REQ_POST, "/v1/internal/create");
	return 0;
}

static void
try_next(struct front_create *f)
{
	struct cluster *c = f->c;
	if (f->next == f->n) {
		reply_error(f->req, 503, "ClusterFull",
			    "no host has a free slot for a %s sandbox (%zu tried)", f->template,
			    f->n);
		return front_free(f);
	}
	struct candidate *to = &f->cand[f->next++];
	snprintf(f->tried_on, sizeof f->tried_on, "%s", to->name);
	place_reserve(c->reservations, &c->n_reservations, to->name, +1);
	if (!strcmp(to->name, c->name))
		return local_create(c, f->template, f->rid, front_answer, f);
	if (forward(f, to) < 0)
		front_answer(c, 0, NULL, f);
}

/* the registered hosts, as placement sees them for this template */
static int
read_hosts(struct cluster *c, const char *template, struct place_host **hosts,
	   struct candidate **cand, size_t *n)
{
	struct etcd_kv *kv = NULL;
	size_t m = 0;
	_cleanup_free_ char *prefix = cluster_key(c, "hosts", NULL);
	int r = prefix ? etcd_range_prefix(&c->etcd, prefix, &kv, &m) : -ENOMEM;
	if (r < 0)
		return r;
	*hosts = calloc(m + 1, sizeof **hosts);
	*cand = calloc(m + 1, sizeof **cand);
	*n = 0;
	for (size_t i = 0; *hosts && *cand && i < m && *n < PLACE_MAX_HOSTS; i++) {
		json_error_t err;
		json_t *j = json_loads(kv[i].value, 0, &err);
		const char *name = json_string_value(json_object_get(j, "name"));
		const char *addr = json_string_value(json_object_get(j, "clusterd"));
		json_t *warm = json_object_get(j, "warm");
		if (name && cluster_input_name_ok(name) && addr && cluster_input_addr_ok(addr)) {
			struct place_host *h = &(*hosts)[*n];
			snprintf(h->name, sizeof h->name, "%s", name);
			json_int_t fs = json_integer_value(json_object_get(j, "free_slots"));
			h->free_slots = fs > 0 ? (uint32_t)fs : 0;
			json_int_t mem = json_integer_value(json_object_get(j, "mem_avail"));
			h->mem_avail = mem > 0 ? (uint64_t)mem : 0;
			h->accepting = json_is_true(json_object_get(j, "accepting"));
			json_t *t = json_object_get(warm, template);
			h->warm = json_is_integer(t);
			h->standby = h->warm && json_integer_value(t) > 0
					     ? (uint32_t)json_integer_value(t)
					     : 0;
			snprintf((*cand)[*n].name, sizeof(*cand)->name, "%s", name);
			snprintf((*cand)[*n].addr, sizeof(*cand)->addr, "%s", addr);
			const char *e2b = json_string_value(json_object_get(j, "e2b"));
			if (e2b && cluster_input_url_ok(e2b))
				snprintf((*cand)[*n].e2b, sizeof(*cand)->e2b, "%s", e2b);
			(*n)++;
		}
		json_decref(j);
	}
	etcd_kvs_free(kv, m);
	if (!*hosts || !*cand) {
		free(*hosts);
		free(*cand);
		return -ENOMEM;
	}
	return 0;
}

static void
handle_create(struct cluster *c, struct evhttp_request *req)
{
	size_t len;
	char template[72], rid[CLUSTER_RID_MAX + 1];
	_cleanup_free_ char *body = body_of(req, &len);
	if (!body ||
	    cluster_input_create(body, len, template, sizeof template, rid, sizeof rid) < 0)
		return reply_error(req, 400, "InvalidArgument",
				   "a body {\"template\": NAME, \"request_id\": ID} is needed "
				   "(request_id: [A-Za-z0-9_-], at most 64)");
	if (!rid[0]) {
		uint8_t b[16];
		if (getrandom(b, sizeof b, 0) != sizeof b)
			return reply_error(req, 500, "Failed", "no randomness");
		for (size_t i = 0; i < sizeof b; i++)
			snprintf(rid + 2 * i, 3, "%02x", b[i]);
	}
	if (!cluster_connected(c))
		return reply_error(req, 503, "ClusterUnavailable",
				   "this host is cut off from etcd");
	/* a retried request answers what the first one made, wherever it was placed */
	_cleanup_free_ char *rk = cluster_key(c, "requests", rid);
	char *existing = NULL;
	int r = rk ? etcd_get(&c->etcd, rk, &existing) : -ENOMEM;
	if (r >= 0) {
		json_error_t err;
		json_t *e = json_loads(existing, 0, &err);
		free(existing);
		const char *id = json_string_value(json_object_get(e, "id"));
		const char *host = json_string_value(json_object_get(e, "host"));
		if (id && cluster_input_id_ok(id) && host && cluster_input_name_ok(host)) {
			json_t *b =
				json_pack("{s:s, s:s, s:b}", "id", id, "host", host, "existing", 1);
			json_decref(e);
			return reply_json(req, 200, b);
		}
		json_decref(e);
		return reply_error(req, 409, "CreateInProgress",
				   "request %s is being created; ask again", rid);
	}
	if (r != -ENOENT)
		return reply_error(req, 503, "ClusterUnavailable", "etcd did not answer");
	struct place_host *hosts = NULL;
	struct candidate *cand = NULL;
	size_t n = 0;
	if (read_hosts(c, template, &hosts, &cand, &n) < 0)
		return reply_error(req, 503, "ClusterUnavailable", "etcd did not answer");
	size_t *order = calloc(n + 1, sizeof *order);
	size_t m = order ? place_order(hosts, n, c->reservations, c->n_reservations, c->k, rnd,
				       NULL, order)
			 : 0;
	struct front_create *f = calloc(1, sizeof *f);
	struct candidate *ranked = calloc(m + 1, sizeof *ranked);
	if (!f || !ranked || !order) {
		free(f);
		free(ranked);
		free(order);
		free(hosts);
		free(cand);
		return reply_error(req, 500, "Failed", "out of memory");
	}
	for (size_t i = 0; i < m; i++)
		ranked[i] = cand[order[i]];
	free(order);
	free(hosts);
	free(cand);
	f->c = c;
	f->req = req;
	f->cand = ranked;
	f->n = m;
	snprintf(f->template, sizeof f->template, "%s", template);
	snprintf(f->rid, sizeof f->rid, "%s", rid);
	try_next(f);
}

/* --- for the local E2B control plane (docs/MULTIHOST.md, "The E2B front door") ---
 *
 * warren-e2b-api does its own creates (its records hold E2B's metadata, tokens and lifetimes),
 * so clusterd only places them and says where a sandbox is: the E2B control plane forwards the
 * call to the chosen host's. Hosts that publish no E2B control plane are left out. */

static json_t *
host_json(const struct candidate *h)
{
	return json_pack("{s:s, s:s}", "name", h->name, "e2b", h->e2b);
}

/* POST /v1/place {"template": T}: {self, hosts: [{name, e2b}]}, the hosts to try in the order
 * of the placement policy (the front door's reservations included) */
static void
handle_place(struct cluster *c, struct evhttp_request *req)
{
	size_t len;
	char template[72], rid[CLUSTER_RID_MAX + 1];
	_cleanup_free_ char *body = body_of(req, &len);
	if (!body ||
	    cluster_input_create(body, len, template, sizeof template, rid, sizeof rid) < 0)
		return reply_error(req, 400, "InvalidArgument",
				   "a body {\"template\": NAME} is needed");
	if (!cluster_connected(c))
		return reply_error(req, 503, "ClusterUnavailable",
				   "this host is cut off from etcd");
	struct place_host *hosts = NULL;
	struct candidate *cand = NULL;
	size_t n = 0;
	if (read_hosts(c, template, &hosts, &cand, &n) < 0)
		return reply_error(req, 503, "ClusterUnavailable", "etcd did not answer");
	_cleanup_free_ size_t *order = calloc(n + 1, sizeof *order);
	size_t m = order ? place_order(hosts, n, c->reservations, c->n_reservations, c->k, rnd,
				       NULL, order)
			 : 0;
	json_t *list = json_array();
	for (size_t i = 0; i < m; i++)
		if (cand[order[i]].e2b[0])
			json_array_append_new(list, host_json(&cand[order[i]]));
	free(hosts);
	free(cand);
	if (json_array_size(list) == 0) {
		json_decref(list);
		return reply_error(req, 503, "ClusterFull",
				   "no host with an E2B control plane has a free slot for a %s "
				   "sandbox",
				   template);
	}
	reply_json(req, 200, json_pack("{s:s, s:o}", "self", c->name, "hosts", list));
}

/* POST /v1/reserve {"host": NAME, "delta": 1 | -1}: the E2B control plane forwards a create to
 * NAME (1) and has its answer (-1). Placement counts it as its own front door's creates are
 * counted ("the placement race, designed out"): until the forwarded create answers, by when
 * the target republished its record with the create in it. */
static void
handle_reserve(struct cluster *c, struct evhttp_request *req)
{
	size_t len;
	_cleanup_free_ char *body = body_of(req, &len);
	json_error_t err;
	json_t *j = body ? json_loadb(body, len, JSON_REJECT_DUPLICATES, &err) : NULL;
	const char *host = json_string_value(json_object_get(j, "host"));
	json_t *d = json_object_get(j, "delta");
	json_int_t delta = json_is_integer(d) ? json_integer_value(d) : 0;
	if (!host || !cluster_input_name_ok(host) || (delta != 1 && delta != -1)) {
		json_decref(j);
		return reply_error(req, 400, "InvalidArgument",
				   "a body {\"host\": NAME, \"delta\": 1 or -1} is needed");
	}
	place_reserve(c->reservations, &c->n_reservations, host, (int)delta);
	json_decref(j);
	reply_json(req, 200, json_object());
}

/* GET /v1/hosts: {self, hosts: [{name, e2b}]}, every registered host with an E2B control plane */
static void
handle_hosts(struct cluster *c, struct evhttp_request *req)
{
	struct place_host *hosts = NULL;
	struct candidate *cand = NULL;
	size_t n = 0;
	if (read_hosts(c, "", &hosts, &cand, &n) < 0)
		return reply_error(req, 503, "ClusterUnavailable", "etcd did not answer");
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++)
		if (cand[i].e2b[0])
			json_array_append_new(list, host_json(&cand[i]));
	free(hosts);
	free(cand);
	reply_json(req, 200, json_pack("{s:s, s:o}", "self", c->name, "hosts", list));
}

/* GET /v1/owners/<id>: {id, self, host, e2b} from the sandbox's owner record and its host's
 * record (e2b "" when that host is gone or publishes none); 404 NoSuchSandbox */
static void
handle_owner(struct cluster *c, struct evhttp_request *req, const char *id)
{
	if (!cluster_input_id_ok(id))
		return reply_error(req, 400, "InvalidArgument", "a sandbox id is 12 hex digits");
	_cleanup_free_ char *ok = cluster_key(c, "owners", id);
	char *text = NULL;
	int r = ok ? etcd_get(&c->etcd, ok, &text) : -ENOMEM;
	if (r == -ENOENT)
		return reply_error(req, 404, "NoSuchSandbox", "no sandbox %s in the cluster", id);
	if (r < 0)
		return reply_error(req, 503, "ClusterUnavailable", "etcd did not answer");
	json_error_t err;
	json_t *o = json_loads(text, 0, &err);
	free(text);
	const char *host = json_string_value(json_object_get(o, "host"));
	if (!host || !cluster_input_name_ok(host)) {
		json_decref(o);
		return reply_error(req, 502, "BadRecord", "the owner record of %s is malformed",
				   id);
	}
	char owner[CLUSTER_NAME_MAX + 1], e2b[32] = "";
	snprintf(owner, sizeof owner, "%s", host);
	json_decref(o);
	_cleanup_free_ char *hk = cluster_key(c, "hosts", owner);
	text = NULL;
	r = hk ? etcd_get(&c->etcd, hk, &text) : -ENOMEM;
	if (r < 0 && r != -ENOENT)
		return reply_error(req, 503, "ClusterUnavailable", "etcd did not answer");
	if (r >= 0) {
		json_t *h = json_loads(text, 0, &err);
		const char *u = json_string_value(json_object_get(h, "e2b"));
		if (u && cluster_input_url_ok(u))
			snprintf(e2b, sizeof e2b, "%s", u);
		json_decref(h);
		free(text);
	}
	reply_json(req, 200,
		   json_pack("{s:s, s:s, s:s, s:s}", "id", id, "self", c->name, "host", owner,
			     "e2b", e2b));
}

/* --- reading the cluster --- */

static json_t *
range_json(struct cluster *c, const char *kind)
{
	struct etcd_kv *kv = NULL;
	size_t n = 0;
	_cleanup_free_ char *prefix = cluster_key(c, kind, NULL);
	if (!prefix || etcd_range_prefix(&c->etcd, prefix, &kv, &n) < 0)
		return NULL;
	json_t *o = json_object();
	for (size_t i = 0; i < n; i++) {
		json_error_t err;
		json_t *j = json_loads(kv[i].value, 0, &err);
		if (j)
			json_object_set_new(o, kv[i].key + strlen(prefix), j);
	}
	etcd_kvs_free(kv, n);
	return o;
}

/* every sandbox an owner record names: its catalog state, or "lost" when its host's lease
 * lapsed (the host is out), or "unknown" while its host is in but has not written it */
static void
handle_list(struct cluster *c, struct evhttp_request *req)
{
	json_t *hosts = range_json(c, "hosts"), *recs = range_json(c, "sandboxes"),
	       *owners = range_json(c, "owners");
	if (!hosts || !recs || !owners) {
		json_decref(hosts);
		json_decref(recs);
		json_decref(owners);
		return reply_error(req, 503, "ClusterUnavailable", "etcd did not answer");
	}
	json_t *list = json_array();
	const char *id;
	json_t *o;
	json_object_foreach(owners, id, o)
	{
		const char *host = json_string_value(json_object_get(o, "host"));
		json_t *rec = json_object_get(recs, id);
		const char *state = rec ? json_string_value(json_object_get(rec, "state"))
				    : json_object_get(hosts, host ? host : "") ? "unknown"
									       : "lost";
		json_array_append_new(list,
				      json_pack("{s:s, s:s?, s:s?, s:s?}", "id", id, "host", host,
						"state", state, "template",
						json_string_value(json_object_get(o, "template"))));
	}
	json_decref(recs);
	json_decref(owners);
	reply_json(req, 200, json_pack("{s:o, s:o}", "sandboxes", list, "hosts", hosts));
}

static void
on_request(struct evhttp_request *req, void *arg)
{
	struct cluster *c = arg;
	const char *uri = evhttp_request_get_uri(req);
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	if (!strcmp(uri, "/v1/health") && cmd == EVHTTP_REQ_GET)
		return reply_json(req, 200,
				  json_pack("{s:s, s:b}", "name", c->name, "connected",
					    cluster_connected(c)));
	if (!authorized(c, req))
		return reply_error(req, 401, "Unauthorized",
				   "a valid X-Warren-Cluster-Key is needed");
	if (!strcmp(uri, "/v1/sandboxes") && cmd == EVHTTP_REQ_POST)
		return handle_create(c, req);
	if (!strcmp(uri, "/v1/sandboxes") && cmd == EVHTTP_REQ_GET)
		return handle_list(c, req);
	if (!strcmp(uri, "/v1/internal/create") && cmd == EVHTTP_REQ_POST)
		return handle_internal_create(c, req);
	if (!strcmp(uri, "/v1/place") && cmd == EVHTTP_REQ_POST)
		return handle_place(c, req);
	if (!strcmp(uri, "/v1/reserve") && cmd == EVHTTP_REQ_POST)
		return handle_reserve(c, req);
	if (!strcmp(uri, "/v1/hosts") && cmd == EVHTTP_REQ_GET)
		return handle_hosts(c, req);
	if (!strncmp(uri, "/v1/owners/", 11) && cmd == EVHTTP_REQ_GET)
		return handle_owner(c, req, uri + 11);
	if (cluster_fork_route(c, req, uri, cmd))
		return;
	reply_error(req, 404, "NotFound", "no such route");
}

int
cluster_http_start(struct cluster *c, int listen_fd)
{
	c->http = evhttp_new(c->base);
	if (!c->http)
		return -ENOMEM;
	evhttp_set_max_body_size(c->http, BODY_MAX);
	evhttp_set_max_headers_size(c->http, 8192);
	evhttp_set_timeout(c->http, FORWARD_TIMEOUT_S);
	evhttp_set_allowed_methods(c->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
	evhttp_set_gencb(c->http, on_request, c);
	if (evhttp_accept_socket(c->http, listen_fd) < 0)
		return -EINVAL;
	return 0;
}

void
cluster_http_reply(struct evhttp_request *req, int status, json_t *j)
{
	reply_json(req, status, j);
}

char *
cluster_http_body(struct evhttp_request *req, size_t *len)
{
	return body_of(req, len);
}
