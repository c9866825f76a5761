/* warren-clusterd: checks on everything that comes in over HTTP (from a client at the front
 * door or from another host) before it is kept, sent to etcd or sent on D-Bus. Pure, so the unit
 * test and the fuzzer link it alone. */
#include "clusterd.h"
#include "names.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

static bool
chars_ok(const char *s, size_t max, const char *extra)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		      (extra && strchr(extra, ch) && ch)))
			return false;
	}
	return true;
}

bool
cluster_input_name_ok(const char *s)
{
	return chars_ok(s, CLUSTER_NAME_MAX, "-") && s[0] != '-';
}

bool
cluster_input_rid_ok(const char *s)
{
	return chars_ok(s, CLUSTER_RID_MAX, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_-");
}

/* the supervisor checks a template name again; this keeps etcd keys and JSON plain */
bool
cluster_input_template_ok(const char *s)
{
	return chars_ok(s, 64, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_.-") && s[0] != '.' && s[0] != '-';
}

bool
cluster_input_id_ok(const char *s)
{
	if (!s || strlen(s) != 12)
		return false;
	for (size_t i = 0; i < 12; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* IPv4 ADDR:PORT, as hosts advertise their clusterd */
bool
cluster_input_addr_ok(const char *s)
{
	unsigned a, b, c, d, port;
	char tail;
	if (!s || strlen(s) > 21)
		return false;
	if (sscanf(s, "%u.%u.%u.%u:%u%c", &a, &b, &c, &d, &port, &tail) != 5)
		return false;
	return a < 256 && b < 256 && c < 256 && d < 256 && port > 0 && port < 65536;
}

bool
cluster_input_url_ok(const char *s)
{
	return s && !strncmp(s, "http://", 7) && cluster_input_addr_ok(s + 7);
}

/* {"template": "...", "request_id": "..."} (request_id optional: rid[0] stays 0) */
int
cluster_input_create(const char *body, size_t len, char *template, size_t tlen, char *rid,
		     size_t rlen)
{
	json_error_t err;
	json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
	int r = -EINVAL;
	if (!j || !json_is_object(j))
		goto out;
	json_t *t = json_object_get(j, "template"), *q = json_object_get(j, "request_id");
	if (!json_is_string(t) || !cluster_input_template_ok(json_string_value(t)) ||
	    strlen(json_string_value(t)) >= tlen)
		goto out;
	rid[0] = 0;
	if (q && (!json_is_string(q) || !cluster_input_rid_ok(json_string_value(q)) ||
		  strlen(json_string_value(q)) >= rlen))
		goto out;
	snprintf(template, tlen, "%s", json_string_value(t));
	if (q)
		snprintf(rid, rlen, "%s", json_string_value(q));
	r = 0;
out:
	json_decref(j);
	return r;
}

/* a user tag as the supervisor takes it (1-32 of [a-z0-9_-]), never a warm template's image */
bool
cluster_input_tag_ok(const char *s)
{
	return s && strlen(s) <= CLUSTER_TAG_MAX && tag_name_valid(s) && !tag_reserved(s);
}

/* {"tag": T, "count": 1-200, "request_id": R (optional: rid[0] stays 0), "host": H (optional:
 * host[0] stays 0)} */
int
cluster_input_fork(const char *body, size_t len, char tag[CLUSTER_TAG_MAX + 1], unsigned *count,
		   char rid[CLUSTER_RID_MAX + 1], char host[CLUSTER_NAME_MAX + 1])
{
	json_error_t err;
	json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
	int r = -EINVAL;
	if (!j || !json_is_object(j))
		goto out;
	json_t *t = json_object_get(j, "tag"), *n = json_object_get(j, "count");
	json_t *q = json_object_get(j, "request_id"), *h = json_object_get(j, "host");
	if (!json_is_string(t) || !cluster_input_tag_ok(json_string_value(t)) ||
	    !json_is_integer(n) || json_integer_value(n) < 1 ||
	    json_integer_value(n) > CLUSTER_FORK_MAX)
		goto out;
	if (q && (!json_is_string(q) || !cluster_input_rid_ok(json_string_value(q))))
		goto out;
	if (h && (!json_is_string(h) || !cluster_input_name_ok(json_string_value(h))))
		goto out;
	snprintf(tag, CLUSTER_TAG_MAX + 1, "%s", json_string_value(t));
	*count = (unsigned)json_integer_value(n);
	snprintf(rid, CLUSTER_RID_MAX + 1, "%s", q ? json_string_value(q) : "");
	snprintf(host, CLUSTER_NAME_MAX + 1, "%s", h ? json_string_value(h) : "");
	r = 0;
out:
	json_decref(j);
	return r;
}
