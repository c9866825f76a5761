/* Unit tests of the agent's envd API parsing (agent/envd-proto.c): what the wire looks like
 * (routes, envelopes, chunked bodies, multipart split anywhere, query strings, base64, the
 * JSON requests and their bounds, RFC 3339). */
/* cmocka needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "envd-proto.h"

static void
test_routes(void **state)
{
	assert_int_equal(envd_route_of("POST", 4, "/process.Process/Start", 22), ENVD_R_P_START);
	assert_int_equal(envd_route_of("GET", 3, "/process.Process/Start", 22),
			 ENVD_R_METHOD_NOT_ALLOWED);
	assert_int_equal(envd_route_of("GET", 3, "/files", 6), ENVD_R_FILES_GET);
	assert_int_equal(envd_route_of("POST", 4, "/files", 6), ENVD_R_FILES_POST);
	assert_int_equal(envd_route_of("GET", 3, "/health", 7), ENVD_R_HEALTH);
	assert_int_equal(envd_route_of("GET", 3, "/healthz", 8), ENVD_R_NONE);
	assert_true(envd_route_streams(ENVD_R_F_WATCH_DIR));
	assert_false(envd_route_streams(ENVD_R_F_LIST_DIR));
	assert_string_equal(envd_code_to_string(ENVD_NOT_FOUND), "not_found");
	assert_int_equal(envd_code_http_status(ENVD_UNAUTHENTICATED), 401);
	assert_int_equal(envd_code_from_errno(ENOENT), ENVD_NOT_FOUND);
	assert_int_equal(envd_code_from_errno(ENOSPC), ENVD_RESOURCE_EXHAUSTED);
}

static void
test_envelope(void **state)
{
	uint8_t b[16] = {0x02, 0, 0, 0, 2, '{', '}'};
	uint8_t flags;
	size_t n;
	assert_int_equal(envd_envelope_parse(b, 7, 100, &flags, &n), 7);
	assert_int_equal(flags, ENVD_ENVELOPE_END);
	assert_int_equal(n, 2);
	assert_int_equal(envd_envelope_parse(b, 6, 100, &flags, &n), 0); /* more must come */
	assert_int_equal(envd_envelope_parse(b, 4, 100, &flags, &n), 0);
	uint8_t big[5] = {0, 0x7f, 0xff, 0xff, 0xff};
	assert_int_equal(envd_envelope_parse(big, 5, 100, &flags, &n), -EMSGSIZE);
}

static void
test_chunked(void **state)
{
	char in[] = "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\nNEXT";
	struct envd_chunked c = {0};
	size_t data;
	bool done = false;
	/* byte by byte: the framing state carries across calls */
	char out[64];
	size_t o = 0, len = strlen(in), i = 0;
	while (i < len && !done) {
		char one = in[i];
		ssize_t k = envd_chunked_decode(&c, &one, 1, &data, &done);
		assert_true(k == 1);
		if (data)
			out[o++] = one;
		i++;
	}
	assert_true(done);
	assert_int_equal(o, 11);
	assert_memory_equal(out, "hello world", 11);
	assert_string_equal(in + i, "NEXT"); /* nothing of the next request was taken */
	/* all at once, in place */
	char in2[] = "3\r\nabc\r\n0\r\n\r\n";
	memset(&c, 0, sizeof c);
	assert_int_equal(envd_chunked_decode(&c, in2, strlen(in2), &data, &done),
			 (ssize_t)strlen(in2));
	assert_true(done);
	assert_int_equal(data, 3);
	assert_memory_equal(in2, "abc", 3);
	const char *bad[] = {"x\r\n", "3\nabc", "3\r\nabcX", "1234567890123456\r\n", "0\r\n\n"};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		char b[64];
		snprintf(b, sizeof b, "%s", bad[k]);
		memset(&c, 0, sizeof c);
		assert_int_equal(envd_chunked_decode(&c, b, strlen(b), &data, &done), -EBADMSG);
	}
}

struct mp_out {
	char data[256];
	size_t len;
	char names[4][64];
	int parts, ends;
};

static int
mp_begin(struct envd_multipart *m, void *ud)
{
	struct mp_out *o = ud;
	snprintf(o->names[o->parts++ & 3], 64, "%.63s", m->filename);
	return 0;
}

static int
mp_data(struct envd_multipart *m, const char *p, size_t n, void *ud)
{
	struct mp_out *o = ud;
	assert_true(o->len + n <= sizeof o->data);
	memcpy(o->data + o->len, p, n);
	o->len += n;
	return 0;
}

static int
mp_end(struct envd_multipart *m, void *ud)
{
	((struct mp_out *)ud)->ends++;
	return 0;
}

static void
test_multipart(void **state)
{
	static const char body[] =
		"preamble\r\n--B0undary\r\nContent-Disposition: form-data; name=\"file\"; "
		"filename=\"dir/a.txt\"\r\n\r\nA\r\n--B0undar not yet\r\n--B0undary\r\n"
		"Content-Disposition: form-data; name=\"file\"; filename=\"b\"\r\n\r\nBB\r\n"
		"--B0undary--\r\nepilogue";
	const struct envd_mp_sink sink = {mp_begin, mp_data, mp_end};
	/* every split point of the body into two feeds gives the same result */
	for (size_t split = 0; split <= sizeof body - 1; split++) {
		struct envd_multipart m;
		struct mp_out o = {0};
		const char ct[] = "multipart/form-data; boundary=B0undary";
		assert_int_equal(envd_multipart_init(&m, ct, strlen(ct)), 0);
		char buf[512];
		size_t have = 0, in = 0, len = sizeof body - 1;
		for (int round = 0; round < 4; round++) {
			size_t add = round == 0 ? split : len - in;
			memcpy(buf + have, body + in, add);
			have += add;
			in += add;
			ssize_t k = envd_multipart_feed(&m, buf, have, in == len, &sink, &o);
			assert_true(k >= 0);
			memmove(buf, buf + k, have - (size_t)k);
			have -= (size_t)k;
		}
		assert_int_equal(m.state, MP_END);
		assert_int_equal(o.parts, 2);
		assert_int_equal(o.ends, 2);
		assert_string_equal(o.names[0], "dir/a.txt");
		assert_string_equal(o.names[1], "b");
		static const char want[] = "A\r\n--B0undar not yetBB";
		assert_int_equal(o.len, sizeof want - 1);
		assert_memory_equal(o.data, want, o.len);
	}
	struct envd_multipart m;
	assert_int_equal(envd_multipart_init(&m, "text/plain", 10), -EINVAL);
	assert_int_equal(envd_multipart_init(&m, "multipart/form-data", 19), -EINVAL);
	const char q[] = "multipart/form-data; boundary=\"quoted b\"";
	assert_int_equal(envd_multipart_init(&m, q, strlen(q)), 0);
	/* a body that ends inside a part is refused */
	struct mp_out o = {0};
	const char cut[] = "--quoted b\r\n\r\nunfinished";
	assert_int_equal(envd_multipart_feed(&m, cut, strlen(cut), true, &sink, &o), -EBADMSG);
}

static void
test_query_b64(void **state)
{
	char v[32];
	const char *q = "path=%2Ftmp%2Fa+b&username=root&x=%zz";
	assert_int_equal(envd_query_get(q, strlen(q), "path", v, sizeof v), 1);
	assert_string_equal(v, "/tmp/a b");
	assert_int_equal(envd_query_get(q, strlen(q), "username", v, sizeof v), 1);
	assert_string_equal(v, "root");
	assert_int_equal(envd_query_get(q, strlen(q), "user", v, sizeof v), 0);
	assert_int_equal(envd_query_get(q, strlen(q), "x", v, sizeof v), -EINVAL);
	assert_int_equal(envd_query_get("p=%00", 5, "p", v, sizeof v), -EINVAL); /* a NUL */
	assert_int_equal(envd_query_get("p=%4", 4, "p", v, sizeof v), -EINVAL);
	assert_int_equal(envd_query_get("p=aaaa", 6, "p", v, 4), -EINVAL); /* too long */
	char enc[16];
	base64_encode((const uint8_t *)"hello", 5, enc);
	assert_string_equal(enc, "aGVsbG8=");
	uint8_t dec[16];
	assert_int_equal(base64_decode("aGVsbG8=", 8, dec, sizeof dec), 5);
	assert_memory_equal(dec, "hello", 5);
	assert_int_equal(base64_decode("aGVsbG8", 7, dec, sizeof dec), 5); /* unpadded */
	assert_int_equal(base64_decode("a*==", 4, dec, sizeof dec), -EINVAL);
	assert_int_equal(base64_decode("aGVsbG8=", 8, dec, 4), -EINVAL); /* no room */
}

static void
test_requests(void **state)
{
	struct envd_request q;
	char why[256];
	const char *start =
		"{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"echo\"],"
		"\"envs\":{\"A\":\"b\"},\"cwd\":\"/tmp\"},\"pty\":{\"size\":{\"cols\":100,"
		"\"rows\":\"30\"}},\"tag\":\"t\",\"stdin\":false}";
	assert_int_equal(
		envd_request_decode(ENVD_R_P_START, start, strlen(start), &q, why, sizeof why),
		ENVD_OK);
	assert_string_equal(q.cmd, "/bin/sh");
	assert_int_equal(q.n_args, 2);
	assert_string_equal(q.args[1], "echo");
	assert_int_equal(q.n_envs, 1);
	assert_string_equal(q.env_keys[0], "A");
	assert_string_equal(q.cwd, "/tmp");
	assert_true(q.has_pty);
	assert_int_equal(q.cols, 100);
	assert_int_equal(q.rows, 30); /* proto3 JSON: a number may come as a string */
	assert_int_equal(q.stdin_mode, 0);
	envd_request_free(&q);
	const char *refused[] = {
		"{\"process\":{\"cmd\":\"\"}}",				  /* no command */
		"{\"process\":{\"cmd\":\"x\",\"envs\":{\"A=B\":\"c\"}}}", /* '=' in a name */
		"{\"process\":{\"cmd\":\"x\\u0000y\"}}",		  /* NUL inside */
		"{\"process\":{\"cmd\":\"x\",\"args\":[1]}}",		  /* not a string */
		"{\"process\":{\"cmd\":\"x\"},\"pty\":{\"size\":{\"cols\":70000}}}",
		"[1]",
		"{\"process\":{\"cmd\":\"x\"},\"process\":{\"cmd\":\"y\"}}", /* duplicate key */
	};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		assert_int_not_equal(envd_request_decode(ENVD_R_P_START, refused[i],
							 strlen(refused[i]), &q, why, sizeof why),
				     ENVD_OK);
		envd_request_free(&q);
	}
	const char *sig = "{\"process\":{\"pid\":42},\"signal\":\"SIGNAL_SIGKILL\"}";
	assert_int_equal(
		envd_request_decode(ENVD_R_P_SEND_SIGNAL, sig, strlen(sig), &q, why, sizeof why),
		ENVD_OK);
	assert_true(q.sel.has_pid);
	assert_int_equal(q.sel.pid, 42);
	assert_int_equal(q.signal, 9);
	envd_request_free(&q);
	const char *both = "{\"process\":{\"pid\":1,\"tag\":\"x\"},\"signal\":\"SIGNAL_SIGTERM\"}";
	assert_int_equal(
		envd_request_decode(ENVD_R_P_SEND_SIGNAL, both, strlen(both), &q, why, sizeof why),
		ENVD_INVALID_ARGUMENT); /* a oneof with two members */
	envd_request_free(&q);
	const char *in = "{\"process\":{\"tag\":\"t\"},\"input\":{\"stdin\":\"aGk=\"}}";
	assert_int_equal(
		envd_request_decode(ENVD_R_P_SEND_INPUT, in, strlen(in), &q, why, sizeof why),
		ENVD_OK);
	assert_int_equal(q.input_len, 2);
	assert_memory_equal(q.input, "hi", 2);
	assert_false(q.input_pty);
	envd_request_free(&q);
	assert_int_equal(envd_request_decode(ENVD_R_P_LIST, "", 0, &q, why, sizeof why), ENVD_OK);
	envd_request_free(&q);
	const char *init = "{\"envVars\":{\"K\":\"v\"},\"accessToken\":\"tok\",\"timestamp\":"
			   "\"2024-01-02T03:04:05.5+01:00\"}";
	assert_int_equal(envd_request_decode(ENVD_R_INIT, init, strlen(init), &q, why, sizeof why),
			 ENVD_OK);
	assert_true(q.has_access_token);
	assert_string_equal(q.access_token, "tok");
	int64_t sec;
	long ns;
	assert_int_equal(envd_parse_rfc3339(q.timestamp, &sec, &ns), 0);
	assert_int_equal(sec, 1704164645 - 3600); /* 02:04:05Z */
	assert_int_equal(ns, 500000000);
	envd_request_free(&q);
	assert_int_equal(envd_parse_rfc3339("2024-01-02T03:04:05", &sec, &ns), -EINVAL);
	assert_int_equal(envd_parse_rfc3339("1970-01-01T00:00:00Z", &sec, &ns), 0);
	assert_int_equal(sec, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes),	  cmocka_unit_test(test_envelope),
		cmocka_unit_test(test_chunked),	  cmocka_unit_test(test_multipart),
		cmocka_unit_test(test_query_b64), cmocka_unit_test(test_requests),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
