/* HTTP/1.x parsing for the gateway (see http-parse.h). Strict where it matters for framing:
 * conflicting Content-Length, Transfer-Encoding other than chunked, bare LF in the request
 * line, and oversized heads are refused. */
#include "http-parse.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

static bool
token_char(char c)
{
	return c > 32 && c < 127 && !strchr("()<>@,;:\\\"/[]?={}", c);
}

bool
http_header_is(const struct http_header *hd, const char *name)
{
	return hd->name_len == strlen(name) && !strncasecmp(hd->name, name, hd->name_len);
}

static bool
value_has_token(const char *v, size_t len, const char *tok)
{
	size_t tl = strlen(tok);
	for (size_t i = 0; i + tl <= len; i++) {
		if (strncasecmp(v + i, tok, tl))
			continue;
		bool start = i == 0 || v[i - 1] == ',' || v[i - 1] == ' ';
		bool end = i + tl == len || v[i + tl] == ',' || v[i + tl] == ' ';
		if (start && end)
			return true;
	}
	return false;
}

static const char *
find_crlf(const char *p, const char *end)
{
	for (; p + 1 < end; p++)
		if (p[0] == '\r' && p[1] == '\n')
			return p;
	return NULL;
}

static int
parse_first_line(const char *p, const char *eol, bool request, struct http_head *h)
{
	if (request) {
		const char *sp1 = memchr(p, ' ', (size_t)(eol - p));
		if (!sp1 || sp1 == p)
			return -EBADMSG;
		for (const char *q = p; q < sp1; q++)
			if (!token_char(*q))
				return -EBADMSG;
		const char *sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
		if (!sp2 || sp2 == sp1 + 1)
			return -EBADMSG;
		h->method = p;
		h->method_len = (size_t)(sp1 - p);
		h->target = sp1 + 1;
		h->target_len = (size_t)(sp2 - sp1 - 1);
		for (size_t i = 0; i < h->target_len; i++)
			if ((unsigned char)h->target[i] <= 32 || h->target[i] == 127)
				return -EBADMSG;
		if (eol - sp2 - 1 != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) || sp2[8] < '0' ||
		    sp2[8] > '1')
			return -EBADMSG;
		h->version_minor = sp2[8] - '0';
		return 0;
	}
	if (eol - p < 12 || strncmp(p, "HTTP/1.", 7) || (p[7] != '0' && p[7] != '1') || p[8] != ' ')
		return -EBADMSG;
	h->version_minor = p[7] - '0';
	int st = 0;
	for (int i = 9; i < 12; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EBADMSG;
		st = st * 10 + p[i] - '0';
	}
	if (st < 100)
		return -EBADMSG;
	h->status = st;
	return 0;
}

ssize_t
http_parse_head(const char *buf, size_t len, bool request, struct http_head *h)
{
	memset(h, 0, sizeof *h);
	size_t scan = len > HTTP_MAX_HEAD ? HTTP_MAX_HEAD : len;
	const char *end = buf + scan;
	const char *eol = find_crlf(buf, end);
	if (!eol)
		return len >= HTTP_MAX_HEAD ? -EMSGSIZE : 0;
	int r = parse_first_line(buf, eol, request, h);
	if (r < 0)
		return r;
	h->line_len = (size_t)(eol + 2 - buf);
	bool have_length = false, chunked = false, close = false, keep = false;
	const char *p = eol + 2;
	for (;;) {
		eol = find_crlf(p, end);
		if (!eol)
			return len >= HTTP_MAX_HEAD ? -EMSGSIZE : 0;
		if (eol == p)
			break;
		if (h->n_headers >= HTTP_MAX_HEADERS)
			return -E2BIG;
		const char *colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon || colon == p)
			return -EBADMSG;
		for (const char *q = p; q < colon; q++)
			if (!token_char(*q))
				return -EBADMSG; /* also refuses space before the colon */
		const char *v = colon + 1, *ve = eol;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		struct http_header *hd = &h->headers[h->n_headers++];
		*hd = (struct http_header){p, v, (size_t)(colon - p), (size_t)(ve - v)};
		if (http_header_is(hd, "Content-Length")) {
			uint64_t n = 0;
			if (hd->value_len == 0 || hd->value_len > 15)
				return -EBADMSG;
			for (size_t i = 0; i < hd->value_len; i++) {
				if (v[i] < '0' || v[i] > '9')
					return -EBADMSG;
				n = n * 10 + (uint64_t)(v[i] - '0');
			}
			if (have_length && n != h->content_length)
				return -EBADMSG;
			have_length = true;
			h->content_length = n;
		} else if (http_header_is(hd, "Transfer-Encoding")) {
			if (hd->value_len != 7 || strncasecmp(v, "chunked", 7))
				return -EBADMSG;
			chunked = true;
		} else if (http_header_is(hd, "Connection")) {
			close |= value_has_token(v, hd->value_len, "close");
			keep |= value_has_token(v, hd->value_len, "keep-alive");
			h->upgrade |= value_has_token(v, hd->value_len, "upgrade");
		} else if (http_header_is(hd, "Host")) {
			h->host = v;
			h->host_len = hd->value_len;
		}
		p = eol + 2;
	}
	if (chunked && have_length)
		return -EBADMSG; /* request smuggling shape */
	h->head_len = (size_t)(eol + 2 - buf);
	h->keep_alive = h->version_minor == 1 ? !close : keep;
	if (chunked)
		h->body = HTTP_BODY_CHUNKED;
	else if (have_length)
		h->body = h->content_length ? HTTP_BODY_LENGTH : HTTP_BODY_NONE;
	else
		h->body = request ? HTTP_BODY_NONE : HTTP_BODY_UNTIL_CLOSE;
	return (ssize_t)h->head_len;
}

void
http_response_framing(struct http_head *resp, bool request_was_head)
{
	if (request_was_head || (resp->status >= 100 && resp->status < 200) ||
	    resp->status == 204 || resp->status == 304)
		resp->body = HTTP_BODY_NONE;
	if (resp->body == HTTP_BODY_UNTIL_CLOSE)
		resp->keep_alive = false;
}

enum { CH_SIZE, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF, CH_TRAILER, CH_TRAILER_LINE, CH_TRAILER_LF, CH_END_LF };

ssize_t
http_chunked_advance(struct http_chunked *c, const char *buf, size_t len, bool *done)
{
	size_t i = 0;
	*done = false;
	while (i < len) {
		char ch = buf[i];
		switch (c->state) {
		case CH_SIZE: {
			int d = ch >= '0' && ch <= '9'   ? ch - '0'
				: ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
				: ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
							 : -1;
			if (d >= 0) {
				if (c->remaining >> 56)
					return -EBADMSG;
				c->remaining = c->remaining * 16 + (uint64_t)d;
			} else if (ch == ';' || ch == ' ' || ch == '\t')
				c->state = CH_EXT;
			else if (ch == '\r')
				c->state = CH_SIZE_LF;
			else
				return -EBADMSG;
			i++;
			break;
		}
		case CH_EXT:
			if (ch == '\r')
				c->state = CH_SIZE_LF;
			i++;
			break;
		case CH_SIZE_LF:
			if (ch != '\n')
				return -EBADMSG;
			c->state = c->remaining ? CH_DATA : CH_TRAILER;
			i++;
			break;
		case CH_DATA: {
			size_t take = len - i < c->remaining ? len - i : (size_t)c->remaining;
			c->remaining -= take;
			i += take;
			if (!c->remaining)
				c->state = CH_DATA_CR;
			break;
		}
		case CH_DATA_CR:
			if (ch != '\r')
				return -EBADMSG;
			c->state = CH_DATA_LF;
			i++;
			break;
		case CH_DATA_LF:
			if (ch != '\n')
				return -EBADMSG;
			c->state = CH_SIZE;
			i++;
			break;
		case CH_TRAILER: /* start of a trailer line or the final CRLF */
			c->state = ch == '\r' ? CH_END_LF : CH_TRAILER_LINE;
			i++;
			break;
		case CH_TRAILER_LINE:
			if (ch == '\r')
				c->state = CH_TRAILER_LF;
			i++;
			break;
		case CH_TRAILER_LF:
			if (ch != '\n')
				return -EBADMSG;
			c->state = CH_TRAILER;
			i++;
			break;
		case CH_END_LF:
			if (ch != '\n')
				return -EBADMSG;
			i++;
			*done = true;
			c->state = CH_SIZE;
			c->remaining = 0;
			return (ssize_t)i;
		}
	}
	return (ssize_t)i;
}
