/* HTTP/1.x parsing for the gateway (see http-parse.h), strict per RFC 9112 because the gateway
 * sits between two parsers it does not control (the client's and the sandbox's): any message
 * two parsers could frame differently is refused rather than repaired. Refused (-EBADMSG):
 *   - a line ending in a bare LF, a CR not followed by LF, any control character (NUL
 *     included) in the request/status line, a header name or a value (HTAB allowed in values);
 *   - obs-fold (a header line starting with SP or HTAB), a header name that is not a token or
 *     has whitespace before the colon, a line without a colon;
 *   - a method that is not a token, a target that is not origin-form (or `*` for OPTIONS) or
 *     has characters outside RFC 3986, CONNECT, a version other than HTTP/1.0 or HTTP/1.1,
 *     anything but single spaces between the three;
 *   - Content-Length that is not all digits, given twice (even equal) or beside
 *     Transfer-Encoding; Transfer-Encoding other than exactly `chunked`, given twice, or in an
 *     HTTP/1.0 message;
 *   - in requests: no Host in HTTP/1.1, Host twice, a Host value outside RFC 3986's host
 *     characters;
 *   - in chunked bodies: a chunk size with no hex digit, garbage after it, more than 15 hex
 *     digits' worth (overflow), a chunk-size line longer than HTTP_MAX_CHUNK_LINE, data not
 *     followed by CRLF, malformed trailer lines or a trailer section over HTTP_MAX_TRAILER.
 * Per byte it does one table lookup; chunk data is skipped in bulk. */
#include "http-parse.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

/* Character classes, one table lookup per byte. */
enum {
	C_TOKEN = 1,  /* tchar (RFC 9110 5.6.2) */
	C_VALUE = 2,  /* field-vchar, SP, HTAB (obs-text included) */
	C_TARGET = 4, /* RFC 3986 pchar + "/" "?" "%" */
	C_HOST = 8,   /* RFC 3986 host [":" port]: unreserved, sub-delims, ":" "[" "]" "%" */
};

static unsigned char cclass[256];

static void
cclass_init(void)
{
	if (cclass['a'])
		return;
	for (int c = 0; c < 256; c++) {
		unsigned char k = 0;
		bool alnum =
			(c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
		if (alnum || (c && strchr("!#$%&'*+-.^_`|~", c)))
			k |= C_TOKEN;
		if ((c >= 0x20 && c != 0x7f) || c == '\t')
			k |= C_VALUE;
		bool unreserved = alnum || (c && strchr("-._~", c));
		bool sub_delim = c && strchr("!$&'()*+,;=", c);
		if (unreserved || sub_delim || (c && strchr(":@/?%", c)))
			k |= C_TARGET;
		if (unreserved || sub_delim || (c && strchr(":[]%", c)))
			k |= C_HOST;
		cclass[c] = k;
	}
}

static bool
all_of(const char *p, size_t n, unsigned char cls)
{
	for (size_t i = 0; i < n; i++)
		if (!(cclass[(unsigned char)p[i]] & cls))
			return false;
	return true;
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
		bool start = i == 0 || v[i - 1] == ',' || v[i - 1] == ' ' || v[i - 1] == '\t';
		bool end =
			i + tl == len || v[i + tl] == ',' || v[i + tl] == ' ' || v[i + tl] == '\t';
		if (start && end)
			return true;
	}
	return false;
}

static int
bad(struct http_head *h, const char *why)
{
	h->error = why;
	return -EBADMSG;
}

static int
parse_request_line(const char *p, const char *eol, struct http_head *h)
{
	const char *sp1 = memchr(p, ' ', (size_t)(eol - p));
	if (!sp1 || sp1 == p || !all_of(p, (size_t)(sp1 - p), C_TOKEN))
		return bad(h, "invalid method");
	const char *t = sp1 + 1;
	const char *sp2 = memchr(t, ' ', (size_t)(eol - t));
	if (!sp2 || sp2 == t)
		return bad(h, "invalid request line");
	h->method = p;
	h->method_len = (size_t)(sp1 - p);
	h->target = t;
	h->target_len = (size_t)(sp2 - t);
	if (h->method_len == 7 && !memcmp(p, "CONNECT", 7))
		return bad(h, "CONNECT is not served");
	bool options = h->method_len == 7 && !memcmp(p, "OPTIONS", 7);
	if (!(t[0] == '/' || (options && h->target_len == 1 && t[0] == '*')) ||
	    !all_of(t, h->target_len, C_TARGET))
		return bad(h, "invalid request target");
	if (eol - sp2 - 1 != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) || (sp2[8] != '0' && sp2[8] != '1'))
		return bad(h, "invalid HTTP version");
	h->version_minor = sp2[8] - '0';
	return 0;
}

static int
parse_status_line(const char *p, const char *eol, struct http_head *h)
{
	/* HTTP-version SP 3DIGIT SP reason-phrase; a missing reason's SP is tolerated */
	size_t n = (size_t)(eol - p);
	if (n < 12 || memcmp(p, "HTTP/1.", 7) || (p[7] != '0' && p[7] != '1') || p[8] != ' ')
		return bad(h, "invalid status line");
	h->version_minor = p[7] - '0';
	int st = 0;
	for (int i = 9; i < 12; i++) {
		if (p[i] < '0' || p[i] > '9')
			return bad(h, "invalid status code");
		st = st * 10 + p[i] - '0';
	}
	if (st < 100 || st > 599)
		return bad(h, "invalid status code");
	if (n > 12 && (p[12] != ' ' || !all_of(p + 13, n - 13, C_VALUE)))
		return bad(h, "invalid reason phrase");
	h->status = st;
	return 0;
}

static int
parse_content_length(const char *v, size_t n, uint64_t *out, struct http_head *h)
{
	uint64_t x = 0;
	if (n == 0 || n > 15)
		return bad(h, "invalid Content-Length");
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return bad(h, "invalid Content-Length");
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*out = x;
	return 0;
}

ssize_t
http_parse_head(const char *buf, size_t len, bool request, size_t max_head, struct http_head *h)
{
	cclass_init();
	h->method = h->target = h->host = h->error = NULL;
	h->method_len = h->target_len = h->host_len = 0;
	h->status = h->version_minor = 0;
	h->line_len = h->head_len = h->n_headers = 0;
	h->body = HTTP_BODY_NONE;
	h->content_length = 0;
	h->keep_alive = h->upgrade = false;
	if (max_head == 0 || max_head > HTTP_MAX_HEAD)
		max_head = HTTP_MAX_HEAD;
	size_t scan = len > max_head ? max_head : len;
	const char *p = buf, *end = buf + scan;
	bool have_length = false, chunked = false, close = false, keep = false, have_host = false;
	for (bool first = true;; first = false) {
		const char *lf = memchr(p, '\n', (size_t)(end - p));
		if (!lf)
			return len >= max_head ? -EMSGSIZE : 0;
		if (lf == p || lf[-1] != '\r')
			return bad(h, "bare LF");
		const char *eol = lf - 1, *next = lf + 1;
		if (first) {
			/* control characters (a CR not followed by LF among them) */
			/* (HTAB only in a reason phrase) */
			if (!all_of(p, (size_t)(eol - p), C_VALUE) ||
			    (request && memchr(p, '\t', (size_t)(eol - p))))
				return bad(h, "control character in the first line");
			int r = request ? parse_request_line(p, eol, h)
					: parse_status_line(p, eol, h);
			if (r < 0)
				return r;
			h->line_len = (size_t)(next - buf);
			p = next;
			continue;
		}
		if (eol == p) {
			h->head_len = (size_t)(next - buf);
			break;
		}
		if (*p == ' ' || *p == '\t')
			return bad(h, "obs-fold continuation line");
		if (h->n_headers >= HTTP_MAX_HEADERS)
			return -E2BIG;
		const char *colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon || colon == p || !all_of(p, (size_t)(colon - p), C_TOKEN))
			return bad(h, "invalid header name"); /* also whitespace before the colon */
		if (!all_of(colon + 1, (size_t)(eol - colon - 1), C_VALUE))
			return bad(h, "control character in a header value");
		const char *v = colon + 1, *ve = eol;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		struct http_header *hd = &h->headers[h->n_headers++];
		*hd = (struct http_header){p, v, (size_t)(colon - p), (size_t)(ve - v)};
		p = next;
		if (http_header_is(hd, "Content-Length")) {
			if (have_length)
				return bad(h, "Content-Length given twice");
			int r = parse_content_length(v, hd->value_len, &h->content_length, h);
			if (r < 0)
				return r;
			have_length = true;
		} else if (http_header_is(hd, "Transfer-Encoding")) {
			if (chunked)
				return bad(h, "Transfer-Encoding given twice");
			if (hd->value_len != 7 || strncasecmp(v, "chunked", 7))
				return bad(h, "Transfer-Encoding other than chunked");
			chunked = true;
		} else if (http_header_is(hd, "Connection")) {
			close |= value_has_token(v, hd->value_len, "close");
			keep |= value_has_token(v, hd->value_len, "keep-alive");
			h->upgrade |= value_has_token(v, hd->value_len, "upgrade");
		} else if (request && http_header_is(hd, "Host")) {
			if (have_host)
				return bad(h, "Host given twice");
			if (!all_of(v, hd->value_len, C_HOST))
				return bad(h, "invalid Host");
			have_host = true;
			h->host = v;
			h->host_len = hd->value_len;
		}
	}
	if (chunked && have_length)
		return bad(h, "both Content-Length and Transfer-Encoding");
	if (chunked && h->version_minor == 0)
		return bad(h, "Transfer-Encoding in HTTP/1.0");
	if (request && h->version_minor == 1 && !have_host)
		return bad(h, "no Host");
	h->keep_alive = h->version_minor == 1 ? !close : keep && !close;
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

enum {
	CH_SIZE_FIRST, /* zero-initialised: the first hex digit of a chunk size */
	CH_SIZE,
	CH_SIZE_WS,   /* BWS after the size: only ";" may follow */
	CH_EXT,	      /* chunk-ext: tokens, ";", "=", BWS */
	CH_EXT_QUOTE, /* quoted-string of an extension value */
	CH_EXT_QP,    /* after a backslash in it */
	CH_SIZE_LF,
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_TRAILER, /* start of a trailer line or the final CRLF */
	CH_TRAILER_NAME,
	CH_TRAILER_VALUE,
	CH_TRAILER_LF,
	CH_END_LF,
};

static int
hexval(char ch)
{
	return ch >= '0' && ch <= '9'	? ch - '0'
	       : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
	       : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
					: -1;
}

ssize_t
http_chunked_advance(struct http_chunked *c, const char *buf, size_t len, bool *done)
{
	cclass_init();
	size_t i = 0;
	*done = false;
	while (i < len) {
		unsigned char ch = (unsigned char)buf[i];
		unsigned char cls = cclass[ch];
		if (c->state < CH_DATA && ++c->line > HTTP_MAX_CHUNK_LINE)
			return -EBADMSG;
		if (c->state >= CH_TRAILER && ++c->line > HTTP_MAX_TRAILER)
			return -EBADMSG;
		switch (c->state) {
		case CH_SIZE_FIRST:
		case CH_SIZE: {
			int d = hexval((char)ch);
			if (d >= 0) {
				if (c->remaining >> 56)
					return -EBADMSG; /* over 15 hex digits' worth */
				c->remaining = c->remaining * 16 + (uint64_t)d;
				c->state = CH_SIZE;
			} else if (c->state == CH_SIZE_FIRST)
				return -EBADMSG; /* no digits */
			else if (ch == ';')
				c->state = CH_EXT;
			else if (ch == ' ' || ch == '\t')
				c->state = CH_SIZE_WS;
			else if (ch == '\r')
				c->state = CH_SIZE_LF;
			else
				return -EBADMSG;
			i++;
			break;
		}
		case CH_SIZE_WS:
			if (ch == ';')
				c->state = CH_EXT;
			else if (ch != ' ' && ch != '\t')
				return -EBADMSG;
			i++;
			break;
		case CH_EXT:
			if (ch == '\r')
				c->state = CH_SIZE_LF;
			else if (ch == '"')
				c->state = CH_EXT_QUOTE;
			else if (!(cls & C_TOKEN) && ch != ';' && ch != '=' && ch != ' ' &&
				 ch != '\t')
				return -EBADMSG;
			i++;
			break;
		case CH_EXT_QUOTE:
			if (ch == '"')
				c->state = CH_EXT;
			else if (ch == '\\')
				c->state = CH_EXT_QP;
			else if (!(cls & C_VALUE))
				return -EBADMSG;
			i++;
			break;
		case CH_EXT_QP:
			if (!(cls & C_VALUE))
				return -EBADMSG;
			c->state = CH_EXT_QUOTE;
			i++;
			break;
		case CH_SIZE_LF:
			if (ch != '\n')
				return -EBADMSG;
			c->line = 0;
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
			c->state = CH_SIZE_FIRST;
			i++;
			break;
		case CH_TRAILER:
			if (ch == '\r')
				c->state = CH_END_LF;
			else if (cls & C_TOKEN)
				c->state = CH_TRAILER_NAME;
			else
				return -EBADMSG; /* obs-fold, empty name, control character */
			i++;
			break;
		case CH_TRAILER_NAME:
			if (ch == ':')
				c->state = CH_TRAILER_VALUE;
			else if (!(cls & C_TOKEN))
				return -EBADMSG;
			i++;
			break;
		case CH_TRAILER_VALUE:
			if (ch == '\r')
				c->state = CH_TRAILER_LF;
			else if (!(cls & C_VALUE))
				return -EBADMSG;
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
			*c = (struct http_chunked){0};
			return (ssize_t)i;
		default:
			return -EBADMSG;
		}
	}
	return (ssize_t)i;
}
