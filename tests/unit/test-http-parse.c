/* Unit tests of the gateway's HTTP parser and chunked framer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http-parse.h"

static ssize_t
parse(const char *s, bool request, struct http_head *h)
{
	return http_parse_head(s, strlen(s), request, h);
}

static void
test_request(void **state)
{
	struct http_head h;
	const char *s = "GET /s/0123456789ab/x?y HTTP/1.1\r\nHost: a.warren.localhost:8300\r\n"
			"Content-Length: 5\r\n\r\nhello";
	assert_int_equal(parse(s, true, &h), (ssize_t)(strlen(s) - 5));
	assert_int_equal(h.method_len, 3);
	assert_memory_equal(h.target, "/s/0123456789ab/x?y", h.target_len);
	assert_int_equal(h.body, HTTP_BODY_LENGTH);
	assert_int_equal(h.content_length, 5);
	assert_true(h.keep_alive);
	assert_memory_equal(h.host, "a.warren.localhost:8300", h.host_len);
}

static void
test_incomplete_and_limits(void **state)
{
	struct http_head h;
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: x\r\n", true, &h), 0);
	char *big = malloc(HTTP_MAX_HEAD + 10);
	memset(big, 'a', HTTP_MAX_HEAD + 9);
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	big[HTTP_MAX_HEAD + 9] = 0;
	assert_int_equal(parse(big, true, &h), -EMSGSIZE);
	free(big);
	char many[8192] = "GET / HTTP/1.1\r\n";
	for (int i = 0; i < HTTP_MAX_HEADERS + 1; i++)
		strcat(many, "A: b\r\n");
	strcat(many, "\r\n");
	assert_int_equal(parse(many, true, &h), -E2BIG);
}

static void
test_malformed(void **state)
{
	struct http_head h;
	assert_int_equal(parse("GET /\r\n\r\n", true, &h), -EBADMSG);
	assert_int_equal(parse("GET / HTTP/2.0\r\n\r\n", true, &h), -EBADMSG);
	assert_int_equal(parse("GET / HTTP/1.1\r\nBad Header: x\r\n\r\n", true, &h), -EBADMSG);
	assert_int_equal(parse("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
			       true, &h),
			 -EBADMSG);
	assert_int_equal(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: "
			       "3\r\n\r\n",
			       true, &h),
			 -EBADMSG);
	assert_int_equal(parse("GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", true, &h),
			 -EBADMSG);
}

static void
test_response_framing(void **state)
{
	struct http_head h;
	assert_true(parse("HTTP/1.0 200 OK\r\nServer: x\r\n\r\n", false, &h) > 0);
	http_response_framing(&h, false);
	assert_int_equal(h.body, HTTP_BODY_UNTIL_CLOSE);
	assert_false(h.keep_alive);
	assert_true(parse("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", false, &h) > 0);
	http_response_framing(&h, false);
	assert_int_equal(h.body, HTTP_BODY_NONE);
	assert_true(parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", false, &h) > 0);
	http_response_framing(&h, true);
	assert_int_equal(h.body, HTTP_BODY_NONE);
	assert_true(parse("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n", false,
			  &h) > 0);
	assert_int_equal(h.status, 101);
	assert_true(h.upgrade);
}

static void
test_chunked(void **state)
{
	const char *body = "4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nTrailer: x\r\n\r\nNEXT";
	struct http_chunked c = {0};
	bool done;
	/* byte by byte, as it may arrive */
	size_t i = 0;
	for (; i < strlen(body); i++) {
		ssize_t k = http_chunked_advance(&c, body + i, 1, &done);
		assert_int_equal(k, 1);
		if (done)
			break;
	}
	assert_true(done);
	assert_string_equal(body + i + 1, "NEXT");
	memset(&c, 0, sizeof c);
	ssize_t k = http_chunked_advance(&c, body, strlen(body), &done);
	assert_true(done);
	assert_int_equal(k, (ssize_t)(strlen(body) - 4));
	memset(&c, 0, sizeof c);
	assert_int_equal(http_chunked_advance(&c, "zz\r\n", 4, &done), -EBADMSG);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_incomplete_and_limits),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_response_framing),
		cmocka_unit_test(test_chunked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
