/* warren-clusterd: etcd's v3 API through its JSON gRPC gateway (POST /v3/..., keys and values
 * base64, 64-bit numbers as JSON strings). Each call is one short blocking HTTP/1.0 exchange with
 * a deadline: etcd answers in milliseconds, and a member that does not (killed, partitioned) is
 * left for the next endpoint, so a cluster of three survives losing one. Answers are read whole
 * within a bound and parsed with jansson; nothing in them is trusted beyond its type. */
#include "clusterd.h"
#include "log.h"
#include "macro.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ANSWER_MAX (8u << 20)

static int64_t
mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
etcd_init(struct etcd *e, const char *endpoints)
{
	_cleanup_free_ char *copy = strdup(endpoints);
	char *save = NULL;
	if (!copy)
		return -ENOMEM;
	memset(e, 0, sizeof *e);
	e->timeout_ms = 2000;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strncmp(t, "http://", 7))
			t += 7;
		if (!cluster_input_addr_ok(t) || e->n == CLUSTER_MAX_ENDPOINTS)
			return -EINVAL;
		e->hosts[e->n] = strdup(t);
		if (!e->hosts[e->n++])
			return -ENOMEM;
	}
	return e->n ? 0 : -EINVAL;
}

static int
wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* one POST to one endpoint: the body of a 200 answer in *out */
static int
post_one(const char *host, const char *path, const char *body, int timeout_ms, char **out)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char addr[32];
	const char *colon = strrchr(host, ':');
	snprintf(addr, sizeof addr, "%.*s", (int)(colon - host), host);
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return -EINVAL;
	int64_t deadline = mono_ms() + timeout_ms;
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS)
		return -errno;
	int r = wait_fd(fd, POLLOUT, deadline), soerr = 0;
	socklen_t sl = sizeof soerr;
	if (r < 0)
		return r;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr)
		return soerr ? -soerr : -errno;
	_cleanup_free_ char *req = NULL;
	int len = asprintf(&req,
			   "POST %s HTTP/1.0\r\nHost: %s\r\nContent-Type: application/json\r\n"
			   "Content-Length: %zu\r\n\r\n%s",
			   path, host, strlen(body), body);
	if (len < 0)
		return -ENOMEM;
	for (int off = 0; off < len;) {
		if ((r = wait_fd(fd, POLLOUT, deadline)) < 0)
			return r;
		ssize_t w = send(fd, req + off, (size_t)(len - off), MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (w > 0)
			off += (int)w;
	}
	size_t cap = 4096, n = 0;
	_cleanup_free_ char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (n + 1 == cap) {
			if (cap >= ANSWER_MAX)
				return -EMSGSIZE;
			char *bigger = realloc(buf, cap * 2);
			if (!bigger)
				return -ENOMEM;
			buf = bigger;
			cap *= 2;
		}
		if ((r = wait_fd(fd, POLLIN, deadline)) < 0)
			return r;
		ssize_t got = recv(fd, buf + n, cap - 1 - n, 0);
		if (got == 0)
			break;
		if (got < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (got > 0)
			n += (size_t)got;
	}
	buf[n] = 0;
	int status = 0;
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		return -EBADMSG;
	char *b = strstr(buf, "\r\n\r\n");
	if (!b)
		return -EBADMSG;
	if (status != 200) {
		log_debug("etcd %s %s: HTTP %d: %.200s", host, path, status, b + 4);
		/* 5xx: the member is up but cannot serve now (no leader, leader changed, its
		 * request timed out): worth asking again, unlike a refusal */
		return status == 404 ? -ENOENT : status >= 500 ? -EAGAIN : -EPROTO;
	}
	*out = strdup(b + 4);
	return *out ? 0 : -ENOMEM;
}

/* An election after the leader's death takes etcd about a second (its default election timeout
 * is 1 s, longer on a loaded host): for that long every member answers 5xx at once. A call goes
 * round the members again until this budget is spent, so losing the leader is not seen by a create;
 * a host cut off from every member gives up after one round, as before. Every call here is
 * idempotent or a transaction on create_revision == 0, which a second attempt cannot apply twice.
 */
#define ELECTION_BUDGET_MS 6000
#define ROUND_PAUSE_MS 100

/* POST to the current endpoint, then to the others: an answer from any member will do (the
 * gateway forwards to the leader; range reads are linearizable by default) */
static int
post(struct etcd *e, const char *path, json_t *body, json_t **answer)
{
	_cleanup_free_ char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!text)
		return -ENOMEM;
	int r = -EHOSTUNREACH;
	int64_t give_up = mono_ms() + ELECTION_BUDGET_MS;
	for (;;) {
		for (size_t i = 0; i < e->n; i++) {
			size_t at = (e->current + i) % e->n;
			_cleanup_free_ char *out = NULL;
			r = post_one(e->hosts[at], path, text, e->timeout_ms, &out);
			if (r == -EPROTO || r == -ENOENT)
				return r; /* etcd answered: a refusal, not an outage */
			if (r < 0)
				continue;
			e->current = at;
			json_error_t err;
			*answer = json_loads(out, JSON_DISABLE_EOF_CHECK, &err);
			return *answer ? 0 : -EBADMSG;
		}
		if (mono_ms() + ROUND_PAUSE_MS >= give_up)
			return r;
		nanosleep(&(struct timespec){0, ROUND_PAUSE_MS * 1000000L}, NULL);
	}
}

static char *
b64(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(4 * ((n + 2) / 3) + 1);
	if (out)
		EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
	return out;
}

static char *
unb64(const char *s)
{
	size_t n = strlen(s);
	if (n % 4)
		return NULL;
	unsigned char *out = malloc(n / 4 * 3 + 1);
	if (!out)
		return NULL;
	int m = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
	if (m < 0) {
		free(out);
		return NULL;
	}
	/* EVP_DecodeBlock keeps the padding's zero bytes */
	while (n && s[n - 1] == '=') {
		m--;
		n--;
	}
	out[m] = 0;
	if (strlen((char *)out) != (size_t)m) { /* a NUL inside: not ours */
		free(out);
		return NULL;
	}
	return (char *)out;
}

/* etcd's gateway writes int64 as a string */
static int64_t
json_int64(json_t *j)
{
	if (json_is_string(j))
		return strtoll(json_string_value(j), NULL, 10);
	return json_is_integer(j) ? json_integer_value(j) : 0;
}

static char *
lease_text(int64_t lease)
{
	char *s = NULL;
	return asprintf(&s, "%lld", (long long)lease) < 0 ? NULL : s;
}

int
etcd_lease_grant(struct etcd *e, int ttl, int64_t *id)
{
	json_t *a = NULL;
	int r = post(e, "/v3/lease/grant", json_pack("{s:I}", "TTL", (json_int_t)ttl), &a);
	if (r < 0)
		return r;
	*id = json_int64(json_object_get(a, "ID"));
	json_decref(a);
	return *id ? 0 : -EBADMSG;
}

int
etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl)
{
	_cleanup_free_ char *l = lease_text(id);
	json_t *a = NULL;
	if (!l)
		return -ENOMEM;
	/* a streaming call on the gateway: one request in, one answer back, then EOF (HTTP/1.0) */
	int r = post(e, "/v3/lease/keepalive", json_pack("{s:s}", "ID", l), &a);
	if (r < 0)
		return r;
	json_t *res = json_object_get(a, "result");
	*ttl = res ? json_int64(json_object_get(res, "TTL")) : 0;
	json_decref(a);
	return 0;
}

int
etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease)
{
	_cleanup_free_ char *k = b64(key), *v = b64(value), *l = lease_text(lease);
	json_t *a = NULL;
	if (!k || !v || !l)
		return -ENOMEM;
	json_t *body = json_pack("{s:s, s:s}", "key", k, "value", v);
	if (lease)
		json_object_set_new(body, "lease", json_string(l));
	int r = post(e, "/v3/kv/put", body, &a);
	json_decref(a);
	return r;
}

int
etcd_delete(struct etcd *e, const char *key)
{
	_cleanup_free_ char *k = b64(key);
	json_t *a = NULL;
	if (!k)
		return -ENOMEM;
	int r = post(e, "/v3/kv/deleterange", json_pack("{s:s}", "key", k), &a);
	json_decref(a);
	return r;
}

void
etcd_kvs_free(struct etcd_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

static int
kvs_from(json_t *kvs, struct etcd_kv **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!kvs)
		return 0;
	if (!json_is_array(kvs))
		return -EBADMSG;
	*out = calloc(json_array_size(kvs) + 1, sizeof **out);
	if (!*out)
		return -ENOMEM;
	size_t i;
	json_t *kv;
	json_array_foreach(kvs, i, kv)
	{
		json_t *k = json_object_get(kv, "key"), *v = json_object_get(kv, "value");
		if (!json_is_string(k))
			continue;
		char *key = unb64(json_string_value(k));
		/* an empty value is absent from the gateway's JSON */
		char *value = json_is_string(v) ? unb64(json_string_value(v)) : strdup("");
		if (!key || !value) {
			free(key);
			free(value);
			continue;
		}
		(*out)[*n].key = key;
		(*out)[(*n)++].value = value;
	}
	return 0;
}

/* the end of a prefix range: the prefix with its last byte plus one */
static char *
range_end(const char *prefix)
{
	char *end = strdup(prefix);
	if (end && *end)
		end[strlen(end) - 1]++;
	return end;
}

int
etcd_range_prefix(struct etcd *e, const char *prefix, struct etcd_kv **out, size_t *n)
{
	_cleanup_free_ char *end = range_end(prefix);
	_cleanup_free_ char *k = b64(prefix), *ke = end ? b64(end) : NULL;
	json_t *a = NULL;
	if (!k || !ke)
		return -ENOMEM;
	int r = post(e, "/v3/kv/range", json_pack("{s:s, s:s}", "key", k, "range_end", ke), &a);
	if (r < 0)
		return r;
	r = kvs_from(json_object_get(a, "kvs"), out, n);
	json_decref(a);
	return r;
}

int
etcd_get(struct etcd *e, const char *key, char **value)
{
	_cleanup_free_ char *k = b64(key);
	json_t *a = NULL;
	struct etcd_kv *kv = NULL;
	size_t n = 0;
	if (!k)
		return -ENOMEM;
	int r = post(e, "/v3/kv/range", json_pack("{s:s}", "key", k), &a);
	if (r < 0)
		return r;
	r = kvs_from(json_object_get(a, "kvs"), &kv, &n);
	json_decref(a);
	if (r >= 0 && n == 0)
		r = -ENOENT;
	if (r >= 0) {
		*value = kv[0].value;
		kv[0].value = NULL;
	}
	etcd_kvs_free(kv, n);
	return r;
}

int
etcd_create(struct etcd *e, const char *key, const char *value, int64_t lease, char **existing)
{
	_cleanup_free_ char *k = b64(key), *v = b64(value), *l = lease_text(lease);
	json_t *a = NULL;
	if (!k || !v || !l)
		return -ENOMEM;
	/* compare: the key's create revision is 0 (it does not exist); then put; else range */
	json_t *put = json_pack("{s:s, s:s}", "key", k, "value", v);
	if (lease)
		json_object_set_new(put, "lease", json_string(l));
	json_t *body =
		json_pack("{s:[{s:s, s:s, s:s, s:s}], s:[{s:o}], s:[{s:{s:s}}]}", "compare", "key",
			  k, "target", "CREATE", "result", "EQUAL", "create_revision", "0",
			  "success", "request_put", put, "failure", "request_range", "key", k);
	if (!body)
		return -ENOMEM;
	int r = post(e, "/v3/kv/txn", body, &a);
	if (r < 0)
		return r;
	if (json_is_true(json_object_get(a, "succeeded"))) {
		json_decref(a);
		return 1;
	}
	json_t *resp = json_array_get(json_object_get(a, "responses"), 0);
	json_t *rr = json_object_get(resp, "response_range");
	struct etcd_kv *kv = NULL;
	size_t n = 0;
	r = kvs_from(json_object_get(rr, "kvs"), &kv, &n);
	json_decref(a);
	if (r >= 0 && n == 0)
		r = -EAGAIN; /* gone between the compare and the range: the caller tries again */
	if (r >= 0) {
		*existing = kv[0].value;
		kv[0].value = NULL;
	}
	etcd_kvs_free(kv, n);
	return r;
}
