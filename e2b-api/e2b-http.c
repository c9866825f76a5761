/* warren-e2b-api: the E2B REST API on libevent's evhttp (spec/openapi.yml of e2b-dev/E2B, and
 * the /v2 routes the published SDK 2.x calls). Every request but /health needs a valid
 * X-API-Key; every string of a body, path or query is checked (e2b-input.h) before it is kept,
 * answered or sent on D-Bus; bodies and heads are bounded by evhttp. Errors are E2B's body
 * {"code": <HTTP status>, "message": "..."}. Sandboxes created elsewhere (warrenctl, D-Bus) are
 * not E2B's: only this daemon's records are listed or touched. */
#include "e2b-api.h"
#include "egress-policy.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/random.h>
#include <time.h>

#define RECONCILE_TICKS 5

/* --- answers --- */

static void
reply_json(struct evhttp_request *req, int status, json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	struct evbuffer *b = evbuffer_new();
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/json");
	if (text)
		evbuffer_add(b, text, strlen(text));
	evhttp_send_reply(req, status, NULL, b);
	evbuffer_free(b);
	free(text);
}

static void __attribute__((format(printf, 3, 4)))
reply_error(struct evhttp_request *req, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	reply_json(req, status, json_pack("{s:i, s:s}", "code", status, "message", msg));
}

void
e2b_http_reply_json(struct evhttp_request *req, int status, json_t *j)
{
	reply_json(req, status, j);
}

void
e2b_http_reply_error(struct evhttp_request *req, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	reply_json(req, status, json_pack("{s:i, s:s}", "code", status, "message", msg));
}

static void
reply_empty(struct evhttp_request *req, int status)
{
	evhttp_send_reply(req, status, NULL, NULL);
}

static void
format_time(uint64_t usec, char out[32])
{
	time_t t = (time_t)(usec / 1000000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 32 - n, ".%03uZ", (unsigned)((usec / 1000) % 1000));
}

/* --- API keys: the file is read again whenever it changed (a revoke takes effect at once) --- */

static void
keys_refresh(struct e2b_api *a)
{
	struct stat st;
	bool have = stat(a->keys_path, &st) == 0;
	if (have && a->keys_st_valid && st.st_ino == a->keys_st.st_ino &&
	    st.st_dev == a->keys_st.st_dev && st.st_size == a->keys_st.st_size &&
	    st.st_mtim.tv_sec == a->keys_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == a->keys_st.st_mtim.tv_nsec &&
	    st.st_ctim.tv_sec == a->keys_st.st_ctim.tv_sec &&
	    st.st_ctim.tv_nsec == a->keys_st.st_ctim.tv_nsec)
		return;
	if (!have && !a->keys_st_valid && a->n_keys == 0)
		return;
	size_t n = 0;
	int r = have ? api_keys_load(a->keys_path, a->keys, API_KEYS_MAX, &n) : -ENOENT;
	if (r < 0) {
		log_warning_errno(r, "API keys from %s: none accepted until it is fixed: %m",
				  a->keys_path);
		n = 0;
	} else
		log_info("API keys from %s: %zu", a->keys_path, n);
	a->n_keys = n;
	a->keys_st = st;
	a->keys_st_valid = have;
}

static bool
authorized(struct e2b_api *a, struct evhttp_request *req)
{
	keys_refresh(a);
	const char *key = evhttp_find_header(evhttp_request_get_input_headers(req), "X-API-Key");
	if (key && api_keys_match(a->keys, a->n_keys, key, strnlen(key, API_KEY_LEN + 1)) >= 0)
		return true;
	reply_error(req, 401,
		    "Invalid API key, please visit your Warren host's operator for a "
		    "key (warrenctl apikey create)");
	return false;
}

/* a peer's request (the right peer token) acts for a client of the front door it reached: that
 * client's API key must be valid here too (its SHA-256 in X-Warren-E2b-Client-Key, compared
 * with every key's in constant time), so a key of one host opens no other host's sandboxes */
static bool
peer_client_authorized(struct e2b_api *a, struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const char *hex = evhttp_find_header(h, "X-Warren-E2b-Client-Key");
	int count = 0;
	for (struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next)
		count += !strcasecmp(kv->key, "X-Warren-E2b-Client-Key");
	keys_refresh(a);
	int r = count == 1 ? api_keys_match_digest_hex(a->keys, a->n_keys, hex) : -EINVAL;
	if (r >= 0)
		return true;
	if (r == -EINVAL) {
		log_warning("A peer's request without a well-formed client key digest refused");
		reply_error(req, 401, "Invalid peer request: no client key digest");
	} else
		reply_error(req, 403,
			    "This API key is not valid on the host of this sandbox: give every "
			    "host the same key file");
	return false;
}

/* --- bodies --- */

static json_t *
read_body(struct evhttp_request *req, bool required)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	if (len == 0 && !required)
		return json_object();
	if (len > E2B_BODY_MAX) {
		reply_error(req, 413, "Request body larger than %d bytes", E2B_BODY_MAX);
		return NULL;
	}
	unsigned char *p = evbuffer_pullup(in, (ev_ssize_t)len);
	json_error_t err;
	json_t *j = p ? json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &err) : NULL;
	if (!j || !json_is_object(j)) {
		json_decref(j);
		reply_error(req, 400, "Request body must be a JSON object%s%s", j ? "" : ": ",
			    j ? "" : err.text);
		return NULL;
	}
	return j;
}

/* an optional non-negative integer field, at most max */
static int
get_uint(json_t *body, const char *name, uint32_t max, uint32_t *out, bool *present)
{
	json_t *v = json_object_get(body, name);
	if (present)
		*present = v && !json_is_null(v);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > (json_int_t)max)
		return -EINVAL;
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

static int
get_bool(json_t *body, const char *name, bool *out)
{
	json_t *v = json_object_get(body, name);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return -EINVAL;
	*out = json_is_true(v);
	return 0;
}

/* --- JSON shapes of the spec --- */

static json_t *
sandbox_json(struct e2b_api *a, const struct e2b_sandbox *s)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s}", "templateID", s->template, "sandboxID",
			      s->id, "alias", s->template, "clientID", "warren", "envdVersion",
			      a->envd_version);
	if (s->token[0])
		json_object_set_new(j, "envdAccessToken", json_string(s->token));
	json_object_set_new(j, "trafficAccessToken", json_null());
	json_object_set_new(j, "domain", a->domain ? json_string(a->domain) : json_null());
	return j;
}

static json_t *
detail_json(struct e2b_api *a, const struct e2b_sandbox *s, uint64_t mem_limit, bool with_token)
{
	char started[32], end[32];
	format_time(s->started_usec, started);
	format_time(s->end_usec, end);
	json_t *meta = json_object();
	for (size_t i = 0; i < s->n_meta; i++)
		json_object_set_new(meta, s->meta[i].key, json_string(s->meta[i].value));
	json_t *j =
		json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:i, s:o, s:s, s:s}",
			  "templateID", s->template, "alias", s->template, "sandboxID", s->id,
			  "clientID", "warren", "startedAt", started, "endAt", end, "envdVersion",
			  a->envd_version, "cpuCount", (int)a->cpu_count, "memoryMB",
			  (json_int_t)(mem_limit >> 20), "diskSizeMB", 0, "metadata", meta, "state",
			  s->paused ? "paused" : "running", "domain", a->domain ? a->domain : "");
	if (!a->domain)
		json_object_set_new(j, "domain", json_null());
	if (with_token && s->token[0])
		json_object_set_new(j, "envdAccessToken", json_string(s->token));
	json_object_set_new(j, "lifecycle",
			    json_pack("{s:s, s:b}", "onTimeout", s->auto_pause ? "pause" : "kill",
				      "autoResume", s->auto_pause));
	return j;
}

/* --- lifetimes: the supervisor enforces them --- */

/* Give the supervisor the lifetime ending at end_usec (SetTimeout, "pause" for autoPause
 * sandboxes, else "kill"): whole seconds from now, rounded up, at least 1 (E2B's timeout 0 ends
 * it at once; Warren's 0 would clear it). One enforcer: this daemon keeps no timer of its own,
 * its record keeps the end only to answer endAt. */
static int
lifetime_push(struct e2b_api *a, const struct e2b_sandbox *s, uint64_t end_usec, sd_bus_error *e)
{
	uint64_t now = e2b_now_usec();
	uint64_t seconds = end_usec > now ? (end_usec - now + 999999) / 1000000 : 1;
	int r = e2b_bus_set_timeout(a, s->id, seconds ? seconds : 1,
				    s->auto_pause ? "pause" : "kill", e);
	if (r < 0)
		log_warning_errno(r, "Sandbox %s: SetTimeout %llu s failed: %s", s->id,
				  (unsigned long long)seconds,
				  e && e->message ? e->message : strerror(-r));
	return r;
}

static int
lifetime_clear(struct e2b_api *a, const struct e2b_sandbox *s, sd_bus_error *e)
{
	int r = e2b_bus_set_timeout(a, s->id, 0, "", e);
	if (r < 0)
		log_warning_errno(r, "Sandbox %s: clearing its lifetime failed: %s", s->id,
				  e && e->message ? e->message : strerror(-r));
	return r;
}

/* --- keeping records true to the supervisor --- */

/* A record whose sandbox the supervisor no longer has (destroyed over D-Bus, lost, or killed at
 * the end of its lifetime) is dropped; one whose sandbox failed or exited is destroyed and
 * dropped (E2B has no dead sandboxes); an autoPause one past its end that the supervisor froze
 * is paused; a paused one a request thawed (the gateway thaws on demand) is running again with
 * its timeout restarted (a new SetTimeout). Only when the supervisor answered: a supervisor
 * away drops nothing. The first time it answers, every running record's lifetime is given to it
 * again (records from before the supervisor kept lifetimes, or a SetTimeout it missed). */
static void
reconcile(struct e2b_api *a)
{
	struct e2b_bus_entry *list = NULL;
	size_t n = 0;
	if (e2b_bus_list(a, &list, &n) < 0)
		return;
	bool changed = false, push_all = !a->lifetimes_pushed;
	a->lifetimes_pushed = true;
	uint64_t now = e2b_now_usec();
	for (struct e2b_sandbox *s = a->sandboxes, *next; s; s = next) {
		next = s->next;
		const char *state = NULL;
		for (size_t i = 0; i < n; i++)
			if (!strcmp(list[i].id, s->id))
				state = list[i].state;
		if (!state || !strcmp(state, "destroying")) {
			log_info("Sandbox %s is gone from the supervisor: record dropped", s->id);
			e2b_store_remove(a, s);
			changed = true;
		} else if (!strcmp(state, "failed") || !strcmp(state, "exited")) {
			log_info("Sandbox %s %s: destroyed", s->id, state);
			sd_bus_error e = SD_BUS_ERROR_NULL;
			e2b_bus_sandbox_call(a, s->id, "Destroy", &e);
			sd_bus_error_free(&e);
			e2b_store_remove(a, s);
			changed = true;
		} else if (s->paused && strcmp(state, "frozen")) {
			log_info("Sandbox %s was resumed by a request", s->id);
			s->paused = false;
			s->end_usec = now + (uint64_t)s->timeout_s * 1000000ull;
			lifetime_push(a, s, s->end_usec, NULL);
			changed = true;
		} else if (!s->paused && s->auto_pause && s->end_usec <= now) {
			/* past its end: the supervisor paused it, or it did and a request thawed it
			 * since (its lifetime is over: EndUSec 0), or it waits (an exec runs) */
			uint64_t end = 1;
			if (!strcmp(state, "frozen")) {
				log_info("Sandbox %s timed out: paused", s->id);
				s->paused = true;
				changed = true;
			} else if (e2b_bus_end_usec(a, s->id, &end) >= 0 && end == 0) {
				log_info(
					"Sandbox %s was paused at its end and resumed by a request",
					s->id);
				s->end_usec = now + (uint64_t)s->timeout_s * 1000000ull;
				lifetime_push(a, s, s->end_usec, NULL);
				changed = true;
			}
		} else if (!s->paused && !s->auto_pause && s->end_usec + 2000000 <= now) {
			/* past its end and not killed: the supervisor has no lifetime for it (a
			 * SetTimeout lost), so it gets one that ends at once */
			uint64_t end = 1;
			if (e2b_bus_end_usec(a, s->id, &end) >= 0 && end == 0)
				lifetime_push(a, s, s->end_usec, NULL);
		} else if (push_all && !s->paused) {
			lifetime_push(a, s, s->end_usec, NULL);
		}
	}
	free(list);
	if (changed)
		e2b_store_save(a);
}

/* fork tags: removed once no child is being restored from them any more */
static void
remove_pending_tags(struct e2b_api *a)
{
	for (size_t i = 0; i < a->n_pending_tags;) {
		if (e2b_bus_remove_tag(a, a->pending_tags[i]) == -EBUSY) {
			i++;
			continue;
		}
		memmove(a->pending_tags[i], a->pending_tags[i + 1],
			(a->n_pending_tags - i - 1) * sizeof a->pending_tags[0]);
		a->n_pending_tags--;
	}
}

void
e2b_http_tick(evutil_socket_t fd, short what, void *arg)
{
	struct e2b_api *a = arg;
	remove_pending_tags(a);
	if (++a->tick % RECONCILE_TICKS == 0)
		reconcile(a);
}

/* --- handlers --- */

static uint64_t
template_memory(struct e2b_api *a, const char *template)
{
	uint64_t mem = 0;
	e2b_bus_template_memory(a, template, &mem);
	return mem;
}

static int
parse_kv_object(json_t *obj, struct e2b_kv *out, size_t max, size_t key_max, size_t value_max,
		bool env, size_t *n)
{
	*n = 0;
	if (!obj || json_is_null(obj))
		return 0;
	if (!json_is_object(obj) || json_object_size(obj) > max)
		return -E2BIG;
	const char *k;
	json_t *v;
	json_object_foreach(obj, k, v)
	{
		if (!json_is_string(v) ||
		    (env ? !e2b_input_env_name_ok(k) : !e2b_input_text_ok(k, strlen(k), key_max)) ||
		    !e2b_input_text_ok(json_string_value(v), json_string_length(v), value_max)) {
			e2b_kv_free(out, *n);
			*n = 0;
			return -EINVAL;
		}
		out[*n].key = strdup(k);
		out[*n].value = strdup(json_string_value(v));
		(*n)++;
		if (!out[*n - 1].key || !out[*n - 1].value) {
			e2b_kv_free(out, *n);
			*n = 0;
			return -ENOMEM;
		}
	}
	return 0;
}

static void
random_hex(char *out, size_t bytes)
{
	static const char x[] = "0123456789abcdef";
	uint8_t raw[64];
	if (bytes > sizeof raw || getrandom(raw, bytes, 0) != (ssize_t)bytes)
		abort(); /* getrandom() on a booted kernel does not fail: an invariant */
	for (size_t i = 0; i < bytes; i++) {
		out[2 * i] = x[raw[i] >> 4];
		out[2 * i + 1] = x[raw[i] & 15];
	}
	out[2 * bytes] = 0;
	explicit_bzero(raw, sizeof raw);
}

static int
call_init(struct e2b_api *a, struct e2b_sandbox *s, json_t *envs, bool required, char *why,
	  size_t whylen)
{
	char now[32];
	format_time(e2b_now_usec(), now);
	json_t *body = json_pack("{s:s}", "timestamp", now);
	if (envs)
		json_object_set(body, "envVars", envs);
	if (s->token[0])
		json_object_set_new(body, "accessToken", json_string(s->token));
	if (a->default_user && *a->default_user)
		json_object_set_new(body, "defaultUser", json_string(a->default_user));
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!text)
		return -ENOMEM;
	int r = e2b_agent_init(a, s->id, text, strlen(text), NULL, required ? 15000 : 2000, why,
			       whylen);
	explicit_bzero(text, strlen(text));
	free(text);
	return r;
}

/* what e2b_input_network_key needs to know of a value */
static enum e2b_json_kind
json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_TRUE:
		return E2B_JSON_TRUE;
	case JSON_FALSE:
		return E2B_JSON_FALSE;
	case JSON_STRING:
		return E2B_JSON_STRING;
	case JSON_INTEGER:
	case JSON_REAL:
		return E2B_JSON_NUMBER;
	case JSON_ARRAY:
		return E2B_JSON_ARRAY;
	case JSON_OBJECT:
		return E2B_JSON_OBJECT;
	default:
		return E2B_JSON_NULL;
	}
}

/* network: {allowOut: [...], denyOut: [...]} with allow_internet_access, as an egress policy
 * for CreateSandbox: "" keeps the template's (e2b_input_network_policy). Every other key asks
 * for what Warren does anyway or is refused (e2b_input_network_key): a security setting is
 * never silently dropped. */
static int
network_policy(json_t *net, bool internet, char *out, size_t size, char *why, size_t whylen)
{
	const char *lists[2][E2B_NETWORK_MAX];
	size_t n[2] = {0, 0};
	const char *names[2] = {"allowOut", "denyOut"};
	const char *key;
	json_t *val;
	if (json_is_object(net))
		json_object_foreach(net, key, val)
		{
			size_t count = json_is_object(val)  ? json_object_size(val)
				       : json_is_array(val) ? json_array_size(val)
							    : 0;
			if (e2b_input_network_key(key, json_kind(val), count, why, whylen) < 0)
				return -EINVAL;
		}
	for (int k = 0; net && !json_is_null(net) && k < 2; k++) {
		json_t *arr = json_is_object(net) ? json_object_get(net, names[k]) : NULL, *v;
		size_t i;
		if (!json_is_object(net) ||
		    (arr && !json_is_null(arr) &&
		     (!json_is_array(arr) || json_array_size(arr) > E2B_NETWORK_MAX))) {
			snprintf(why, whylen,
				 "network must be an object whose allowOut and denyOut are arrays "
				 "of "
				 "at most %d strings",
				 E2B_NETWORK_MAX);
			return -EINVAL;
		}
		json_array_foreach(arr, i, v)
		{
			const char *s = json_string_value(v);
			if (!s || !e2b_input_text_ok(s, strlen(s), 64)) {
				snprintf(why, whylen,
					 "network.%s holds strings of at most 64 bytes, no "
					 "control characters",
					 names[k]);
				return -EINVAL;
			}
			lists[k][n[k]++] = s;
		}
	}
	return e2b_input_network_policy(lists[0], n[0], lists[1], n[1], internet, out, size, why,
					whylen);
}

/* The host's own subnets are closed to "on" (netnsd's deny set) but not to a list, which netnsd
 * checks first: a client's list may not name them. True when refused (answered 400). */
static bool
refuse_host_subnets(struct e2b_api *a, struct evhttp_request *req, const char *egress)
{
	struct egress_policy asked;
	size_t hit = 0;
	if (egress[0] && egress_policy_parse(egress, &asked, NULL, 0) == 0)
		hit = egress_policy_overlaps(&asked, a->host_nets, a->n_host_nets);
	if (hit)
		reply_error(req, 400,
			    "network.allowOut: entry %zu overlaps a subnet of this host's own "
			    "interfaces",
			    hit);
	return hit != 0;
}

int
e2b_http_create(struct e2b_api *a, struct evhttp_request *req, bool placed, bool may_refuse)
{
	int ret = 0;
	json_t *body = read_body(req, true);
	if (!body)
		return 0;
	const char *template = json_string_value(json_object_get(body, "templateID"));
	uint32_t timeout = 15;
	/* secure: E2B's documented default is true, and the SDK (2.x) sends no field for it:
	 * an absent one makes a token, so no other local client of the gateway can drive the
	 * sandbox's agent; `secure: false` asks for none */
	bool auto_pause = false, secure = true, internet = true;
	struct e2b_kv meta[E2B_META_MAX];
	size_t n_meta = 0, n_env = 0;
	struct e2b_kv env_check[E2B_ENV_MAX];
	json_t *envs = json_object_get(body, "envVars");
	if (!template || !e2b_input_template_ok(template)) {
		reply_error(req, 400,
			    "templateID must be a template name ([A-Za-z0-9._-], at most "
			    "%d characters)",
			    E2B_TEMPLATE_MAX);
		goto out;
	}
	if (get_uint(body, "timeout", a->max_timeout_s, &timeout, NULL) < 0) {
		reply_error(req, 400, "timeout must be an integer from 0 to %u seconds",
			    a->max_timeout_s);
		goto out;
	}
	if (get_bool(body, "autoPause", &auto_pause) < 0 || get_bool(body, "secure", &secure) < 0 ||
	    get_bool(body, "allow_internet_access", &internet) < 0) {
		reply_error(req, 400, "autoPause, secure and allow_internet_access are booleans");
		goto out;
	}
	char egress[512], bad[256];
	if (network_policy(json_object_get(body, "network"), internet, egress, sizeof egress, bad,
			   sizeof bad) < 0) {
		reply_error(req, 400, "%s", bad);
		goto out;
	}
	json_t *mcp = json_object_get(body, "mcp"), *vol = json_object_get(body, "volumeMounts");
	if ((mcp && !json_is_null(mcp)) || (vol && json_array_size(vol) > 0)) {
		reply_error(req, 400, "mcp and volumeMounts are not implemented by Warren");
		goto out;
	}
	if (parse_kv_object(json_object_get(body, "metadata"), meta, E2B_META_MAX, E2B_META_KEY_MAX,
			    E2B_META_VALUE_MAX, false, &n_meta) < 0) {
		reply_error(req, 400,
			    "metadata must be an object of at most %d strings (keys up to %d "
			    "bytes, values up to %d, no control characters)",
			    E2B_META_MAX, E2B_META_KEY_MAX, E2B_META_VALUE_MAX);
		goto out;
	}
	if (parse_kv_object(envs, env_check, E2B_ENV_MAX, E2B_ENV_NAME_MAX, E2B_ENV_VALUE_MAX, true,
			    &n_env) < 0) {
		reply_error(req, 400,
			    "envVars must be an object of at most %d strings (names [A-Za-z_]"
			    "[A-Za-z0-9_]*, values up to %d bytes, no control characters)",
			    E2B_ENV_MAX, E2B_ENV_VALUE_MAX);
		goto out;
	}
	e2b_kv_free(env_check, n_env);
	if (a->n_sandboxes >= a->max_sandboxes) {
		if (may_refuse) {
			ret = -EBUSY;
			goto out;
		}
		reply_error(req, 429, "This host keeps at most %zu E2B sandboxes",
			    a->max_sandboxes);
		goto out;
	}
	uint64_t mem = 0;
	int r = e2b_bus_template_memory(a, template, &mem);
	if (r == -ENOENT) {
		reply_error(req, 404, "template '%s' not found", template);
		goto out;
	}
	if (r >= 0 && refuse_host_subnets(a, req, egress))
		goto out;
	char id[E2B_ID_LEN + 1];
	sd_bus_error e = SD_BUS_ERROR_NULL;
	/* a create placed here by the cluster's policy is refused at once when this host has no
	 * free slot after all (its record was stale): the front door tries the next host */
	r = r < 0 ? r
		  : e2b_bus_create(a, template, egress[0] ? egress : NULL, placed ? 1000 : 0, id,
				   &e);
	if (r < 0) {
		int status = e2b_bus_error_status(&e, r);
		if (may_refuse && status == 503 &&
		    (sd_bus_error_has_name(&e, "org.warren.Warren1.Error.PoolExhausted") ||
		     sd_bus_error_has_name(&e, "org.warren.Warren1.Error.HostFull"))) {
			sd_bus_error_free(&e);
			ret = -EBUSY;
			goto out;
		}
		reply_error(req, status, "Cannot create a sandbox from '%s': %s", template,
			    e.message ? e.message : strerror(-r));
		sd_bus_error_free(&e);
		goto out;
	}
	struct e2b_sandbox *s = e2b_store_add(a, id, template);
	if (!s) {
		e2b_bus_sandbox_call(a, id, "Destroy", NULL);
		reply_error(req, 500, "Out of memory");
		goto out;
	}
	uint64_t now = e2b_now_usec();
	s->started_usec = now;
	s->timeout_s = timeout;
	s->end_usec = now + (uint64_t)timeout * 1000000ull;
	s->auto_pause = auto_pause;
	memcpy(s->meta, meta, n_meta * sizeof *meta);
	s->n_meta = n_meta;
	n_meta = 0;
	if (secure)
		random_hex(s->token, E2B_TOKEN_HEX / 2);
	/* the agent learns its env vars and token (and the default user, the clock) before the
	 * client may reach it; a create that needs nothing from /init (secure: false, no env
	 * vars) makes none */
	if (secure || json_object_size(envs) > 0) {
		char why[256];
		r = call_init(a, s, json_object_size(envs) ? envs : NULL, true, why, sizeof why);
		if (r < 0) {
			log_warning("Sandbox %s: %s; destroying it", id, why);
			e2b_bus_sandbox_call(a, id, "Destroy", NULL);
			e2b_store_remove(a, s);
			reply_error(req, 502, "Sandbox %s did not start: %s", id, why);
			goto out;
		}
	}
	/* the supervisor enforces the lifetime: a sandbox it would not end is not kept */
	if (lifetime_push(a, s, s->end_usec, &e) < 0) {
		int status = e2b_bus_error_status(&e, -EIO);
		e2b_bus_sandbox_call(a, id, "Destroy", NULL);
		e2b_store_remove(a, s);
		reply_error(req, status, "Cannot give sandbox %s its lifetime: %s", id,
			    e.message ? e.message : "the supervisor refused");
		sd_bus_error_free(&e);
		goto out;
	}
	/* a lifetime that could not be written would not survive a restart: no sandbox then */
	if (e2b_store_save(a) < 0) {
		e2b_bus_sandbox_call(a, id, "Destroy", NULL);
		e2b_store_remove(a, s);
		reply_error(req, 500, "Cannot record the sandbox's lifetime");
		goto out;
	}
	log_info("Sandbox %s created from %s (timeout %u s%s%s)", id, template, timeout,
		 auto_pause ? ", pauses" : "", secure ? ", secure" : "");
	reply_json(req, 201, sandbox_json(a, s));
out:
	e2b_kv_free(meta, n_meta);
	json_decref(body);
	return ret;
}

struct list_query {
	unsigned states, limit;
	struct e2b_kv meta[E2B_META_MAX];
	size_t n_meta;
	bool has_token;
	uint64_t token_started;
	char token_id[E2B_ID_LEN + 1];
};

static int
parse_list_query(struct evhttp_request *req, struct list_query *q, bool v2)
{
	struct evkeyvalq params;
	const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
	memset(q, 0, sizeof *q);
	q->states = v2 ? (E2B_STATE_RUNNING | E2B_STATE_PAUSED) : E2B_STATE_RUNNING;
	q->limit = v2 ? 100 : UINT32_MAX;
	TAILQ_INIT(&params);
	if (query && strlen(query) > 16384) {
		reply_error(req, 400, "Query too long");
		return -EINVAL;
	}
	if (query && evhttp_parse_query_str(query, &params) < 0) {
		reply_error(req, 400, "Malformed query");
		return -EINVAL;
	}
	int r = 0;
	struct evkeyval *kv;
	TAILQ_FOREACH(kv, &params, next)
	{
		const char *k = kv->key, *v = kv->value;
		if (!e2b_input_text_ok(v, strlen(v), 16384))
			r = -EINVAL;
		else if (!strcmp(k, "metadata"))
			r = q->n_meta ? -EINVAL
				      : e2b_input_parse_metadata_query(v, q->meta, E2B_META_MAX,
								       &q->n_meta);
		else if (v2 && !strcmp(k, "state"))
			r = e2b_input_parse_states(v, &q->states);
		else if (v2 && !strcmp(k, "limit"))
			r = e2b_input_parse_limit(v, &q->limit);
		else if (v2 && !strcmp(k, "nextToken")) {
			r = e2b_input_parse_token(v, &q->token_started, q->token_id);
			q->has_token = r == 0;
		}
		/* others (order, template, startedAfter) are ignored as E2B ignores unknown ones */
		if (r < 0) {
			reply_error(req, 400, "Bad query parameter '%.64s'", k);
			break;
		}
	}
	evhttp_clear_headers(&params);
	if (r < 0)
		e2b_kv_free(q->meta, q->n_meta);
	return r;
}

static bool
meta_matches(const struct e2b_sandbox *s, const struct list_query *q)
{
	for (size_t i = 0; i < q->n_meta; i++) {
		bool found = false;
		for (size_t j = 0; j < s->n_meta && !found; j++)
			found = !strcmp(s->meta[j].key, q->meta[i].key) &&
				!strcmp(s->meta[j].value, q->meta[i].value);
		if (!found)
			return false;
	}
	return true;
}

void
e2b_http_list_reply(struct evhttp_request *req, struct e2b_list_entry *v, size_t n,
		    const struct e2b_page *page)
{
	n = e2b_list_sort(v, n);
	size_t start = 0;
	if (page->has_token)
		while (start < n && (v[start].started_usec < page->token_started ||
				     (v[start].started_usec == page->token_started &&
				      strcmp(v[start].id, page->token_id) <= 0)))
			start++;
	json_t *out = json_array();
	size_t end = start;
	for (; end < n && end - start < page->limit; end++)
		json_array_append(out, v[end].j);
	if (page->v2 && end < n) {
		char token[E2B_TOKEN_MAX];
		e2b_input_format_token(v[end - 1].started_usec, v[end - 1].id, token);
		evhttp_add_header(evhttp_request_get_output_headers(req), "x-next-token", token);
	}
	for (size_t i = 0; i < n; i++)
		json_decref(v[i].j);
	free(v);
	reply_json(req, 200, out);
}

/* peer: a front door of the cluster asks for this host's part of its list: every match, with
 * its start time for the merge (_startedUsec, taken off before a client sees it) */
static void
handle_list(struct e2b_api *a, struct evhttp_request *req, bool v2, bool peer)
{
	struct list_query q;
	if (parse_list_query(req, &q, v2) < 0)
		return;
	reconcile(a);
	struct e2b_list_entry *v = calloc(a->n_sandboxes + 1, sizeof *v);
	if (!v) {
		e2b_kv_free(q.meta, q.n_meta);
		reply_error(req, 500, "Out of memory");
		return;
	}
	/* one ListTemplates per template, not per sandbox */
	struct {
		const char *template;
		uint64_t mem;
	} memo[16];
	size_t n = 0, n_memo = 0;
	for (struct e2b_sandbox *s = a->sandboxes; s; s = s->next) {
		unsigned st = s->paused ? E2B_STATE_PAUSED : E2B_STATE_RUNNING;
		if (!(q.states & st) || !meta_matches(s, &q))
			continue;
		uint64_t mem = 0;
		size_t k;
		for (k = 0; k < n_memo && strcmp(memo[k].template, s->template); k++)
			;
		if (k < n_memo) {
			mem = memo[k].mem;
		} else {
			mem = template_memory(a, s->template);
			if (n_memo < 16)
				memo[n_memo++] = (typeof(memo[0])){s->template, mem};
		}
		v[n].started_usec = s->started_usec;
		memcpy(v[n].id, s->id, sizeof v[n].id);
		v[n].j = detail_json(a, s, mem, false);
		if (peer)
			json_object_set_new(v[n].j, "_startedUsec",
					    json_integer((json_int_t)s->started_usec));
		n++;
	}
	e2b_kv_free(q.meta, q.n_meta);
	struct e2b_page page = {.v2 = v2,
				.has_token = q.has_token,
				.limit = peer ? UINT32_MAX : q.limit,
				.token_started = q.token_started};
	memcpy(page.token_id, q.token_id, sizeof page.token_id);
	if (peer)
		page.v2 = page.has_token = false;
	if (a->clustered && !peer)
		return e2b_cluster_list(a, req, v, n, &page);
	e2b_http_list_reply(req, v, n, &page);
}

/* the record of /sandboxes/{id}..., after a check with the supervisor; 404 when there is none */
static struct e2b_sandbox *
lookup(struct e2b_api *a, struct evhttp_request *req, const char *id)
{
	struct e2b_sandbox *s = e2b_input_id_ok(id) ? e2b_store_find(a, id) : NULL;
	if (s) {
		reconcile(a);
		s = e2b_store_find(a, id);
	}
	if (!s)
		reply_error(req, 404, "sandbox \"%.*s\" not found", E2B_ID_LEN, id);
	return s;
}

static void
handle_kill(struct e2b_api *a, struct evhttp_request *req, struct e2b_sandbox *s)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	int r = e2b_bus_sandbox_call(a, s->id, "Destroy", &e);
	int status = r < 0 ? e2b_bus_error_status(&e, r) : 204;
	if (r < 0 && status != 404) {
		reply_error(req, status, "Cannot kill sandbox %s: %s", s->id,
			    e.message ? e.message : strerror(-r));
		sd_bus_error_free(&e);
		return;
	}
	sd_bus_error_free(&e);
	log_info("Sandbox %s killed", s->id);
	e2b_store_remove(a, s);
	e2b_store_save(a);
	if (status == 404)
		reply_error(req, 404, "sandbox not found");
	else
		reply_empty(req, 204);
}

/* PUT /sandboxes/{id}/network: the sandbox's egress from now on, replacing what it had (an
 * omitted field is cleared: {} is the template's policy again), never more than its template's
 * (the supervisor checks, SetEgressWithinTemplate) nor a subnet of this host's. */
static void
handle_network(struct e2b_api *a, struct evhttp_request *req, struct e2b_sandbox *s)
{
	json_t *body = read_body(req, true);
	if (!body)
		return;
	bool internet = true;
	char egress[512], bad[256];
	if (!json_is_object(body) || get_bool(body, "allow_internet_access", &internet) < 0) {
		reply_error(req, 400, "The body is an object; allow_internet_access a boolean");
		goto out;
	}
	/* the rest is create's network object */
	json_object_del(body, "allow_internet_access");
	if (network_policy(body, internet, egress, sizeof egress, bad, sizeof bad) < 0) {
		reply_error(req, 400, "%s", bad);
		goto out;
	}
	if (refuse_host_subnets(a, req, egress))
		goto out;
	if (s->paused) {
		reply_error(req, 409, "Sandbox %s is paused: resume it first", s->id);
		goto out;
	}
	sd_bus_error e = SD_BUS_ERROR_NULL;
	int r = e2b_bus_set_egress(a, s->id, egress, &e);
	if (r < 0)
		reply_error(req, e2b_bus_error_status(&e, r),
			    "Cannot change the network of sandbox %s: %s", s->id,
			    e.message ? e.message : strerror(-r));
	else
		reply_empty(req, 204);
	sd_bus_error_free(&e);
out:
	json_decref(body);
}

static void
handle_timeout(struct e2b_api *a, struct evhttp_request *req, struct e2b_sandbox *s, bool refresh)
{
	json_t *body = read_body(req, !refresh);
	if (!body)
		return;
	uint32_t t = 15;
	bool present = false;
	int r = get_uint(body, refresh ? "duration" : "timeout", refresh ? 3600 : a->max_timeout_s,
			 &t, &present);
	json_decref(body);
	if (r < 0 || (!refresh && !present)) {
		reply_error(req, 400, "%s must be an integer from 0 to %u seconds",
			    refresh ? "duration" : "timeout", refresh ? 3600 : a->max_timeout_s);
		return;
	}
	uint64_t end = e2b_now_usec() + (uint64_t)t * 1000000ull;
	/* a timeout replaces the lifetime; a refresh only extends it. A paused sandbox has none
	 * in the supervisor: its resume gives it the new one. */
	if ((!refresh || end > s->end_usec) && !s->paused) {
		sd_bus_error e = SD_BUS_ERROR_NULL;
		r = lifetime_push(a, s, end, &e);
		if (r < 0) {
			reply_error(req, e2b_bus_error_status(&e, r),
				    "Cannot set the timeout of sandbox %s: %s", s->id,
				    e.message ? e.message : strerror(-r));
			sd_bus_error_free(&e);
			return;
		}
	}
	if (!refresh || end > s->end_usec)
		s->end_usec = end;
	if (!refresh)
		s->timeout_s = t;
	if (e2b_store_save(a) < 0) {
		reply_error(req, 500, "Cannot record the sandbox's lifetime");
		return;
	}
	reply_empty(req, 204);
}

static void
handle_pause(struct e2b_api *a, struct evhttp_request *req, struct e2b_sandbox *s)
{
	if (s->paused) {
		reply_error(req, 409, "sandbox %s is already paused", s->id);
		return;
	}
	char state[24] = "";
	sd_bus_error e = SD_BUS_ERROR_NULL;
	/* a paused sandbox does not expire: its lifetime is cleared first (a "kill" one must not
	 * end it while paused), given back if the freeze fails */
	int r = lifetime_clear(a, s, &e);
	if (r >= 0)
		r = e2b_bus_state(a, s->id, state, sizeof state);
	/* an idle sandbox Warren froze by itself is paused already */
	if (r >= 0 && strcmp(state, "frozen"))
		r = e2b_bus_sandbox_call(a, s->id, "Freeze", &e);
	if (r < 0 && r != -ENOENT)
		lifetime_push(a, s, s->end_usec, NULL);
	if (r < 0) {
		reply_error(req, r == -ENOENT ? 404 : e2b_bus_error_status(&e, r),
			    "Cannot pause sandbox %s: %s", s->id,
			    e.message ? e.message : strerror(-r));
		sd_bus_error_free(&e);
		return;
	}
	s->paused = true;
	e2b_store_save(a);
	log_info("Sandbox %s paused", s->id);
	reply_empty(req, 204);
}

/* resume (deprecated) and connect: thaw a paused sandbox, give it a lifetime again */
static void
handle_resume(struct e2b_api *a, struct evhttp_request *req, struct e2b_sandbox *s, bool connect)
{
	json_t *body = read_body(req, false);
	if (!body)
		return;
	uint32_t t = s->timeout_s;
	bool present = false;
	int r = get_uint(body, "timeout", a->max_timeout_s, &t, &present);
	json_decref(body);
	if (r < 0) {
		reply_error(req, 400, "timeout must be an integer from 0 to %u seconds",
			    a->max_timeout_s);
		return;
	}
	uint64_t end = e2b_now_usec() + (uint64_t)t * 1000000ull;
	if (!s->paused) {
		if (!connect) {
			reply_error(req, 409, "sandbox %s is already running", s->id);
			return;
		}
		/* connect to a running sandbox only extends its lifetime */
		if (end > s->end_usec) {
			sd_bus_error e = SD_BUS_ERROR_NULL;
			r = lifetime_push(a, s, end, &e);
			if (r < 0) {
				reply_error(req, e2b_bus_error_status(&e, r),
					    "Cannot extend the lifetime of sandbox %s: %s", s->id,
					    e.message ? e.message : strerror(-r));
				sd_bus_error_free(&e);
				return;
			}
			s->end_usec = end;
		}
		e2b_store_save(a);
		reply_json(req, 200, sandbox_json(a, s));
		return;
	}
	char state[24] = "";
	sd_bus_error e = SD_BUS_ERROR_NULL;
	/* the lifetime first: a resumed sandbox never runs without one (cleared again if the
	 * thaw fails: the sandbox stays paused) */
	r = lifetime_push(a, s, end, &e);
	if (r >= 0)
		r = e2b_bus_state(a, s->id, state, sizeof state);
	if (r >= 0 && !strcmp(state, "frozen"))
		r = e2b_bus_sandbox_call(a, s->id, "Thaw", &e);
	if (r < 0 && r != -ENOENT)
		lifetime_clear(a, s, NULL);
	if (r < 0) {
		reply_error(req, r == -ENOENT ? 404 : e2b_bus_error_status(&e, r),
			    "Cannot resume sandbox %s: %s", s->id,
			    e.message ? e.message : strerror(-r));
		sd_bus_error_free(&e);
		return;
	}
	s->paused = false;
	s->timeout_s = t;
	s->end_usec = end;
	e2b_store_save(a);
	log_info("Sandbox %s resumed", s->id);
	reply_json(req, 201, sandbox_json(a, s));
}

/* fork: Warren's BranchSandbox (a checkpoint of the running sandbox, the parent restored in
 * place, count children restored from the same image). Each child is a copy of the parent's
 * memory, so its agent holds the parent's env vars and access token: the record copies the
 * token and the metadata; the lifetime is the request's timeout (or the parent's). */
#define E2B_FORK_MAX 16
static void
handle_fork(struct e2b_api *a, struct evhttp_request *req, struct e2b_sandbox *s)
{
	json_t *body = read_body(req, false);
	if (!body)
		return;
	uint32_t t = s->timeout_s, count = 1;
	int r = get_uint(body, "timeout", a->max_timeout_s, &t, NULL);
	if (r >= 0)
		r = get_uint(body, "count", E2B_FORK_MAX, &count, NULL);
	json_decref(body);
	if (r < 0 || count < 1) {
		reply_error(req, 400, "count is 1 to %d, timeout 0 to %u seconds", E2B_FORK_MAX,
			    a->max_timeout_s);
		return;
	}
	if (s->paused) {
		reply_error(req, 409, "sandbox %s is paused; connect to it first", s->id);
		return;
	}
	if (a->n_sandboxes + count > a->max_sandboxes) {
		reply_error(req, 429, "This host keeps at most %zu E2B sandboxes",
			    a->max_sandboxes);
		return;
	}
	char tag[32], rnd[13];
	random_hex(rnd, 6);
	snprintf(tag, sizeof tag, "e2bfork-%s", rnd);
	char ids[E2B_FORK_MAX][E2B_ID_LEN + 1];
	size_t n = 0;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	if (a->n_pending_tags == sizeof a->pending_tags / sizeof a->pending_tags[0]) {
		reply_error(req, 503, "Earlier forks' images are still being removed; try again");
		return;
	}
	r = e2b_bus_branch(a, s->id, tag, count, ids, &n, &e);
	/* the image is not needed once the children run: removed now or on a later tick */
	if (e2b_bus_remove_tag(a, tag) == -EBUSY)
		snprintf(a->pending_tags[a->n_pending_tags++], sizeof a->pending_tags[0], "%s",
			 tag);
	if (r < 0) {
		reply_error(req, r == -ENOENT ? 404 : e2b_bus_error_status(&e, r),
			    "Cannot fork sandbox %s: %s", s->id,
			    e.message ? e.message : strerror(-r));
		sd_bus_error_free(&e);
		return;
	}
	json_t *out = json_array();
	uint64_t now = e2b_now_usec();
	for (size_t i = 0; i < n; i++) {
		struct e2b_sandbox *c = e2b_store_add(a, ids[i], s->template);
		if (!c) {
			json_array_append_new(out, json_pack("{s:{s:i, s:s}}", "error", "code", 500,
							     "message", "out of memory"));
			continue;
		}
		c->started_usec = now;
		c->timeout_s = t;
		c->end_usec = now + (uint64_t)t * 1000000ull;
		c->auto_pause = s->auto_pause;
		if (lifetime_push(a, c, c->end_usec, NULL) < 0) {
			/* no child the supervisor would not end */
			e2b_bus_sandbox_call(a, c->id, "Destroy", NULL);
			e2b_store_remove(a, c);
			json_array_append_new(out,
					      json_pack("{s:{s:i, s:s}}", "error", "code", 503,
							"message", "no lifetime could be set"));
			continue;
		}
		memcpy(c->token, s->token, sizeof c->token);
		size_t k;
		for (k = 0; k < s->n_meta; k++) {
			c->meta[k].key = strdup(s->meta[k].key);
			c->meta[k].value = strdup(s->meta[k].value);
			if (!c->meta[k].key || !c->meta[k].value) {
				free(c->meta[k].key);
				free(c->meta[k].value);
				c->meta[k].key = c->meta[k].value = NULL;
				log_error_errno(-ENOMEM, "Sandbox %s: metadata not copied: %m",
						c->id);
				break;
			}
		}
		c->n_meta = k;
		json_array_append_new(out, json_pack("{s:o}", "sandbox", sandbox_json(a, c)));
	}
	for (size_t i = n; i < count; i++)
		json_array_append_new(out, json_pack("{s:{s:i, s:s}}", "error", "code", 500,
						     "message", "the child did not start"));
	if (e2b_store_save(a) < 0) {
		/* no sandbox without a recorded lifetime */
		for (size_t i = 0; i < n; i++) {
			struct e2b_sandbox *c = e2b_store_find(a, ids[i]);
			e2b_bus_sandbox_call(a, ids[i], "Destroy", NULL);
			if (c)
				e2b_store_remove(a, c);
		}
		json_decref(out);
		reply_error(req, 500, "Cannot record the children's lifetimes");
		return;
	}
	log_info("Sandbox %s forked into %zu", s->id, n);
	reply_json(req, 200, out);
}

static json_t *
metric_json(struct e2b_api *a, const struct e2b_sandbox *s)
{
	uint64_t used = 0, now = e2b_now_usec();
	char ts[32];
	format_time(now, ts);
	if (e2b_bus_memory_current(a, s->id, &used) < 0)
		return NULL;
	/* Warren measures memory per sandbox; CPU and disk use are not measured (docs/E2B.md) */
	return json_pack("{s:s, s:I, s:i, s:f, s:I, s:I, s:I, s:I}", "timestamp", ts,
			 "timestampUnix", (json_int_t)(now / 1000000), "cpuCount",
			 (int)a->cpu_count, "cpuUsedPct", 0.0, "memUsed", (json_int_t)used,
			 "memTotal", (json_int_t)template_memory(a, s->template), "diskUsed",
			 (json_int_t)0, "diskTotal", (json_int_t)0);
}

static void
handle_metrics(struct e2b_api *a, struct evhttp_request *req, struct e2b_sandbox *s)
{
	json_t *m = metric_json(a, s), *out = json_array();
	if (m)
		json_array_append_new(out, m);
	reply_json(req, 200, out);
}

static void
handle_health(struct evhttp_request *req)
{
	reply_json(req, 200, json_pack("{s:s}", "status", "ok"));
}

/* a create at this front door of a cluster: a body this host would refuse is refused here
 * (the local create's own answer), else clusterd places it */
static void
create_placed(struct e2b_api *a, struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	unsigned char *p = len && len <= E2B_BODY_MAX ? evbuffer_pullup(in, (ev_ssize_t)len) : NULL;
	json_error_t err;
	json_t *j = p ? json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &err) : NULL;
	const char *t = json_string_value(json_object_get(j, "templateID"));
	if (!t || !e2b_input_template_ok(t)) {
		json_decref(j);
		e2b_http_create(a, req, false, false);
		return;
	}
	char template[E2B_TEMPLATE_MAX + 1];
	snprintf(template, sizeof template, "%s", t);
	json_decref(j);
	e2b_cluster_create(a, req, template);
}

static void
on_request(struct evhttp_request *req, void *arg)
{
	struct e2b_api *a = arg;
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	if (!path || !e2b_input_text_ok(path, strlen(path), 256)) {
		reply_error(req, 404, "Not found");
		return;
	}
	if (!strcmp(path, "/health")) {
		handle_health(req);
		return;
	}
	/* on a cluster, the URI may go on to another host's control plane in its request line:
	 * nothing that could split or bend it there */
	if (a->clustered && !e2b_input_uri_ok(evhttp_request_get_uri(req))) {
		reply_error(req, 400, "Invalid request URI: printable ASCII only");
		return;
	}
	/* another host's control plane (the E2B front door on a cluster) with the peer token:
	 * answered from this host's records only, never forwarded again. A wrong token is
	 * refused, never taken for a missing one. */
	int peer = e2b_cluster_peer(a, req);
	if (peer < 0) {
		log_warning("A request with a wrong peer token refused");
		reply_error(req, 401, "Invalid peer token");
		return;
	}
	if (!peer && !authorized(a, req))
		return;
	if (peer && !peer_client_authorized(a, req))
		return;
	bool front = a->clustered && !peer; /* this host answers for the cluster */
	bool v2 = !strncmp(path, "/v2/", 4);
	const char *p = v2 ? path + 3 : path; /* "/sandboxes..." */
	if (!strcmp(p, "/sandboxes")) {
		if (m == EVHTTP_REQ_POST && front)
			create_placed(a, req);
		else if (m == EVHTTP_REQ_POST)
			e2b_http_create(a, req, peer, false);
		else if (m == EVHTTP_REQ_GET)
			handle_list(a, req, v2, peer);
		else
			reply_error(req, 405, "Method not allowed");
		return;
	}
	if (strncmp(p, "/sandboxes/", 11)) {
		reply_error(req, 404, "Not found");
		return;
	}
	char id[E2B_ID_LEN + 2] = "";
	const char *rest = p + 11, *slash = strchr(rest, '/');
	size_t idlen = slash ? (size_t)(slash - rest) : strlen(rest);
	const char *action = slash ? slash + 1 : "";
	if (!strcmp(rest, "metrics") && m == EVHTTP_REQ_GET) {
		/* GET /sandboxes/metrics?sandbox_ids=a,b: our records among them */
		struct evkeyvalq params;
		TAILQ_INIT(&params);
		const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
		json_t *all = json_object();
		if (query && strlen(query) <= 4096 && evhttp_parse_query_str(query, &params) == 0) {
			const char *ids = evhttp_find_header(&params, "sandbox_ids");
			char one[E2B_ID_LEN + 1];
			for (const char *c = ids; c && *c;) {
				size_t l = strcspn(c, ",");
				if (l == E2B_ID_LEN) {
					memcpy(one, c, l);
					one[l] = 0;
					struct e2b_sandbox *s = e2b_input_id_ok(one)
									? e2b_store_find(a, one)
									: NULL;
					json_t *mj = s ? metric_json(a, s) : NULL;
					if (mj)
						json_object_set_new(all, one, mj);
				}
				c += l + (c[l] == ',');
			}
		}
		evhttp_clear_headers(&params);
		reply_json(req, 200, json_pack("{s:o}", "sandboxes", all));
		return;
	}
	if (idlen <= E2B_ID_LEN)
		memcpy(id, rest, idlen);
	/* a sandbox this host has no record of may be another host's */
	if (front && e2b_input_id_ok(id) && !e2b_store_find(a, id))
		return e2b_cluster_forward(a, req, id);
	struct e2b_sandbox *s = lookup(a, req, id);
	if (!s)
		return;
	if (!*action && m == EVHTTP_REQ_GET)
		reply_json(req, 200, detail_json(a, s, template_memory(a, s->template), true));
	else if (!*action && m == EVHTTP_REQ_DELETE)
		handle_kill(a, req, s);
	else if (!strcmp(action, "timeout") && m == EVHTTP_REQ_POST)
		handle_timeout(a, req, s, false);
	else if (!strcmp(action, "refreshes") && m == EVHTTP_REQ_POST)
		handle_timeout(a, req, s, true);
	else if (!strcmp(action, "pause") && m == EVHTTP_REQ_POST)
		handle_pause(a, req, s);
	else if (!strcmp(action, "resume") && m == EVHTTP_REQ_POST)
		handle_resume(a, req, s, false);
	else if (!strcmp(action, "connect") && m == EVHTTP_REQ_POST)
		handle_resume(a, req, s, true);
	else if (!strcmp(action, "metrics") && m == EVHTTP_REQ_GET)
		handle_metrics(a, req, s);
	else if (!strcmp(action, "fork") && m == EVHTTP_REQ_POST)
		handle_fork(a, req, s);
	else if (!strcmp(action, "network") && m == EVHTTP_REQ_PUT)
		handle_network(a, req, s);
	else
		reply_error(req, 404, "Not found");
}

/* accept() failing for want of fds (EMFILE/ENFILE): libevent's listener would retry the
 * pending connection at once, forever; pause it for 250 ms instead, as the gateway does.
 * Connections already accepted go on. */
static void
on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	evconnlistener_enable(arg);
}

static void
on_accept_error(struct evconnlistener *l, void *arg)
{
	/* arg is evhttp's (evhttp_bind_listener set the callbacks' argument) */
	static const struct timeval pause = {0, 250000};
	log_warning_errno(-EVUTIL_SOCKET_ERROR(), "accept: %m; not accepting for 250 ms");
	evconnlistener_disable(l);
	event_base_once(evconnlistener_get_base(l), -1, EV_TIMEOUT, on_accept_resume, l, &pause);
}

int
e2b_http_start(struct e2b_api *a, int listen_fd)
{
	a->http = evhttp_new(a->base);
	if (!a->http)
		return -ENOMEM;
	evhttp_set_max_body_size(a->http, E2B_BODY_MAX);
	evhttp_set_max_headers_size(a->http, 16384);
	evhttp_set_timeout(a->http, 30);
	evhttp_set_allowed_methods(a->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
						    EVHTTP_REQ_DELETE);
	evhttp_set_default_content_type(a->http, "application/json");
	evhttp_set_gencb(a->http, on_request, a);
	struct evconnlistener *l =
		evconnlistener_new(a->base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE, -1, listen_fd);
	if (!l)
		return -EIO;
	evconnlistener_set_error_cb(l, on_accept_error);
	if (!evhttp_bind_listener(a->http, l)) {
		evconnlistener_free(l);
		return -EIO;
	}
	return 0;
}
