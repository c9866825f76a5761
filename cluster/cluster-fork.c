/* warren-clusterd: forks across hosts (docs/MULTIHOST.md, "Forks across hosts"). A tag's image
 * lives on the host that snapshotted it, so its children are made there: each host publishes
 * its tags (prefix/tags/<tag>/<host>, under its lease, from the supervisor's ListTags), the
 * front door (POST /v1/forks) finds the tag's host and forwards the fork to its clusterd
 * (POST /v1/internal/fork), which checks it has a free slot for every child, claims the request
 * id in etcd (as a create does) and calls ForkTag. A host without room refuses TagHostFull:
 * copying the image to another host is not done. Bodies in and answers from other hosts are
 * checked before anything is kept, sent to etcd or sent on D-Bus. */
#include "clusterd.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define BUS_NAME "org.warren.Warren1"
#define MANAGER_PATH "/org/warren/Warren1"
#define MANAGER_IFACE "org.warren.Warren1.Manager"
#define ERR_PREFIX "org.warren.Warren1.Error."
#define FORK_BUS_TIMEOUT_USEC (150ull * 1000000) /* count children restored side by side */
#define FORWARD_TIMEOUT_S 180
#define PEER_ANSWER_MAX 65536
#define TAGS_MAX 4096 /* tags published by one host */
#define MESSAGE_MAX 400

static json_t *error_body(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static json_t *
error_body(const char *name, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return json_pack("{s:s, s:s}", "error", name, "message", msg);
}

/* --- the tag catalog: this host's tags under its lease --- */

/* "tag template\n" for each user tag the supervisor lists, sorted (ListTags sorts by name) */
static char *
list_tags(struct cluster *c)
{
	sd_bus_message *reply = NULL;
	char *text = NULL;
	size_t len = 0, n = 0;
	int r = sd_bus_call_method(c->bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListTags", NULL,
				   &reply, "");
	if (r >= 0)
		r = sd_bus_message_enter_container(reply, 'a', "(sstbts)");
	FILE *f = r >= 0 ? open_memstream(&text, &len) : NULL;
	const char *tag, *tmpl, *parent;
	uint64_t size, created;
	int compressed;
	while (f && n < TAGS_MAX &&
	       sd_bus_message_read(reply, "(sstbts)", &tag, &tmpl, &size, &compressed, &created,
				   &parent) > 0)
		if (cluster_input_tag_ok(tag) && cluster_input_template_ok(tmpl)) {
			fprintf(f, "%s %s\n", tag, tmpl);
			n++;
		}
	sd_bus_message_unref(reply);
	if (!f)
		return NULL;
	fputc(0, f);
	return fclose(f) == 0 ? text : (free(text), NULL);
}

static bool
has_line(const char *text, const char *line, size_t n)
{
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, line, n) && p[n] == '\n')
			return true;
	return false;
}

static bool
has_tag(const char *text, const char *tag)
{
	size_t n = strlen(tag);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, tag, n) && p[n] == ' ')
			return true;
	return false;
}

/* each tick: the records of tags made or removed since the last, all of them on a new lease
 * (the old lease took them); what etcd did not take is tried again at the next tick */
void
cluster_fork_tags_sync(struct cluster *c, bool fresh_lease)
{
	_cleanup_free_ char *now = list_tags(c);
	const char *old = fresh_lease ? "" : c->tags_published ? c->tags_published : "";
	if (!now || (!fresh_lease && c->tags_published && !strcmp(now, c->tags_published)))
		return;
	int failed = 0;
	for (const char *p = now; *p;) {
		size_t n = strcspn(p, "\n");
		char tag[CLUSTER_TAG_MAX + 1], tmpl[72];
		if (!has_line(old, p, n) && sscanf(p, "%32s %71s", tag, tmpl) == 2) {
			_cleanup_free_ char *k = NULL;
			json_t *v = json_pack("{s:s, s:s, s:s}", "host", c->name, "tag", tag,
					      "template", tmpl);
			_cleanup_free_ char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
			json_decref(v);
			if (asprintf(&k, "%s/tags/%s/%s", c->prefix, tag, c->name) < 0 || !text ||
			    etcd_put(&c->etcd, k, text, c->lease) < 0)
				failed++;
		}
		p += n + (p[n] == '\n');
	}
	for (const char *p = old; *p;) {
		size_t n = strcspn(p, "\n");
		char tag[CLUSTER_TAG_MAX + 1];
		/* a tag gone (a line changed, same tag: put again above) */
		if (!has_line(now, p, n) && sscanf(p, "%32s", tag) == 1 && !has_tag(now, tag)) {
			_cleanup_free_ char *k = NULL;
			if (asprintf(&k, "%s/tags/%s/%s", c->prefix, tag, c->name) < 0 ||
			    etcd_delete(&c->etcd, k) < 0)
				failed++;
		}
		p += n + (p[n] == '\n');
	}
	if (failed)
		return;
	free(c->tags_published);
	c->tags_published = TAKE_PTR(now);
}

/* --- the fork on the tag's host (the target side) --- */

typedef void (*fork_answer)(struct cluster *c, int status, json_t *body, void *userdata);

struct local_fork {
	struct cluster *c;
	char tag[CLUSTER_TAG_MAX + 1], rid[CLUSTER_RID_MAX + 1];
	unsigned count;
	fork_answer answer;
	void *userdata;
};

/* what a request id's record says: 200 with the children when the fork is done, else 409 */
static void
answer_existing(struct cluster *c, const char *text, fork_answer answer, void *userdata)
{
	json_error_t err;
	json_t *e = json_loads(text, 0, &err), *ids = json_object_get(e, "ids"), *id;
	const char *host = json_string_value(json_object_get(e, "host"));
	json_t *ok = json_array();
	size_t i;
	json_array_foreach(ids, i, id)
	{
		if (i < CLUSTER_FORK_MAX && cluster_input_id_ok(json_string_value(id)))
			json_array_append(ok, id);
	}
	if (host && cluster_input_name_ok(host) && json_array_size(ok) > 0) {
		answer(c, 200, json_pack("{s:o, s:s, s:b}", "ids", ok, "host", host, "existing", 1),
		       userdata);
	} else {
		json_decref(ok);
		answer(c, 409,
		       error_body("ForkInProgress", "this request id is being forked; ask again"),
		       userdata);
	}
	json_decref(e);
}

/* the tag's template, as this host published it ("" if it is not there) */
static void
tag_template(struct cluster *c, const char *tag, char out[72])
{
	size_t n = strlen(tag);
	out[0] = 0;
	for (const char *p = c->tags_published; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, tag, n) && p[n] == ' ')
			sscanf(p + n + 1, "%71s", out);
}

static void
local_fork_done(struct local_fork *lf, char **ids, const char *error, const char *message)
{
	struct cluster *c = lf->c;
	_cleanup_free_ char *rk = NULL;
	if (asprintf(&rk, "%s/forks/%s", c->prefix, lf->rid) < 0)
		rk = NULL;
	c->pending -= lf->count;
	c->inflight -= lf->count;
	if (ids && ids[0]) {
		json_t *list = json_array();
		char tmpl[72];
		tag_template(c, lf->tag, tmpl);
		for (size_t i = 0; ids[i]; i++) {
			json_array_append_new(list, json_string(ids[i]));
			/* the catalog records at once, as a create writes them */
			json_t *o = json_pack("{s:s, s:s}", "host", c->name, "template", tmpl);
			json_t *s = json_pack("{s:s, s:s, s:s, s:s}", "id", ids[i], "host", c->name,
					      "state", "running", "template", tmpl);
			_cleanup_free_ char *ot = o ? json_dumps(o, JSON_COMPACT) : NULL;
			_cleanup_free_ char *st =
				s ? json_dumps(s, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
			_cleanup_free_ char *ok = cluster_key(c, "owners", ids[i]);
			_cleanup_free_ char *sk = cluster_key(c, "sandboxes", ids[i]);
			json_decref(o);
			json_decref(s);
			if (ot && ok)
				etcd_put(&c->etcd, ok, ot, 0);
			if (st && sk)
				etcd_put(&c->etcd, sk, st, c->lease);
		}
		json_t *rec = json_pack("{s:s, s:O}", "host", c->name, "ids", list);
		_cleanup_free_ char *text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
		json_decref(rec);
		if (rk && text)
			etcd_put(&c->etcd, rk, text, c->lease);
		member_publish(c);
		log_info("Forked %zu children of tag %s for request %s", json_array_size(list),
			 lf->tag, lf->rid);
		lf->answer(c, 201,
			   json_pack("{s:o, s:s, s:s, s:b}", "ids", list, "host", c->name,
				     "gateway", c->gateway_url, "existing", 0),
			   lf->userdata);
	} else {
		if (rk)
			etcd_delete(&c->etcd, rk); /* a retry may try again */
		member_publish(c);
		int status = 500;
		const char *name = error ? error : "Failed";
		if (!strcmp(name, "PoolExhausted")) {
			status = 503;
			name = "TagHostFull";
		} else if (!strcmp(name, "NoSuchTag")) {
			status = 404;
		} else if (!strcmp(name, "InvalidArgument")) {
			status = 400;
		} else if (!strcmp(name, "org.freedesktop.DBus.Error.AccessDenied")) {
			status = 403;
			name = "AccessDenied";
		} else if (!strcmp(name, "TagBusy") || !strcmp(name, "HelperUnavailable")) {
			status = 503;
		}
		log_warning("Fork of tag %s for request %s failed: %s: %s", lf->tag, lf->rid, name,
			    message ? message : "");
		lf->answer(c, status, error_body(name, "%s", message ? message : ""), lf->userdata);
	}
	free(lf);
}

static int
fork_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct local_fork *lf = userdata;
	const sd_bus_error *e = sd_bus_message_get_error(m);
	char **ids = NULL;
	(void)ret_error;
	if (e) {
		const char *name = e->name ? e->name : "Failed";
		if (!strncmp(name, ERR_PREFIX, strlen(ERR_PREFIX)))
			name += strlen(ERR_PREFIX);
		local_fork_done(lf, NULL, name, e->message);
		return 0;
	}
	if (sd_bus_message_read_strv(m, &ids) < 0 || !ids) {
		local_fork_done(lf, NULL, "Failed", "a malformed answer from the supervisor");
		return 0;
	}
	size_t n = 0;
	for (; ids[n]; n++)
		if (!cluster_input_id_ok(ids[n]) || n >= lf->count)
			break;
	if (ids[n]) {
		local_fork_done(lf, NULL, "Failed", "a malformed answer from the supervisor");
	} else {
		local_fork_done(lf, ids, NULL, NULL);
	}
	for (size_t i = 0; ids[i]; i++)
		free(ids[i]);
	free(ids);
	return 0;
}

/* there must be a free slot here for every child: they are made on this host or not at all */
static void
local_fork(struct cluster *c, const char *tag, unsigned count, const char *rid, fork_answer answer,
	   void *userdata)
{
	uint32_t free_slots = 0, size = 0;
	if (!cluster_connected(c))
		return answer(c, 503,
			      error_body("ClusterUnavailable", "this host is cut off from etcd"),
			      userdata);
	if (member_free_slots(c, &free_slots, &size) < 0)
		return answer(c, 503,
			      error_body("HelperUnavailable", "cannot read the supervisor's pool"),
			      userdata);
	if (free_slots < count)
		return answer(c, 503,
			      error_body("TagHostFull",
					 "tag %s is on host %s, which has %u free slots for %u "
					 "children; children are made only on the tag's host "
					 "(its image is not copied to another host)",
					 tag, c->name, free_slots, count),
			      userdata);
	_cleanup_free_ char *rk = NULL;
	json_t *rec = json_pack("{s:s, s:[]}", "host", c->name, "ids");
	_cleanup_free_ char *text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
	json_decref(rec);
	char *existing = NULL;
	int r = asprintf(&rk, "%s/forks/%s", c->prefix, rid) < 0 || !text
			? -ENOMEM
			: etcd_create(&c->etcd, rk, text, c->lease, &existing);
	if (r < 0)
		return answer(c, 503, error_body("ClusterUnavailable", "etcd did not answer"),
			      userdata);
	if (r == 0) {
		answer_existing(c, existing, answer, userdata);
		free(existing);
		return;
	}
	struct local_fork *lf = calloc(1, sizeof *lf);
	sd_bus_message *m = NULL;
	if (!lf) {
		etcd_delete(&c->etcd, rk);
		return answer(c, 500, error_body("Failed", "out of memory"), userdata);
	}
	*lf = (struct local_fork){.c = c, .count = count, .answer = answer, .userdata = userdata};
	snprintf(lf->tag, sizeof lf->tag, "%s", tag);
	snprintf(lf->rid, sizeof lf->rid, "%s", rid);
	/* the children are in the supervisor's list only once it opened the image: until the
	 * fork answers they are counted pending, so no record shows their slots free (it may
	 * show fewer free for that while: never more) */
	c->pending += count;
	c->inflight += count;
	r = sd_bus_message_new_method_call(c->bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
					   "ForkTag");
	if (r >= 0)
		r = sd_bus_message_append(m, "su", tag, (uint32_t)count);
	if (r >= 0)
		r = sd_bus_call_async(c->bus, NULL, m, fork_reply, lf, FORK_BUS_TIMEOUT_USEC);
	sd_bus_message_unref(m);
	if (r < 0) {
		char msg[128];
		snprintf(msg, sizeof msg, "cannot call the supervisor: %s", strerror(-r));
		return local_fork_done(lf, NULL, "HelperUnavailable", msg);
	}
	member_publish(c);
}

static void
http_answer(struct cluster *c, int status, json_t *body, void *userdata)
{
	(void)c;
	cluster_http_reply(userdata, status, body);
}

static void
handle_internal_fork(struct cluster *c, struct evhttp_request *req)
{
	size_t len;
	char tag[CLUSTER_TAG_MAX + 1], rid[CLUSTER_RID_MAX + 1], host[CLUSTER_NAME_MAX + 1];
	unsigned count;
	_cleanup_free_ char *body = cluster_http_body(req, &len);
	if (!body || cluster_input_fork(body, len, tag, &count, rid, host) < 0 || !rid[0])
		return cluster_http_reply(req, 400,
					  error_body("InvalidArgument",
						     "a body {\"tag\", \"count\", \"request_id\"} "
						     "is needed"));
	local_fork(c, tag, count, rid, http_answer, req);
}

/* --- the front door: the tag's host, and the fork forwarded there --- */

struct front_fork {
	struct cluster *c;
	struct evhttp_request *req;
	struct evhttp_connection *conn;
	char host[CLUSTER_NAME_MAX + 1];
	unsigned count;
};

static void
free_conn(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	evhttp_connection_free(arg);
}

/* the tag's host answered: checked like any input, then passed on rebuilt from what passed */
static void
forward_done(struct evhttp_request *r, void *arg)
{
	struct front_fork *f = arg;
	int status = r ? evhttp_request_get_response_code(r) : 0;
	json_t *body = NULL, *out = NULL;
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
	}
	json_t *ids = json_object_get(body, "ids"), *id;
	const char *host = json_string_value(json_object_get(body, "host"));
	const char *e = json_string_value(json_object_get(body, "error"));
	const char *msg = json_string_value(json_object_get(body, "message"));
	if (status >= 200 && status < 300 && json_is_array(ids) && json_array_size(ids) >= 1 &&
	    json_array_size(ids) <= f->count && host && !strcmp(host, f->host)) {
		json_t *list = json_array();
		size_t i;
		bool ok = true;
		json_array_foreach(ids, i, id)
		{
			ok &= cluster_input_id_ok(json_string_value(id));
			json_array_append(list, id);
		}
		const char *gw = json_string_value(json_object_get(body, "gateway"));
		if (ok)
			out = json_pack("{s:o, s:s, s:s?, s:b}", "ids", list, "host", host,
					"gateway", gw && strlen(gw) <= 200 ? gw : NULL, "existing",
					json_is_true(json_object_get(body, "existing")));
		else
			json_decref(list);
	} else if (status >= 400 && status < 600 && e && cluster_input_template_ok(e)) {
		char m[MESSAGE_MAX + 1];
		snprintf(m, sizeof m, "%s", msg ? msg : "");
		out = json_pack("{s:s, s:s}", "error", e, "message", m);
	}
	json_decref(body);
	if (!out) {
		status = 502;
		out = error_body(r ? "BadPeerAnswer" : "TagHostUnavailable",
				 r ? "a malformed answer from the tag's host %s"
				   : "the tag's host %s did not answer",
				 f->host);
	}
	cluster_http_reply(f->req, status, out);
	struct timeval zero = {0, 0};
	event_base_once(f->c->base, -1, EV_TIMEOUT, free_conn, f->conn, &zero);
	free(f);
}

static int
forward(struct front_fork *f, const char *addr, const char *tag, const char *rid)
{
	char host[20];
	const char *colon = strrchr(addr, ':');
	snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
	f->conn =
		evhttp_connection_base_new(f->c->base, NULL, host, (unsigned short)atoi(colon + 1));
	struct evhttp_request *r = f->conn ? evhttp_request_new(forward_done, f) : NULL;
	json_t *b =
		json_pack("{s:s, s:i, s:s}", "tag", tag, "count", (int)f->count, "request_id", rid);
	_cleanup_free_ char *text = b ? json_dumps(b, JSON_COMPACT) : NULL;
	json_decref(b);
	if (!r || !text) {
		if (r)
			evhttp_request_free(r);
		if (f->conn)
			evhttp_connection_free(f->conn);
		return -ENOMEM;
	}
	evhttp_connection_set_timeout(f->conn, FORWARD_TIMEOUT_S);
	evhttp_connection_set_max_body_size(f->conn, PEER_ANSWER_MAX);
	evhttp_connection_set_max_headers_size(f->conn, 8192);
	struct evkeyvalq *h = evhttp_request_get_output_headers(r);
	evhttp_add_header(h, "Host", addr);
	evhttp_add_header(h, "Content-Type", "application/json");
	evhttp_add_header(h, "X-Warren-Cluster-Key", f->c->key);
	evbuffer_add(evhttp_request_get_output_buffer(r), text, strlen(text));
	/* on failure evhttp calls forward_done with NULL, which answers and frees */
	evhttp_make_request(f->conn, r, EVHTTP_REQ_POST, "/v1/internal/fork");
	return 0;
}

/* the hosts holding tag (prefix/tags/<tag>/<host>, each written by that host) */
static int
tag_hosts(struct cluster *c, const char *tag, json_t **hosts)
{
	struct etcd_kv *kv = NULL;
	size_t n = 0;
	_cleanup_free_ char *p = NULL;
	if (asprintf(&p, "%s/tags/%s/", c->prefix, tag) < 0)
		return -ENOMEM;
	int r = etcd_range_prefix(&c->etcd, p, &kv, &n);
	if (r < 0)
		return r;
	*hosts = json_array();
	for (size_t i = 0; i < n && i < PLACE_MAX_HOSTS; i++) {
		const char *name = kv[i].key + strlen(p);
		json_error_t err;
		json_t *v = json_loads(kv[i].value, 0, &err);
		const char *h = json_string_value(json_object_get(v, "host"));
		if (cluster_input_name_ok(name) && h && !strcmp(h, name))
			json_array_append_new(*hosts, json_string(name));
		json_decref(v);
	}
	etcd_kvs_free(kv, n);
	return 0;
}

static void
front_answer(struct cluster *c, int status, json_t *body, void *userdata)
{
	(void)c;
	cluster_http_reply(userdata, status, body);
}

static void
handle_fork(struct cluster *c, struct evhttp_request *req)
{
	size_t len;
	char tag[CLUSTER_TAG_MAX + 1], rid[CLUSTER_RID_MAX + 1], want[CLUSTER_NAME_MAX + 1];
	unsigned count;
	_cleanup_free_ char *body = cluster_http_body(req, &len);
	if (!body || cluster_input_fork(body, len, tag, &count, rid, want) < 0)
		return cluster_http_reply(
			req, 400,
			error_body("InvalidArgument",
				   "a body {\"tag\": TAG, \"count\": 1-%d, \"request_id\": ID, "
				   "\"host\": NAME (optional)} is needed",
				   CLUSTER_FORK_MAX));
	if (!rid[0]) {
		uint8_t b[16];
		if (getrandom(b, sizeof b, 0) != sizeof b)
			return cluster_http_reply(req, 500, error_body("Failed", "no randomness"));
		for (size_t i = 0; i < sizeof b; i++)
			snprintf(rid + 2 * i, 3, "%02x", b[i]);
	}
	if (!cluster_connected(c))
		return cluster_http_reply(
			req, 503,
			error_body("ClusterUnavailable", "this host is cut off from etcd"));
	/* a retried request answers what the first one made, wherever the tag is now */
	_cleanup_free_ char *rk = NULL;
	char *existing = NULL;
	int r = asprintf(&rk, "%s/forks/%s", c->prefix, rid) < 0
			? -ENOMEM
			: etcd_get(&c->etcd, rk, &existing);
	if (r >= 0) {
		answer_existing(c, existing, front_answer, req);
		free(existing);
		return;
	}
	if (r != -ENOENT)
		return cluster_http_reply(req, 503,
					  error_body("ClusterUnavailable", "etcd did not answer"));
	json_t *hosts = NULL;
	if (tag_hosts(c, tag, &hosts) < 0)
		return cluster_http_reply(req, 503,
					  error_body("ClusterUnavailable", "etcd did not answer"));
	const char *to = NULL;
	size_t i;
	json_t *h;
	json_array_foreach(hosts, i, h)
	{
		if (!want[0] || !strcmp(json_string_value(h), want))
			to = json_string_value(h);
	}
	if (!to) {
		json_decref(hosts);
		return cluster_http_reply(req, 404,
					  error_body("NoSuchTag",
						     "no host of the cluster has tag %s%s%s", tag,
						     want[0] ? " on " : "", want));
	}
	if (!want[0] && json_array_size(hosts) > 1) {
		_cleanup_free_ char *names = json_dumps(hosts, JSON_COMPACT);
		json_decref(hosts);
		return cluster_http_reply(
			req, 409,
			error_body("AmbiguousTag",
				   "tag %s is on several hosts (%s): name one as \"host\"", tag,
				   names ? names : ""));
	}
	struct front_fork *f = calloc(1, sizeof *f);
	if (!f) {
		json_decref(hosts);
		return cluster_http_reply(req, 500, error_body("Failed", "out of memory"));
	}
	*f = (struct front_fork){.c = c, .req = req, .count = count};
	snprintf(f->host, sizeof f->host, "%s", to);
	json_decref(hosts);
	if (!strcmp(f->host, c->name)) {
		free(f);
		return local_fork(c, tag, count, rid, front_answer, req);
	}
	/* the tag's host's clusterd, as its capacity record names it */
	_cleanup_free_ char *hk = cluster_key(c, "hosts", f->host);
	char *rec = NULL;
	r = hk ? etcd_get(&c->etcd, hk, &rec) : -ENOMEM;
	json_error_t err;
	json_t *j = r >= 0 ? json_loads(rec, 0, &err) : NULL;
	free(rec);
	const char *addr = json_string_value(json_object_get(j, "clusterd"));
	if (!addr || !cluster_input_addr_ok(addr)) {
		cluster_http_reply(req, 503,
				   error_body("TagHostUnavailable",
					      "the host of tag %s, %s, is not in the cluster now",
					      tag, f->host));
		json_decref(j);
		free(f);
		return;
	}
	r = forward(f, addr, tag, rid);
	json_decref(j);
	if (r < 0) {
		cluster_http_reply(req, 500, error_body("Failed", "out of memory"));
		free(f);
	}
}

bool
cluster_fork_route(struct cluster *c, struct evhttp_request *req, const char *uri,
		   enum evhttp_cmd_type cmd)
{
	if (!strcmp(uri, "/v1/forks") && cmd == EVHTTP_REQ_POST)
		handle_fork(c, req);
	else if (!strcmp(uri, "/v1/internal/fork") && cmd == EVHTTP_REQ_POST)
		handle_internal_fork(c, req);
	else
		return false;
	return true;
}
