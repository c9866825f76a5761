/* libFuzzer harness: the gateway's HTTP parser (gateway/http-parse.c) on request and response
 * heads, then the chunked framer on whatever follows, fed in two pieces as the network would.
 * Beyond "no crash" it checks the strictness promises: an accepted head has no bare CR or LF
 * and no NUL, every prefix of it is "need more" (so the proxy's incremental parsing agrees with
 * a one-shot parse), and the framer gives the same answer whole and split. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "http-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_chunked(const char *b, size_t len, size_t split)
{
	struct http_chunked c = {0};
	bool done = false;
	ssize_t whole = http_chunked_advance(&c, b, len, &done);
	if (whole > (ssize_t)len || (whole >= 0 && !done && whole != (ssize_t)len))
		__builtin_trap();
	struct http_chunked c2 = {0};
	bool done2 = false;
	ssize_t r = http_chunked_advance(&c2, b, split, &done2);
	ssize_t total = r;
	if (r >= 0 && !done2) {
		ssize_t r2 = http_chunked_advance(&c2, b + split, len - split, &done2);
		total = r2 < 0 ? r2 : r + r2;
	}
	/* the same verdict and the same end whether the body came in one piece or two */
	if ((whole < 0) != (total < 0) || (whole >= 0 && (done != done2 || whole != total)))
		__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	bool request = data[0] & 1;
	bool head_method = data[0] & 2;
	/* sometimes a small bound, as for --max-response-head */
	size_t max_head = (data[0] & 4) ? 64 + (size_t)data[1] * 16 : HTTP_MAX_HEAD;
	const char *buf = (const char *)data + 2;
	size_t len = size - 2;
	struct http_head h;
	ssize_t n = http_parse_head(buf, len, request, max_head, &h);
	if (n == -EBADMSG && !h.error)
		__builtin_trap();
	if (n > 0) {
		if ((size_t)n > len || (size_t)n > max_head || (size_t)n != h.head_len)
			__builtin_trap();
		/* every offset the parser hands out lies inside the head */
		for (size_t i = 0; i < h.n_headers; i++) {
			const struct http_header *hd = &h.headers[i];
			if (hd->name < buf || hd->name + hd->name_len > buf + n ||
			    hd->value < buf || hd->value + hd->value_len > buf + n)
				__builtin_trap();
		}
		/* no NUL, every CR followed by LF, every LF preceded by CR */
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == 0 || (buf[i] == '\r' && (i + 1 >= n || buf[i + 1] != '\n')) ||
			    (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r')))
				__builtin_trap();
		}
		if (h.body == HTTP_BODY_CHUNKED && h.content_length)
			__builtin_trap();
		/* a prefix of an accepted head is never refused nor complete */
		struct http_head h2;
		size_t cut = (size_t)data[1] % (size_t)n;
		if (http_parse_head(buf, cut, request, max_head, &h2) != 0)
			__builtin_trap();
		if (!request)
			http_response_framing(&h, head_method);
		size_t rest = len - (size_t)n;
		check_chunked(buf + n, rest, rest ? (size_t)data[1] % (rest + 1) : 0);
	} else if (len) {
		/* the framer alone, on the whole input */
		check_chunked(buf, len, (size_t)data[1] % (len + 1));
	}
	return 0;
}
