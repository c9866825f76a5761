/* libFuzzer harness: what a client of the sandbox agent's envd API sends, through the agent's
 * real parsing code (agent/envd-proto.c, and the request head parser it shares with the gateway,
 * gateway/http-parse.c). Nothing is stubbed: this code does no I/O.
 *
 * Byte 0 picks the path, the rest is the client's bytes:
 *   0: a request as the agent reads it: head (http_parse_head), route (envd_route_of), query
 *      values (envd_query_get), then the body: chunked framing decoded in place in pieces of
 *      byte 1's size (envd_chunked_decode), a Connect envelope (envd_envelope_parse) and the JSON
 *      message decoded for the route (envd_request_decode);
 *   1: a multipart/form-data upload: the first line is the Content-Type, the rest the body, fed
 *      in pieces (envd_multipart_feed) with what was held back fed again, as envd.c does;
 *   2: a JSON message decoded as byte 1's route;
 *   3: base64 (decode, and encode/decode round trip), RFC 3339 timestamps.
 * Checked: every count stays within the bytes given; a decoded request's strings and vectors are
 * within their bounds; multipart hands out no more data than came in, and all of it when the
 * body is complete; base64 round-trips. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "envd-proto.h"
#include "http-parse.h"

/* not assert(): the fuzz build may define NDEBUG */
#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "check failed: %s (line %d)\n", #x, __LINE__);             \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void
check_request(const struct envd_request *q)
{
	CHECK(q->n_args <= ENVD_MAX_ARGS);
	CHECK(q->n_envs <= ENVD_MAX_ENVS);
	for (size_t i = 0; i < q->n_args; i++)
		CHECK(q->args[i] && strlen(q->args[i]) <= ENVD_MAX_STR);
	for (size_t i = 0; i < q->n_envs; i++)
		CHECK(!q->env_keys[i] || !strchr(q->env_keys[i], '='));
	if (q->cmd)
		CHECK(strlen(q->cmd) <= ENVD_MAX_STR);
	if (q->path)
		CHECK(strlen(q->path) <= ENVD_MAX_STR);
	if (q->has_pty)
		CHECK(q->cols <= 65535 && q->rows <= 65535);
	CHECK(q->sel.has_pid + q->sel.has_tag <= 1);
}

static void
decode_as(enum envd_route r, const char *json, size_t len)
{
	struct envd_request q;
	char why[256];
	if (envd_request_decode(r, json, len, &q, why, sizeof why) == ENVD_OK)
		check_request(&q);
	envd_request_free(&q);
}

static size_t mp_data, mp_parts;

static int
mp_begin(struct envd_multipart *m, void *ud)
{
	CHECK(strlen(m->filename) < sizeof m->filename);
	mp_parts++;
	return 0;
}

static int
mp_chunk(struct envd_multipart *m, const char *p, size_t n, void *ud)
{
	mp_data += n;
	return 0;
}

static const struct envd_mp_sink sink = {mp_begin, mp_chunk, NULL};

static void
fuzz_request(const uint8_t *d, size_t n, size_t piece)
{
	static struct http_head h;
	ssize_t k = http_parse_head((const char *)d, n, true, HTTP_MAX_HEAD, &h);
	if (k <= 0)
		return;
	CHECK((size_t)k <= n);
	const char *qm = memchr(h.target, '?', h.target_len);
	size_t plen = qm ? (size_t)(qm - h.target) : h.target_len;
	enum envd_route r = envd_route_of(h.method, h.method_len, h.target, plen);
	if (qm) {
		char v[4096];
		const char *q = qm + 1;
		size_t ql = h.target_len - plen - 1;
		if (envd_query_get(q, ql, "path", v, sizeof v) == 1)
			CHECK(strlen(v) < sizeof v);
		envd_query_get(q, ql, "username", v, 64);
	}
	/* the body after the head */
	size_t blen = n - (size_t)k;
	char *body = malloc(blen + 1);
	memcpy(body, d + k, blen);
	if (h.body == HTTP_BODY_CHUNKED) {
		struct envd_chunked c = {0};
		size_t in = 0, out = 0;
		bool done = false;
		/* decode in pieces, as bytes arrive; data is compacted to the front */
		char *buf = malloc(blen + 1);
		size_t have = 0;
		while (in < blen && !done) {
			size_t add = blen - in < piece ? blen - in : piece;
			memcpy(buf + have, body + in, add);
			have += add;
			in += add;
			size_t dl;
			ssize_t used = envd_chunked_decode(&c, buf, have, &dl, &done);
			if (used < 0)
				break;
			CHECK((size_t)used <= have && dl <= (size_t)used);
			memmove(body + out, buf, dl);
			out += dl;
			memmove(buf, buf + used, have - (size_t)used);
			have -= (size_t)used;
		}
		free(buf);
		blen = out;
	}
	if (envd_route_streams(r) || r == ENVD_R_P_STREAM_INPUT) {
		uint8_t flags;
		size_t ml;
		ssize_t e = envd_envelope_parse((uint8_t *)body, blen, ENVD_MAX_BODY, &flags, &ml);
		if (e > 0) {
			CHECK((size_t)e == ml + 5 && (size_t)e <= blen);
			decode_as(r, body + 5, ml);
		}
	} else if (envd_route_is_rpc(r) || r == ENVD_R_INIT) {
		decode_as(r, body, blen);
	}
	free(body);
}

static void
fuzz_multipart(const uint8_t *d, size_t n, size_t piece)
{
	const uint8_t *nl = memchr(d, '\n', n);
	if (!nl)
		return;
	static struct envd_multipart m;
	if (envd_multipart_init(&m, (const char *)d, (size_t)(nl - d)) < 0)
		return;
	const char *body = (const char *)nl + 1;
	size_t blen = n - (size_t)(nl - d) - 1;
	char *buf = malloc(blen + 1);
	size_t have = 0, in = 0;
	mp_data = mp_parts = 0;
	for (;;) {
		size_t add = blen - in < piece ? blen - in : piece;
		memcpy(buf + have, body + in, add);
		have += add;
		in += add;
		bool eof = in == blen;
		ssize_t k = envd_multipart_feed(&m, buf, have, eof, &sink, NULL);
		if (k < 0)
			break;
		CHECK((size_t)k <= have);
		memmove(buf, buf + k, have - (size_t)k);
		have -= (size_t)k;
		if (eof || m.state == MP_END)
			break;
	}
	CHECK(mp_data <= blen);
	free(buf);
}

static void
fuzz_codecs(const uint8_t *d, size_t n)
{
	uint8_t *out = malloc(n + 3);
	ssize_t k = base64_decode((const char *)d, n, out, n + 3);
	if (k >= 0) {
		CHECK((size_t)k <= n);
		char *enc = malloc(base64_len((size_t)k) + 1);
		size_t el = base64_encode(out, (size_t)k, enc);
		CHECK(el == base64_len((size_t)k));
		uint8_t *back = malloc((size_t)k + 3);
		CHECK(base64_decode(enc, el, back, (size_t)k + 3) == k);
		CHECK(!memcmp(back, out, (size_t)k));
		free(back);
		free(enc);
	}
	free(out);
	char *s = malloc(n + 1);
	memcpy(s, d, n);
	s[n] = 0;
	int64_t sec;
	long ns;
	if (envd_parse_rfc3339(s, &sec, &ns) == 0)
		CHECK(ns >= 0 && ns < 1000000000);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t piece = (size_t)data[1] % 64 + 1;
	switch (data[0] % 4) {
	case 0:
		fuzz_request(data + 2, size - 2, piece);
		break;
	case 1:
		fuzz_multipart(data + 2, size - 2, piece);
		break;
	case 2:
		decode_as((enum envd_route)(data[1] % (ENVD_R_METHOD_NOT_ALLOWED + 1)),
			  (const char *)data + 2, size - 2);
		break;
	case 3:
		fuzz_codecs(data + 2, size - 2);
		break;
	}
	return 0;
}
