/* warren-clusterd: the pure part of the watched catalog (catalog.h). It parses what etcd's JSON
 * gateway sends for POST /v3/watch (one JSON message a line: {"result": {header, created,
 * canceled, compact_revision, events: [{type, kv: {key, value}}]}}) and for POST /v3/kv/range,
 * bounded in size and count, keys and values base64 and decoded here, and applies the puts and
 * deletes of owner and host records to the in-memory table. Nothing etcd sends is trusted
 * beyond its type: a key or value that is not what clusterd writes is left out. */
#include "catalog.h"
#include "clusterd.h"

#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* base64 to a NUL-terminated string; NULL if malformed or holding a NUL */
static char *
unb64(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n % 4 || n / 4 * 3 > max)
		return NULL;
	unsigned char *out = malloc(n / 4 * 3 + 1);
	if (!out)
		return NULL;
	int m = n ? EVP_DecodeBlock(out, (const unsigned char *)s, (int)n) : 0;
	if (m < 0) {
		free(out);
		return NULL;
	}
	/* EVP_DecodeBlock keeps the padding's zero bytes */
	for (size_t p = 0; p < 2 && n && s[n - 1] == '='; p++, n--)
		m--;
	if (m < 0 || memchr(out, 0, (size_t)m)) {
		free(out);
		return NULL;
	}
	out[m] = 0;
	return (char *)out;
}

/* etcd's gateway writes int64 as a decimal string */
static int
int64_of(json_t *j, int64_t *v)
{
	*v = 0;
	if (!j)
		return 0;
	if (json_is_integer(j)) {
		*v = json_integer_value(j);
		return *v >= 0 ? 0 : -EBADMSG;
	}
	const char *s = json_string_value(j);
	if (!s || !*s || strlen(s) > 19)
		return -EBADMSG;
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (*end || errno || x < 0)
		return -EBADMSG;
	*v = x;
	return 0;
}

void
catalog_msg_clear(struct catalog_msg *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->ev[i].key);
		free(m->ev[i].value);
	}
	free(m->ev);
	memset(m, 0, sizeof *m);
}

/* kv {key, value}: the value is absent from the gateway's JSON when empty (and on a delete) */
static int
event_from(json_t *kv, bool del, struct catalog_event *e)
{
	json_t *k = json_object_get(kv, "key"), *v = json_object_get(kv, "value");
	if (!json_is_object(kv) || !json_is_string(k) || (v && !json_is_string(v)))
		return -EBADMSG;
	e->del = del;
	e->key = unb64(json_string_value(k), CATALOG_KEY_MAX);
	e->value = v && !del ? unb64(json_string_value(v), CATALOG_MSG_MAX) : strdup("");
	if (!e->key || !e->value) {
		free(e->key);
		free(e->value);
		e->key = e->value = NULL;
		return -EBADMSG;
	}
	return 0;
}

static int
load(const char *text, size_t len, json_t **j)
{
	json_error_t err;
	if (len > CATALOG_MSG_MAX)
		return -E2BIG;
	*j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (!*j || !json_is_object(*j)) {
		json_decref(*j);
		*j = NULL;
		return -EBADMSG;
	}
	return 0;
}

int
catalog_parse_watch(const char *text, size_t len, struct catalog_msg *m)
{
	json_t *j = NULL, *res, *events, *ev;
	size_t i;
	memset(m, 0, sizeof *m);
	int r = load(text, len, &j);
	if (r < 0)
		return r;
	if (json_object_get(j, "error")) {
		r = -EPROTO; /* the stream ended with an error (e.g. the member lost its leader) */
		goto out;
	}
	r = -EBADMSG;
	res = json_object_get(j, "result");
	if (!json_is_object(res))
		goto out;
	json_t *created = json_object_get(res, "created"),
	       *canceled = json_object_get(res, "canceled");
	if ((created && !json_is_boolean(created)) || (canceled && !json_is_boolean(canceled)))
		goto out;
	m->created = json_is_true(created);
	m->canceled = json_is_true(canceled);
	if (int64_of(json_object_get(json_object_get(res, "header"), "revision"), &m->revision) <
		    0 ||
	    int64_of(json_object_get(res, "compact_revision"), &m->compact_revision) < 0)
		goto out;
	events = json_object_get(res, "events");
	if (events && !json_is_array(events))
		goto out;
	if (json_array_size(events) > CATALOG_MAX_EVENTS) {
		r = -E2BIG;
		goto out;
	}
	m->ev = calloc(json_array_size(events) + 1, sizeof *m->ev);
	if (!m->ev) {
		r = -ENOMEM;
		goto out;
	}
	json_array_foreach(events, i, ev)
	{
		json_t *type = json_object_get(ev, "type");
		const char *t = json_string_value(type);
		/* the enum's zero (PUT) is left out of the gateway's JSON */
		if (!json_is_object(ev) ||
		    (type && (!t || (strcmp(t, "PUT") && strcmp(t, "DELETE")))))
			goto out;
		if (event_from(json_object_get(ev, "kv"), t && !strcmp(t, "DELETE"), &m->ev[m->n]) <
		    0)
			goto out;
		m->n++;
	}
	r = 0;
out:
	json_decref(j);
	if (r < 0)
		catalog_msg_clear(m);
	return r;
}

int
catalog_parse_range(const char *text, size_t len, struct catalog_msg *m)
{
	json_t *j = NULL, *kvs, *kv;
	size_t i;
	memset(m, 0, sizeof *m);
	int r = load(text, len, &j);
	if (r < 0)
		return r;
	r = -EBADMSG;
	kvs = json_object_get(j, "kvs"); /* absent when the range is empty */
	if (int64_of(json_object_get(json_object_get(j, "header"), "revision"), &m->revision) < 0 ||
	    m->revision <= 0 || (kvs && !json_is_array(kvs)) ||
	    json_is_true(json_object_get(j, "more")))
		goto out;
	if (json_array_size(kvs) > CATALOG_MAX_EVENTS) {
		r = -E2BIG;
		goto out;
	}
	m->ev = calloc(json_array_size(kvs) + 1, sizeof *m->ev);
	if (!m->ev) {
		r = -ENOMEM;
		goto out;
	}
	json_array_foreach(kvs, i, kv)
	{
		if (event_from(kv, false, &m->ev[m->n]) < 0)
			goto out;
		m->n++;
	}
	r = 0;
out:
	json_decref(j);
	if (r < 0)
		catalog_msg_clear(m);
	return r;
}

int
catalog_table_init(struct catalog_table *t)
{
	t->owners = json_object();
	t->hosts = json_object();
	t->overflow = false;
	if (!t->owners || !t->hosts) {
		catalog_table_clear(t);
		return -ENOMEM;
	}
	return 0;
}

void
catalog_table_clear(struct catalog_table *t)
{
	json_decref(t->owners);
	json_decref(t->hosts);
	t->owners = t->hosts = NULL;
	t->overflow = false;
}

/* sets (value non-NULL) or removes name in o: 1 if that changed it */
static int
set_or_remove(json_t *o, const char *name, const char *value, size_t max, bool *overflow)
{
	json_t *old = json_object_get(o, name);
	if (!value) {
		if (!old)
			return 0;
		json_object_del(o, name);
		return 1;
	}
	if (old && !strcmp(json_string_value(old), value))
		return 0;
	if (!old && json_object_size(o) >= max) {
		*overflow = true;
		return 0;
	}
	return json_object_set_new(o, name, json_string(value)) == 0 && 1;
}

static const char *
under(const char *key, const char *prefix, const char *kind)
{
	size_t p = strlen(prefix), k = strlen(kind);
	if (strncmp(key, prefix, p) || key[p] != '/' || strncmp(key + p + 1, kind, k) ||
	    key[p + 1 + k] != '/')
		return NULL;
	return key + p + 1 + k + 1;
}

int
catalog_table_apply(struct catalog_table *t, const char *prefix, const struct catalog_msg *m)
{
	int changed = 0;
	bool host_overflow = false;
	for (size_t i = 0; i < m->n; i++) {
		const struct catalog_event *e = &m->ev[i];
		const char *name;
		json_error_t err;
		if ((name = under(e->key, prefix, "owners")) && cluster_input_id_ok(name)) {
			const char *host = NULL;
			json_t *o =
				e->del ? NULL : json_loads(e->value, JSON_REJECT_DUPLICATES, &err);
			host = json_string_value(json_object_get(o, "host"));
			if (host && !cluster_input_name_ok(host))
				host = NULL; /* not a record of clusterd's: not routed */
			changed |= set_or_remove(t->owners, name, host, CATALOG_MAX_OWNERS,
						 &t->overflow);
			json_decref(o);
		} else if ((name = under(e->key, prefix, "hosts")) && cluster_input_name_ok(name)) {
			const char *url = NULL;
			json_t *h =
				e->del ? NULL : json_loads(e->value, JSON_REJECT_DUPLICATES, &err);
			if (json_is_object(h)) {
				url = json_string_value(json_object_get(h, "gateway"));
				if (!url || strlen(url) > CATALOG_URL_MAX)
					url = ""; /* in, but not routable to (lost it is not) */
			}
			changed |= set_or_remove(t->hosts, name, url, CATALOG_MAX_HOSTS,
						 &host_overflow);
			json_decref(h);
		}
	}
	return changed;
}
