/* A small, pure HTTP/1.x head parser and body framer for the gateway. No I/O, no allocation:
 * it reads a buffer and says where things are, so it can be fuzzed and unit-tested alone.
 * It follows RFC 9112 strictly, as a request smuggling defence: whatever it accepts, every
 * other conforming parser reads the same way (see http-parse.c for the list of refusals). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP_MAX_HEAD 16384
#define HTTP_MAX_HEADERS 100
/* chunk-size line (size + extensions) and the whole trailer section */
#define HTTP_MAX_CHUNK_LINE 1024
#define HTTP_MAX_TRAILER 16384

enum http_body { HTTP_BODY_NONE, HTTP_BODY_LENGTH, HTTP_BODY_CHUNKED, HTTP_BODY_UNTIL_CLOSE };

struct http_header {
	const char *name, *value;
	size_t name_len, value_len;
};

struct http_head {
	/* request line */
	const char *method, *target;
	size_t method_len, target_len;
	/* status line */
	int status;
	int version_minor; /* HTTP/1.<n> */
	size_t line_len;   /* first line, including CRLF */
	size_t head_len;   /* everything up to and including the blank line */
	size_t n_headers;
	/* derived */
	enum http_body body;
	uint64_t content_length;
	bool keep_alive;
	bool upgrade;
	const char *host;
	size_t host_len;
	const char *error; /* on -EBADMSG: what was wrong, for logs and the 400's body */
	struct http_header headers[HTTP_MAX_HEADERS];
};

/* Parse a request (request = true) or response head. Returns head_len when complete, 0 when
 * more bytes are needed, -EMSGSIZE when the head is not complete within max_head bytes
 * (0 or more than HTTP_MAX_HEAD means HTTP_MAX_HEAD), -E2BIG for too many headers, -EBADMSG
 * (h->error says why) for anything malformed, even before the head is complete. */
ssize_t http_parse_head(const char *buf, size_t len, bool request, size_t max_head,
			struct http_head *h);
/* For a response: the body framing, given the request's method. */
void http_response_framing(struct http_head *resp, bool request_was_head);
bool http_header_is(const struct http_header *hd, const char *name);

/* Zero-initialised = at the start of a chunked body. */
struct http_chunked {
	int state;
	uint32_t line; /* bytes of the current chunk-size line, or of the trailer section */
	uint64_t remaining;
};
/* Walk chunked framing over buf; returns bytes consumed (all part of the body), sets *done
 * when the last chunk and trailers end; -EBADMSG on bad framing (nothing of buf may then be
 * forwarded). */
ssize_t http_chunked_advance(struct http_chunked *c, const char *buf, size_t len, bool *done);
