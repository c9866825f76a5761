/* Unit tests of the gateway's HTTP parser and chunked framer: each request smuggling class
 * refused, next to the valid message it differs from. */
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
	return http_parse_head(s, strlen(s), request, HTTP_MAX_HEAD, h);
}

/* with embedded NULs: the length is the literal's */
#define PARSE_LIT(lit, req, h) http_parse_head(lit, sizeof(lit) - 1, req, HTTP_MAX_HEAD, h)

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
	/* a bad line is refused before the head is complete */
	assert_int_equal(PARSE_LIT("GET / HTTP/1.1\r\nX: a\0\r\nHost:", true, &h), -EBADMSG);
	assert_int_equal(parse("GET / HTTP/1.1\r\nX: a\r\nHost:", true, &h), 0);
	/* a caller's smaller bound (the upstream response head option) */
	const char *resp =
		"HTTP/1.1 200 OK\r\nX-Long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaa\r\n\r\n";
	assert_int_equal(http_parse_head(resp, strlen(resp), false, 64, &h), -EMSGSIZE);
	assert_int_equal(http_parse_head(resp, strlen(resp), false, 128, &h),
			 (ssize_t)strlen(resp));
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

struct hcase {
	const char *s;
	size_t len; /* 0: strlen */
};
#define LIT(x)                                                                                     \
	{                                                                                          \
		x, sizeof(x) - 1                                                                   \
	}

static void
expect_all(const struct hcase *cases, size_t n, bool request, ssize_t want_bad)
{
	for (size_t i = 0; i < n; i++) {
		struct http_head h;
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].s);
		ssize_t r = http_parse_head(cases[i].s, len, request, HTTP_MAX_HEAD, &h);
		if (want_bad ? r != want_bad : r != (ssize_t)len) {
			print_error("case %zu: %ld for \"%.*s\" (%s)\n", i, (long)r, (int)len,
				    cases[i].s, h.error ? h.error : "");
			fail();
		}
		if (want_bad)
			assert_non_null(h.error);
	}
}

#define OK(cases, req) expect_all(cases, sizeof(cases) / sizeof(cases[0]), req, 0)
#define BAD(cases, req) expect_all(cases, sizeof(cases) / sizeof(cases[0]), req, -EBADMSG)

/* Valid requests, each the sibling of refused ones below. */
static void
test_valid_requests(void **state)
{
	static const struct hcase ok[] = {
		LIT("GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX: a\tb\r\n\r\n"),	    /* HTAB in a value */
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9\r\n\r\n"), /* obs-text */
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX:\r\n\r\n"),		    /* empty value */
		LIT("GET / HTTP/1.1\r\nHost:   a  \r\n\r\n"),		    /* OWS trimmed */
		LIT("get /a/b;c=d?e=f&g=%20~!$'()*+,@: HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET / HTTP/1.0\r\n\r\n"), /* HTTP/1.0 needs no Host */
		LIT("GET / HTTP/1.1\r\nHost: [::1]:8300\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: \r\n\r\n"), /* empty authority */
		LIT("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 007\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:chunked \r\n\r\n"),
	};
	OK(ok, true);
	struct http_head h;
	assert_true(parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", true,
			  &h) > 0);
	assert_int_equal(h.body, HTTP_BODY_CHUNKED);
	assert_true(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true, &h) > 0);
	assert_true(h.keep_alive);
	assert_true(parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: x,\tclose\r\n\r\n", true, &h) >
		    0);
	assert_false(h.keep_alive);
}

static void
test_malformed(void **state)
{
	static const struct hcase bad[] = {
		/* bare LF, bare CR, anywhere in the head */
		LIT("GET / HTTP/1.1\nHost: a\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\n\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX\r: a\r\n\r\n"),
		LIT("GET /\r HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"), /* leading empty line */
		/* NUL and other control characters */
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX\0: a\r\n\r\n"),
		LIT("GET /\0 HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("G\0T / HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\0.b\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX: a\x01\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX: a\x1b[0m\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX\t: a\r\n\r\n"),
		LIT("GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET / HTTP/1.1\t\r\nHost: a\r\n\r\n"),
		/* obs-fold */
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\n Host: a\r\n\r\n"),
		/* header names */
		LIT("GET / HTTP/1.1\r\nHost : a\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nBad Header: x\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\n: x\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nnocolon\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX(y): z\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nX\xc3\xa9: z\r\n\r\n"),
		/* Content-Length */
		LIT("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 1\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 1\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1234567890123456\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n"),
		/* Content-Length with Transfer-Encoding, either order */
		LIT("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: "
		    "3\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: "
		    "chunked\r\n\r\n"),
		/* Transfer-Encoding other than a final, single chunked */
		LIT("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \"chunked\"\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
		    "chunked\r\nTransfer-Encoding: "
		    "chunked\r\n\r\n"),
		LIT("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
		    "chunked\r\nTransfer-Encoding: "
		    "gzip\r\n\r\n"),
		LIT("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
		/* Host */
		LIT("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nX: y\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a b\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: u@a\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: a\xc3\xa9\r\n\r\n"),
		/* method, target, version */
		LIT("G@T / HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT(" / HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET  / HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET /  HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET / HTTP/1.1 \r\nHost: a\r\n\r\n"),
		LIT("GET /a b HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET a HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET * HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET /\"x\" HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET /<x> HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET /#f HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET / HTTP/1.2\r\nHost: a\r\n\r\n"),
		LIT("GET / HTTP/2.0\r\nHost: a\r\n\r\n"),
		LIT("GET / http/1.1\r\nHost: a\r\n\r\n"),
		LIT("GET / HTTP/1.10\r\nHost: a\r\n\r\n"),
		LIT("GET / HTTP/1\r\nHost: a\r\n\r\n"),
		LIT("GET /\r\nHost: a\r\n\r\n"),
		LIT("GET\r\nHost: a\r\n\r\n"),
	};
	BAD(bad, true);
}

static void
test_responses(void **state)
{
	static const struct hcase ok[] = {
		LIT("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"),
		LIT("HTTP/1.1 204\r\n\r\n"),
		LIT("HTTP/1.1 200 \r\n\r\n"),
		LIT("HTTP/1.0 404 Not\tFound \xc3\xa9\r\n\r\n"),
		LIT("HTTP/1.1 599 x\r\nTransfer-Encoding: chunked\r\n\r\n"),
		LIT("HTTP/1.1 200 OK\r\nHost: a\r\nHost: b\r\n\r\n"), /* Host means nothing here */
	};
	OK(ok, false);
	static const struct hcase bad[] = {
		LIT("HTTP/1.1 200 OK\nContent-Length: 2\r\n\r\n"),
		LIT("HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\n"),
		LIT("HTTP/1.1 200 OK\r\nX: a\0\r\n\r\n"),
		LIT("HTTP/1.1 200 OK\r\nX: a\rSet-Cookie: b\r\n\r\n"),
		LIT("HTTP/1.1 200 O\x01K\r\n\r\n"),
		LIT("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n"),
		LIT("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n"),
		LIT("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"),
		LIT("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"),
		LIT("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
		LIT("HTTP/1.1 099 x\r\n\r\n"),
		LIT("HTTP/1.1 600 x\r\n\r\n"),
		LIT("HTTP/1.1 2x0 x\r\n\r\n"),
		LIT("HTTP/1.1 200OK\r\n\r\n"),
		LIT("HTTP/1.1 20\r\n\r\n"),
		LIT("HTTP/2 200 OK\r\n\r\n"),
		LIT("HTTP/1.1  200 OK\r\n\r\n"),
		LIT("garbage\r\n\r\n"),
	};
	BAD(bad, false);
}

static void
test_response_framing(void **state)
{
	struct http_head h;
	assert_true(parse("HTTP/1.0 200 OK\r\nServer: x\r\n\r\n", false, &h) > 0);
	http_response_framing(&h, false);
	assert_int_equal(h.body, HTTP_BODY_UNTIL_CLOSE);
	assert_false(h.keep_alive);
	assert_true(parse("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", false, &h) >
		    0);
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

/* The whole body at once and byte by byte must agree: done at the same place, or refused. */
static ssize_t
chunked_all(const char *b, size_t len, bool *done)
{
	struct http_chunked c = {0};
	ssize_t k = http_chunked_advance(&c, b, len, done);
	struct http_chunked c1 = {0};
	bool d1 = false;
	ssize_t k1 = 0;
	for (size_t i = 0; i < len && !d1; i++) {
		ssize_t r = http_chunked_advance(&c1, b + i, 1, &d1);
		if (r < 0) {
			k1 = r;
			break;
		}
		k1 += r;
	}
	assert_int_equal(k, k1);
	assert_int_equal(*done, d1);
	return k;
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

	static const struct hcase ok[] = {
		LIT("0\r\n\r\n"),
		LIT("4\r\nWiki\r\n0\r\n\r\n"),
		LIT("A\r\n0123456789\r\n0\r\n\r\n"),
		LIT("a\r\n0123456789\r\n0000\r\n\r\n"),
		LIT("4;a=b;c\r\nWiki\r\n0\r\n\r\n"),
		LIT("4 ; a = b\r\nWiki\r\n0\r\n\r\n"), /* BWS */
		LIT("4;a=\"x y;\\\"z\"\r\nWiki\r\n0\r\n\r\n"),
		LIT("4\r\nWiki\r\n0\r\nA: b\r\nC:\td\r\n\r\n"),
		LIT("4\r\n\0\r\n\0\r\n0\r\n\r\n"), /* any byte in data */
		LIT("fffffffffffffff\r\n"),	   /* 15 digits: not done, not refused */
	};
	for (size_t n = 0; n < sizeof ok / sizeof ok[0]; n++) {
		k = chunked_all(ok[n].s, ok[n].len, &done);
		if (k != (ssize_t)ok[n].len) {
			print_error("ok case %zu: %ld\n", n, (long)k);
			fail();
		}
		assert_true(done || n == sizeof ok / sizeof ok[0] - 1);
	}
	static const struct hcase bad[] = {
		LIT("\r\n\r\n"),		 /* no digits: not the last chunk */
		LIT(";x\r\n\r\n"),		 /* no digits before an extension */
		LIT(" 4\r\nWiki\r\n0\r\n\r\n"),	 /* leading space */
		LIT("zz\r\n"),			 /* not hex */
		LIT("0x4\r\nWiki\r\n0\r\n\r\n"), /* garbage after the size */
		LIT("4x\r\nWiki\r\n0\r\n\r\n"),
		LIT("-1\r\n"),
		LIT("+4\r\nWiki\r\n0\r\n\r\n"),
		LIT("4 4\r\nWiki\r\n0\r\n\r\n"),	  /* whitespace then more digits */
		LIT("4 \r\nWiki\r\n0\r\n\r\n"),		  /* BWS without an extension */
		LIT("4\nWiki\r\n0\r\n\r\n"),		  /* bare LF after the size */
		LIT("4\rWiki\r\n0\r\n\r\n"),		  /* CR not followed by LF */
		LIT("4\r\nWikiX\r\n0\r\n\r\n"),		  /* data longer than its size */
		LIT("4\r\nWiki\n0\r\n\r\n"),		  /* bare LF after data */
		LIT("10000000000000000\r\n"),		  /* 17 hex digits: overflow */
		LIT("1000000000000000\r\n"),		  /* 16 hex digits: over 2^60 */
		LIT("4;a\0\r\nWiki\r\n0\r\n\r\n"),	  /* NUL in an extension */
		LIT("4;a\nb\r\nWiki\r\n0\r\n\r\n"),	  /* bare LF in an extension */
		LIT("4;a=\"x\ry\"\r\nWiki\r\n0\r\n\r\n"), /* CR inside a quoted extension */
		LIT("4;a@b\r\nWiki\r\n0\r\n\r\n"),	  /* not a token */
		LIT("0\r\n\n"),				  /* bare LF ends the trailers */
		LIT("0\r\nA: b\n\r\n"),			  /* bare LF in a trailer */
		LIT("0\r\nA: b\r\n c\r\n\r\n"),		  /* obs-fold in the trailers */
		LIT("0\r\nA b: c\r\n\r\n"),		  /* a trailer name with a space */
		LIT("0\r\nnocolon\r\n\r\n"),
		LIT("0\r\n: x\r\n\r\n"),
		LIT("0\r\nA: b\0\r\n\r\n"),
		LIT("0\r\n\rx"),
	};
	for (size_t n = 0; n < sizeof bad / sizeof bad[0]; n++) {
		k = chunked_all(bad[n].s, bad[n].len, &done);
		if (k != -EBADMSG) {
			print_error("bad case %zu: %ld\n", n, (long)k);
			fail();
		}
	}
	/* a chunk-size line and a trailer section are bounded */
	char line[HTTP_MAX_CHUNK_LINE + 16] = "4;";
	memset(line + 2, 'a', sizeof line - 2);
	memset(&c, 0, sizeof c);
	assert_int_equal(http_chunked_advance(&c, line, sizeof line, &done), -EBADMSG);
	char *tr = malloc(HTTP_MAX_TRAILER + 64);
	memcpy(tr, "0\r\nX: ", 6);
	memset(tr + 6, 'a', HTTP_MAX_TRAILER + 58);
	memset(&c, 0, sizeof c);
	assert_int_equal(http_chunked_advance(&c, tr, HTTP_MAX_TRAILER + 64, &done), -EBADMSG);
	free(tr);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request),	       cmocka_unit_test(test_incomplete_and_limits),
		cmocka_unit_test(test_valid_requests), cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_responses),      cmocka_unit_test(test_response_framing),
		cmocka_unit_test(test_chunked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
