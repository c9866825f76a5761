/* warrenctl's client of a sandbox's agent (E2B's envd API) through the gateway: a small
 * HTTP/1.1 client over TCP (strict response parsing: a bounded head, Content-Length, chunked or
 * until close), Connect envelopes, base64 (envd's JSON mapping of bytes) and the sentence a
 * person reads for each way a request can fail. Runs in warrenctl only. */
#pragma once
#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where a sandbox's agent is reached: the gateway's address, the sandbox's routing headers and
 * its agent token (AgentToken on D-Bus). */
struct agent_target {
	struct sockaddr_in addr;
	char host[64]; /* the Host header: the URL's host:port */
	char url[128]; /* for messages */
	char id[16];
	char token[160];
};

/* Only http://IPv4[:port][/] and http://localhost[:port][/]: -EINVAL otherwise. */
int agent_target_init(struct agent_target *t, const char *gateway_url, const char *id,
		      const char *token);

/* A connected socket (blocking, with `timeout_s` on each send and receive; 0: none), or
 * -errno. */
int agent_connect(const struct agent_target *t, int timeout_s);

/* The request head with the routing headers; content_length < 0: chunked body. `target` is the
 * path and query, already encoded. `close`: Connection: close (not for a server stream: the
 * agent ends a connection that asked for it as soon as its queue drains, stream or not). */
int agent_send_head(int fd, const struct agent_target *t, const char *method, const char *target,
		    const char *content_type, int64_t content_length, bool close);
int agent_write_all(int fd, const void *p, size_t n);
/* One chunk of a chunked body (n == 0: the last one). */
int agent_write_chunk(int fd, const void *p, size_t n);

enum http_body_kind { HTTP_LEN, HTTP_CHUNKED, HTTP_TO_EOF };

#define AGENT_HEAD_MAX 16384
#define AGENT_BUF_SIZE 65536

struct http_resp {
	int fd;
	int status;
	bool gateway_error; /* X-Warren-Error: the gateway answered, not the agent */
	enum http_body_kind kind;
	uint64_t left; /* HTTP_LEN: bytes left; HTTP_CHUNKED: left in this chunk */
	bool need_crlf, in_trailer, done;
	char *buf; /* AGENT_BUF_SIZE: bytes read past what was consumed */
	size_t off, len;
};

/* Read and parse the head; `r` zeroed before the first call. -EBADMSG for a malformed one,
 * -EPIPE if the peer closed, -EAGAIN (call again) on a non-blocking socket or a timeout. */
int http_resp_read_head(struct http_resp *r, int fd);
/* Body bytes: > 0 read, 0 at its end, -errno (-EAGAIN on a non-blocking socket, -EBADMSG for
 * bad framing, -EPIPE for a body cut short). */
ssize_t http_resp_read_body(struct http_resp *r, void *dst, size_t n);
/* The whole (small) body, NUL-terminated, at most `max` bytes (-EFBIG beyond). */
int http_resp_read_all(struct http_resp *r, char **out, size_t *len, size_t max);
void http_resp_done(struct http_resp *r);

/* A unary Connect call with a JSON body: the answer's status, whether the gateway gave it, and
 * its JSON (a refusal's text as a JSON string; NULL if empty). -errno if none came. */
int agent_unary(const struct agent_target *t, const char *method, json_t *req, int *status,
		bool *gateway_error, json_t **answer);

/* Connect envelopes of a server stream, fed from body bytes. */
struct envelope_reader {
	uint8_t *buf;
	size_t len, cap;
};
#define ENVELOPE_MAX (8u << 20)
int envelope_feed(struct envelope_reader *e, const void *p, size_t n);
/* The next whole message: 1 (*flags, *msg, *msg_len valid until the next call), 0: need more,
 * -EBADMSG: too big. */
int envelope_next(struct envelope_reader *e, uint8_t *flags, json_t **msg);
void envelope_reader_free(struct envelope_reader *e);

/* base64 (common/base64.h) into a malloc'd string */
char *b64_encode(const void *p, size_t n);

/* %-encode for a query value: unreserved characters and '/' stay. */
int url_encode(const char *s, char *out, size_t size);

/* The sentence for a failed answer: the gateway's refusals in the user's terms, else the
 * agent's own message (from its JSON body `body`, may be NULL). */
void agent_describe_status(const struct agent_target *t, int status, bool gateway_error,
			   const char *body, char *out, size_t size);
