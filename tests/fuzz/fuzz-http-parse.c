/* libFuzzer harness: the gateway's HTTP parser (gateway/http-parse.c) on request and response
 * heads, then the chunked framer on whatever follows, fed in two pieces as the network would. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "http-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	bool request = data[0] & 1;
	const char *buf = (const char *)data + 1;
	size_t len = size - 1;
	struct http_head h;
	ssize_t n = http_parse_head(buf, len, request, &h);
	if (n > 0) {
		/* every offset the parser hands out lies inside the buffer */
		for (size_t i = 0; i < h.n_headers; i++) {
			const struct http_header *hd = &h.headers[i];
			if (hd->name < buf || hd->name + hd->name_len > buf + len ||
			    hd->value < buf || hd->value + hd->value_len > buf + len)
				__builtin_trap();
		}
		if ((size_t)n > len)
			__builtin_trap();
		if (!request)
			http_response_framing(&h, data[0] & 2);
		struct http_chunked c = {0};
		bool done = false;
		size_t off = (size_t)n, half = off + (len - off) / 2;
		ssize_t r = http_chunked_advance(&c, buf + off, half - off, &done);
		if (r >= 0 && !done)
			r = http_chunked_advance(&c, buf + half, len - half, &done);
		(void)r;
	}
	return 0;
}
