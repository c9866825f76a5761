/* warrenctl's HTTP/1.1 client of a sandbox's agent through the gateway (see agent-client.h).
 * Responses are parsed strictly: a head of at most AGENT_HEAD_MAX bytes, one Content-Length or
 * `Transfer-Encoding: chunked` (both, or either twice, refused), chunk sizes of at most 15 hex
 * digits on lines of at most 1 KiB; a body without either runs to the connection's close.
 * Nothing a peer sends can make a buffer grow unbounded. */
#include "agent-client.h"
#include "base64.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int
agent_target_init(struct agent_target *t, const char *gateway_url, const char *id,
		  const char *token)
{
	memset(t, 0, sizeof *t);
	if (strncmp(gateway_url, "http://", 7) || strlen(id) >= sizeof t->id ||
	    strlen(token) >= sizeof t->token || strlen(gateway_url) >= sizeof t->url)
		return -EINVAL;
	const char *h = gateway_url + 7, *end = h + strcspn(h, "/");
	if (*end && strcmp(end, "/"))
		return -EINVAL; /* a path prefix: the agent's routes are at the root */
	char host[64];
	const char *colon = memchr(h, ':', (size_t)(end - h));
	size_t hl = (size_t)((colon ? colon : end) - h);
	if (!hl || hl >= sizeof host)
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = 0;
	unsigned long port = 80;
	if (colon) {
		char *e;
		errno = 0;
		port = strtoul(colon + 1, &e, 10);
		if (e != end || colon + 1 == end || errno || !port || port > 65535)
			return -EINVAL;
	}
	t->addr.sin_family = AF_INET;
	t->addr.sin_port = htons((uint16_t)port);
	if (!strcmp(host, "localhost"))
		t->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &t->addr.sin_addr) != 1)
		return -EINVAL;
	snprintf(t->host, sizeof t->host, "%.*s", (int)(end - h), h);
	snprintf(t->url, sizeof t->url, "%s", gateway_url);
	snprintf(t->id, sizeof t->id, "%s", id);
	snprintf(t->token, sizeof t->token, "%s", token);
	/* all of them go into header lines */
	for (const char *p = t->token; *p; p++)
		if (!isxdigit((unsigned char)*p))
			return -EINVAL;
	for (const char *p = t->id; *p; p++)
		if (!isxdigit((unsigned char)*p))
			return -EINVAL;
	return 0;
}

int
agent_connect(const struct agent_target *t, int timeout_s)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (timeout_s > 0) {
		struct timeval tv = {.tv_sec = timeout_s};
		if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0) {
			int r = -errno;
			close(fd);
			return r;
		}
	}
	if (connect(fd, (const struct sockaddr *)&t->addr, sizeof t->addr) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int
agent_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

int
agent_write_chunk(int fd, const void *p, size_t n)
{
	char head[32];
	int l = snprintf(head, sizeof head, "%zx\r\n", n);
	int r = agent_write_all(fd, head, (size_t)l);
	if (r < 0 || (n && (r = agent_write_all(fd, p, n)) < 0))
		return r;
	return agent_write_all(fd, "\r\n", 2);
}

int
agent_send_head(int fd, const struct agent_target *t, const char *method, const char *target,
		const char *content_type, int64_t content_length, bool close)
{
	char head[2048], len[64];
	if (content_length >= 0)
		snprintf(len, sizeof len, "Content-Length: %lld\r\n", (long long)content_length);
	else
		snprintf(len, sizeof len, "Transfer-Encoding: chunked\r\n");
	int n = snprintf(head, sizeof head,
			 "%s %s HTTP/1.1\r\nHost: %s\r\nE2b-Sandbox-Id: %s\r\n"
			 "E2b-Sandbox-Port: 49983\r\nX-Warren-Agent-Token: %s\r\n"
			 "Connect-Protocol-Version: 1\r\n%s"
			 "%s%s%s%s\r\n",
			 method, target, t->host, t->id, t->token,
			 /* a stream: keepalive events keep a silent process's stream from being
			  * cut as idle on the way (the SDK asks the same) */
			 close ? "Connection: close\r\n" : "Keepalive-Ping-Interval: 10\r\n",
			 content_type ? "Content-Type: " : "", content_type ? content_type : "",
			 content_type ? "\r\n" : "", !strcmp(method, "GET") ? "" : len);
	if (n < 0 || (size_t)n >= sizeof head)
		return -ENAMETOOLONG;
	return agent_write_all(fd, head, (size_t)n);
}

/* ---- responses ---- */

/* More bytes into the buffer (what was consumed is dropped first): > 0, 0 at EOF, -errno. */
static ssize_t
fill(struct http_resp *r)
{
	if (r->off) {
		memmove(r->buf, r->buf + r->off, r->len - r->off);
		r->len -= r->off;
		r->off = 0;
	}
	if (r->len == AGENT_BUF_SIZE)
		return -EBADMSG;
	for (;;) {
		ssize_t k = recv(r->fd, r->buf + r->len, AGENT_BUF_SIZE - r->len, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		r->len += (size_t)k;
		return k;
	}
}

static bool
header_is(const char *line, size_t n, const char *name, const char **value, size_t *vlen)
{
	size_t l = strlen(name);
	if (n <= l || line[l] != ':' || strncasecmp(line, name, l))
		return false;
	const char *v = line + l + 1, *e = line + n;
	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*value = v;
	*vlen = (size_t)(e - v);
	return true;
}

int
http_resp_read_head(struct http_resp *r, int fd)
{
	/* resumable on a non-blocking socket: the first call sets the reader up */
	if (!r->buf) {
		memset(r, 0, sizeof *r);
		r->fd = fd;
		r->buf = malloc(AGENT_BUF_SIZE);
		if (!r->buf)
			return -ENOMEM;
	}
	char *end;
	for (;;) {
		end = r->len ? memmem(r->buf, r->len, "\r\n\r\n", 4) : NULL;
		if (end)
			break;
		if (r->len >= AGENT_HEAD_MAX)
			return -EBADMSG;
		ssize_t k = fill(r);
		if (k == 0)
			return -EPIPE;
		if (k < 0)
			return (int)k;
	}
	size_t head_len = (size_t)(end - r->buf) + 4;
	if (head_len > AGENT_HEAD_MAX)
		return -EBADMSG;
	/* status line: HTTP/1.x SP 3DIGIT SP reason */
	if (head_len < 14 || memcmp(r->buf, "HTTP/1.", 7) ||
	    (r->buf[7] != '0' && r->buf[7] != '1') || r->buf[8] != ' ' ||
	    !isdigit((unsigned char)r->buf[9]) || !isdigit((unsigned char)r->buf[10]) ||
	    !isdigit((unsigned char)r->buf[11]) || (r->buf[12] != ' ' && r->buf[12] != '\r'))
		return -EBADMSG;
	r->status = (r->buf[9] - '0') * 100 + (r->buf[10] - '0') * 10 + (r->buf[11] - '0');
	if (r->status < 100)
		return -EBADMSG;
	bool have_len = false, chunked = false;
	uint64_t clen = 0;
	char *line = memchr(r->buf, '\n', head_len) + 1;
	while (line < r->buf + head_len - 2) {
		char *nl = memchr(line, '\n', (size_t)(r->buf + head_len - line));
		if (!nl || nl == line || nl[-1] != '\r')
			return -EBADMSG;
		size_t n = (size_t)(nl - 1 - line);
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)line[i] < 0x20 && line[i] != '\t')
				return -EBADMSG;
		const char *v;
		size_t vl;
		if (header_is(line, n, "Content-Length", &v, &vl)) {
			if (have_len || !vl || vl > 18)
				return -EBADMSG;
			clen = 0;
			for (size_t i = 0; i < vl; i++) {
				if (!isdigit((unsigned char)v[i]))
					return -EBADMSG;
				clen = clen * 10 + (uint64_t)(v[i] - '0');
			}
			have_len = true;
		} else if (header_is(line, n, "Transfer-Encoding", &v, &vl)) {
			if (chunked || vl != 7 || strncasecmp(v, "chunked", 7))
				return -EBADMSG;
			chunked = true;
		} else if (header_is(line, n, "X-Warren-Error", &v, &vl))
			r->gateway_error = true;
		line = nl + 1;
	}
	if (have_len && chunked)
		return -EBADMSG;
	r->off = head_len;
	if (chunked)
		r->kind = HTTP_CHUNKED;
	else if (have_len || r->status == 204 || r->status == 304) {
		r->kind = HTTP_LEN;
		r->left = have_len ? clen : 0;
	} else
		r->kind = HTTP_TO_EOF;
	return 0;
}

static size_t
take(struct http_resp *r, void *dst, size_t n, uint64_t limit)
{
	size_t avail = r->len - r->off;
	if (n > avail)
		n = avail;
	if (n > limit)
		n = (size_t)limit;
	memcpy(dst, r->buf + r->off, n);
	r->off += n;
	return n;
}

ssize_t
http_resp_read_body(struct http_resp *r, void *dst, size_t n)
{
	for (;;) {
		if (r->done || !n)
			return 0;
		size_t avail = r->len - r->off;
		if (r->kind == HTTP_TO_EOF || r->left > 0 ||
		    (r->kind == HTTP_LEN && r->left == 0)) {
			if (r->kind == HTTP_LEN && r->left == 0) {
				r->done = true;
				return 0;
			}
			if (!avail) {
				ssize_t k = fill(r);
				if (k == 0 && r->kind == HTTP_TO_EOF) {
					r->done = true;
					return 0;
				}
				if (k <= 0)
					return k == 0 ? -EPIPE : k;
			}
			size_t got = take(r, dst, n, r->kind == HTTP_TO_EOF ? UINT64_MAX : r->left);
			if (r->kind != HTTP_TO_EOF) {
				r->left -= got;
				if (r->kind == HTTP_CHUNKED && !r->left)
					r->need_crlf = true;
			}
			return (ssize_t)got;
		}
		/* chunked framing: the CRLF after a chunk, a size line, the trailer */
		char *p = r->buf + r->off;
		char *nl = avail ? memchr(p, '\n', avail) : NULL;
		if (!nl) {
			if (avail > 1024)
				return -EBADMSG;
			ssize_t k = fill(r);
			if (k <= 0)
				return k == 0 ? -EPIPE : k;
			continue;
		}
		size_t ll = (size_t)(nl - p);
		if (!ll || p[ll - 1] != '\r')
			return -EBADMSG;
		ll--;
		r->off += ll + 2;
		if (r->need_crlf) {
			if (ll)
				return -EBADMSG;
			r->need_crlf = false;
			continue;
		}
		if (r->in_trailer) {
			if (!ll)
				r->done = true; /* trailer fields are read and dropped */
			continue;
		}
		uint64_t size = 0;
		size_t i = 0;
		for (; i < ll && isxdigit((unsigned char)p[i]); i++) {
			if (i >= 15)
				return -EBADMSG;
			size = size * 16 +
			       (uint64_t)(isdigit((unsigned char)p[i])
						  ? p[i] - '0'
						  : tolower((unsigned char)p[i]) - 'a' + 10);
		}
		if (!i || (i < ll && p[i] != ';' && p[i] != ' ' && p[i] != '\t'))
			return -EBADMSG;
		if (size == 0)
			r->in_trailer = true;
		r->left = size;
	}
}

int
http_resp_read_all(struct http_resp *r, char **out, size_t *len, size_t max)
{
	size_t cap = 4096, n = 0;
	char *b = malloc(cap + 1);
	if (!b)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			if (cap >= max) {
				free(b);
				return -EFBIG;
			}
			cap = cap * 2 > max ? max : cap * 2;
			char *g = realloc(b, cap + 1);
			if (!g) {
				free(b);
				return -ENOMEM;
			}
			b = g;
		}
		ssize_t k = http_resp_read_body(r, b + n, cap - n);
		if (k < 0) {
			free(b);
			return k == -EAGAIN ? -ETIMEDOUT : (int)k;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	b[n] = 0;
	*out = b;
	*len = n;
	return 0;
}

void
http_resp_done(struct http_resp *r)
{
	free(r->buf);
	r->buf = NULL;
}

int
agent_unary(const struct agent_target *t, const char *method, json_t *req, int *status,
	    bool *gateway_error, json_t **answer)
{
	*answer = NULL;
	char *body = json_dumps(req, JSON_COMPACT);
	if (!body)
		return -ENOMEM;
	char target[256];
	snprintf(target, sizeof target, "/%s", method);
	int fd = agent_connect(t, 60);
	if (fd < 0) {
		free(body);
		return fd;
	}
	int r = agent_send_head(fd, t, "POST", target, "application/json", (int64_t)strlen(body),
				true);
	if (r >= 0)
		r = agent_write_all(fd, body, strlen(body));
	free(body);
	struct http_resp resp = {0};
	if (r >= 0)
		r = http_resp_read_head(&resp, fd);
	if (r == -EAGAIN)
		r = -ETIMEDOUT; /* SO_RCVTIMEO */
	char *data = NULL;
	size_t len = 0;
	if (r >= 0)
		r = http_resp_read_all(&resp, &data, &len, 1 << 20);
	if (r >= 0) {
		*status = resp.status;
		*gateway_error = resp.gateway_error;
		*answer = json_loadb(data, len, 0, NULL);
		if (!*answer && resp.status == 200)
			r = -EBADMSG;
		/* a refusal's text (the gateway's) is kept as a string for the message */
		if (!*answer && len)
			*answer = json_string(data);
	}
	free(data);
	http_resp_done(&resp);
	close(fd);
	return r;
}

/* ---- envelopes ---- */

int
envelope_feed(struct envelope_reader *e, const void *p, size_t n)
{
	if (e->len + n > e->cap) {
		size_t cap = e->cap ? e->cap : 65536;
		while (cap < e->len + n)
			cap *= 2;
		if (cap > ENVELOPE_MAX + 5 + AGENT_BUF_SIZE)
			return -EBADMSG;
		uint8_t *g = realloc(e->buf, cap);
		if (!g)
			return -ENOMEM;
		e->buf = g;
		e->cap = cap;
	}
	memcpy(e->buf + e->len, p, n);
	e->len += n;
	return 0;
}

int
envelope_next(struct envelope_reader *e, uint8_t *flags, json_t **msg)
{
	if (e->len < 5)
		return 0;
	uint32_t n = (uint32_t)e->buf[1] << 24 | (uint32_t)e->buf[2] << 16 |
		     (uint32_t)e->buf[3] << 8 | e->buf[4];
	if (n > ENVELOPE_MAX || (e->buf[0] & 1)) /* too big, or compressed (never asked for) */
		return -EBADMSG;
	if (e->len < 5 + (size_t)n)
		return 0;
	*flags = e->buf[0];
	*msg = json_loadb((const char *)e->buf + 5, n, 0, NULL);
	memmove(e->buf, e->buf + 5 + n, e->len - 5 - n);
	e->len -= 5 + n;
	return *msg ? 1 : -EBADMSG;
}

void
envelope_reader_free(struct envelope_reader *e)
{
	free(e->buf);
	*e = (struct envelope_reader){0};
}

/* ---- base64, URLs ---- */

char *
b64_encode(const void *p, size_t n)
{
	char *out = malloc(base64_len(n) + 1);
	if (out)
		base64_encode(p, n, out);
	return out;
}

int
url_encode(const char *s, char *out, size_t size)
{
	size_t o = 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (o + 4 > size)
			return -ENAMETOOLONG;
		if (isalnum(c) || strchr("-._~/", c))
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, 4, "%%%02X", c);
	}
	out[o] = 0;
	return 0;
}

/* ---- messages ---- */

void
agent_describe_status(const struct agent_target *t, int status, bool gateway_error,
		      const char *body, char *out, size_t size)
{
	if (gateway_error) {
		switch (status) {
		case 404:
			snprintf(out, size, "no sandbox %s (it is gone)", t->id);
			return;
		case 403:
			snprintf(out, size,
				 "the gateway refused the agent of sandbox %s (its agent "
				 "token was not accepted)",
				 t->id);
			return;
		case 502:
			snprintf(out, size,
				 "sandbox %s has no agent answering (its template has "
				 "no /.warren/agent, or it is not running)",
				 t->id);
			return;
		case 503:
			snprintf(out, size, "the gateway is not ready yet; try again");
			return;
		}
	}
	char msg[512] = "";
	json_t *j = body ? json_loads(body, 0, NULL) : NULL;
	const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
	/* the peer's text, without control characters, bounded */
	size_t o = 0;
	for (const char *p = m ? m : body ? body : ""; *p && o + 1 < sizeof msg; p++)
		msg[o++] = (unsigned char)*p < 0x20 || *p == 0x7f ? ' ' : *p;
	while (o && msg[o - 1] == ' ')
		o--;
	msg[o] = 0;
	json_decref(j);
	snprintf(out, size, "%s answered %d%s%s", gateway_error ? "the gateway" : "the agent",
		 status, msg[0] ? ": " : "", msg);
}
