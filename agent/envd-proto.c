/* The pure parts of the agent's envd API (see envd-proto.h). Runs inside the sandbox, in
 * warren-agent; every input comes from a client of the sandbox and is bounded here. */
#include "envd-proto.h"
#include "base64.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const struct {
	const char *name;
	int status;
} codes[] = {
	[ENVD_OK] = {"ok", 200},
	[ENVD_CANCELED] = {"canceled", 408},
	[ENVD_UNKNOWN] = {"unknown", 500},
	[ENVD_INVALID_ARGUMENT] = {"invalid_argument", 400},
	[ENVD_DEADLINE_EXCEEDED] = {"deadline_exceeded", 408},
	[ENVD_NOT_FOUND] = {"not_found", 404},
	[ENVD_ALREADY_EXISTS] = {"already_exists", 409},
	[ENVD_PERMISSION_DENIED] = {"permission_denied", 403},
	[ENVD_RESOURCE_EXHAUSTED] = {"resource_exhausted", 429},
	[ENVD_FAILED_PRECONDITION] = {"failed_precondition", 412},
	[ENVD_ABORTED] = {"aborted", 409},
	[ENVD_OUT_OF_RANGE] = {"out_of_range", 400},
	[ENVD_UNIMPLEMENTED] = {"unimplemented", 404},
	[ENVD_INTERNAL] = {"internal", 500},
	[ENVD_UNAVAILABLE] = {"unavailable", 503},
	[ENVD_DATA_LOSS] = {"data_loss", 500},
	[ENVD_UNAUTHENTICATED] = {"unauthenticated", 401},
};

const char *
envd_code_to_string(enum envd_code c)
{
	return (unsigned)c < sizeof codes / sizeof codes[0] ? codes[c].name : "unknown";
}

int
envd_code_http_status(enum envd_code c)
{
	return (unsigned)c < sizeof codes / sizeof codes[0] ? codes[c].status : 500;
}

enum envd_code
envd_code_from_errno(int e)
{
	switch (e < 0 ? -e : e) {
	case ENOENT:
		return ENVD_NOT_FOUND;
	case EEXIST:
	case ENOTEMPTY:
		return ENVD_ALREADY_EXISTS;
	case EACCES:
	case EPERM:
	case EROFS:
		return ENVD_PERMISSION_DENIED;
	case ENOTDIR:
	case EISDIR:
	case EINVAL:
	case ENAMETOOLONG:
	case ELOOP:
		return ENVD_INVALID_ARGUMENT;
	case ENOSPC:
	case EDQUOT:
	case EMFILE:
	case ENFILE:
	case ENOMEM:
		return ENVD_RESOURCE_EXHAUSTED;
	default:
		return ENVD_INTERNAL;
	}
}

static const struct {
	const char *path;
	enum envd_route route;
} rpcs[] = {
	{"/process.Process/Start", ENVD_R_P_START},
	{"/process.Process/Connect", ENVD_R_P_CONNECT},
	{"/process.Process/List", ENVD_R_P_LIST},
	{"/process.Process/Update", ENVD_R_P_UPDATE},
	{"/process.Process/StreamInput", ENVD_R_P_STREAM_INPUT},
	{"/process.Process/SendInput", ENVD_R_P_SEND_INPUT},
	{"/process.Process/SendSignal", ENVD_R_P_SEND_SIGNAL},
	{"/process.Process/CloseStdin", ENVD_R_P_CLOSE_STDIN},
	{"/filesystem.Filesystem/Stat", ENVD_R_F_STAT},
	{"/filesystem.Filesystem/MakeDir", ENVD_R_F_MAKE_DIR},
	{"/filesystem.Filesystem/Move", ENVD_R_F_MOVE},
	{"/filesystem.Filesystem/ListDir", ENVD_R_F_LIST_DIR},
	{"/filesystem.Filesystem/Remove", ENVD_R_F_REMOVE},
	{"/filesystem.Filesystem/WatchDir", ENVD_R_F_WATCH_DIR},
	{"/filesystem.Filesystem/CreateWatcher", ENVD_R_F_CREATE_WATCHER},
	{"/filesystem.Filesystem/GetWatcherEvents", ENVD_R_F_GET_WATCHER_EVENTS},
	{"/filesystem.Filesystem/RemoveWatcher", ENVD_R_F_REMOVE_WATCHER},
};

static bool
is(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && !memcmp(s, lit, n);
}

enum envd_route
envd_route_of(const char *method, size_t mlen, const char *path, size_t plen)
{
	bool get = is(method, mlen, "GET") || is(method, mlen, "HEAD");
	bool post = is(method, mlen, "POST");
	if (is(path, plen, "/health"))
		return get ? ENVD_R_HEALTH : ENVD_R_METHOD_NOT_ALLOWED;
	if (is(path, plen, "/init"))
		return post ? ENVD_R_INIT : ENVD_R_METHOD_NOT_ALLOWED;
	if (is(path, plen, "/envs"))
		return get ? ENVD_R_ENVS : ENVD_R_METHOD_NOT_ALLOWED;
	if (is(path, plen, "/metrics"))
		return get ? ENVD_R_METRICS : ENVD_R_METHOD_NOT_ALLOWED;
	if (is(path, plen, "/files"))
		return get    ? ENVD_R_FILES_GET
		       : post ? ENVD_R_FILES_POST
			      : ENVD_R_METHOD_NOT_ALLOWED;
	for (size_t i = 0; i < sizeof rpcs / sizeof rpcs[0]; i++)
		if (is(path, plen, rpcs[i].path))
			return post ? rpcs[i].route : ENVD_R_METHOD_NOT_ALLOWED;
	return ENVD_R_NONE;
}

bool
envd_route_streams(enum envd_route r)
{
	return r == ENVD_R_P_START || r == ENVD_R_P_CONNECT || r == ENVD_R_F_WATCH_DIR;
}

bool
envd_route_is_rpc(enum envd_route r)
{
	return r >= ENVD_R_P_START && r <= ENVD_R_F_REMOVE_WATCHER;
}

ssize_t
envd_envelope_parse(const uint8_t *buf, size_t len, size_t max, uint8_t *flags, size_t *msg_len)
{
	if (len < 5)
		return 0;
	uint32_t n =
		(uint32_t)buf[1] << 24 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 8 | buf[4];
	if (n > max)
		return -EMSGSIZE;
	if (len - 5 < n)
		return 0;
	*flags = buf[0];
	*msg_len = n;
	return 5 + (ssize_t)n;
}

/* chunked states */
enum { CH_SIZE, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF, CH_TRAILER, CH_DONE };

static int
hexdigit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

ssize_t
envd_chunked_decode(struct envd_chunked *c, char *buf, size_t len, size_t *data_len, bool *done)
{
	size_t i = 0, out = 0;
	*done = c->state == CH_DONE;
	while (i < len && c->state != CH_DONE) {
		char ch = buf[i];
		switch (c->state) {
		case CH_SIZE: {
			int d = hexdigit(ch);
			if (d >= 0) {
				if (c->line >= 15) /* 15 hex digits: < 2^60 */
					return -EBADMSG;
				c->remaining = c->remaining << 4 | (uint64_t)d;
				c->line++;
				i++;
			} else if (c->line == 0) {
				return -EBADMSG;
			} else if (ch == ';') {
				c->state = CH_EXT;
				i++;
			} else if (ch == '\r') {
				c->state = CH_SIZE_LF;
				i++;
			} else
				return -EBADMSG;
			break;
		}
		case CH_EXT:
			if (++c->line > 1024)
				return -EBADMSG;
			if (ch == '\r')
				c->state = CH_SIZE_LF;
			else if (ch == '\n' || ch == 0)
				return -EBADMSG;
			i++;
			break;
		case CH_SIZE_LF:
			if (ch != '\n')
				return -EBADMSG;
			i++;
			c->line = 0;
			c->state = c->remaining ? CH_DATA : CH_TRAILER;
			break;
		case CH_DATA: {
			size_t n = len - i;
			if (n > c->remaining)
				n = (size_t)c->remaining;
			memmove(buf + out, buf + i, n);
			out += n;
			i += n;
			c->remaining -= n;
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
			c->line = 0;
			i++;
			break;
		case CH_TRAILER:
			/* trailer fields are read and dropped; an empty line ends them. line: bytes
			 * of the current trailer line, bit 31 set once its CR came */
			if (++c->remaining > 16384)
				return -EBADMSG;
			if (ch == '\r') {
				if (c->line & 0x80000000u)
					return -EBADMSG;
				c->line |= 0x80000000u;
			} else if (ch == '\n') {
				if (!(c->line & 0x80000000u))
					return -EBADMSG; /* bare LF */
				if ((c->line & 0x7fffffffu) == 0) {
					c->state = CH_DONE;
					*done = true;
				}
				c->line = 0;
			} else {
				if (c->line & 0x80000000u)
					return -EBADMSG; /* CR not followed by LF */
				c->line++;
			}
			i++;
			break;
		}
	}
	*data_len = out;
	return (ssize_t)i;
}

int
envd_multipart_init(struct envd_multipart *m, const char *ct, size_t ct_len)
{
	memset(m, 0, sizeof *m);
	const char *type = "multipart/form-data";
	size_t tl = strlen(type);
	if (ct_len < tl || strncasecmp(ct, type, tl))
		return -EINVAL;
	for (size_t i = tl; i + 9 <= ct_len; i++) {
		if (strncasecmp(ct + i, "boundary=", 9) || (ct[i - 1] != ';' && ct[i - 1] != ' '))
			continue;
		const char *b = ct + i + 9;
		size_t n = ct_len - i - 9;
		bool quoted = n && b[0] == '"';
		if (quoted) {
			b++;
			n--;
			const char *q = memchr(b, '"', n);
			if (!q)
				return -EINVAL;
			n = (size_t)(q - b);
		} else {
			size_t k = 0;
			while (k < n && b[k] != ';' && b[k] != ' ')
				k++;
			n = k;
		}
		if (n == 0 || n > ENVD_MAX_BOUNDARY)
			return -EINVAL;
		for (size_t k = 0; k < n; k++)
			if ((unsigned char)b[k] < 0x20 || (unsigned char)b[k] > 0x7e)
				return -EINVAL;
		memcpy(m->delim, "\r\n--", 4);
		memcpy(m->delim + 4, b, n);
		m->delim_len = n + 4;
		m->state = MP_PREAMBLE;
		return 0;
	}
	return -EINVAL;
}

/* Content-Disposition's parameter name="..." (or filename="...") within a part's headers. */
static void
mp_param(const char *head, size_t len, const char *param, char *out, size_t out_size)
{
	out[0] = 0;
	size_t pl = strlen(param);
	for (size_t i = 0; i + pl + 2 <= len; i++) {
		if (strncasecmp(head + i, param, pl) || head[i + pl] != '=')
			continue;
		if (i > 0 && head[i - 1] != ' ' && head[i - 1] != ';')
			continue;
		const char *v = head + i + pl + 1;
		size_t n = len - i - pl - 1, k = 0, o = 0;
		bool quoted = v[0] == '"';
		if (quoted)
			k = 1;
		for (; k < n && o + 1 < out_size; k++) {
			char ch = v[k];
			if (quoted && ch == '"')
				break;
			if (!quoted && (ch == ';' || ch == '\r' || ch == ' '))
				break;
			if (quoted && ch == '\\' && k + 1 < n)
				ch = v[++k];
			if (ch == '\r' || ch == '\n' || ch == 0)
				break;
			out[o++] = ch;
		}
		out[o] = 0;
		return;
	}
}

static void
mp_part_headers(struct envd_multipart *m)
{
	m->filename[0] = m->name[0] = 0;
	/* find the Content-Disposition line */
	const char *h = m->head;
	size_t len = m->head_len;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(h + i, '\n', len - i);
		size_t ll = nl ? (size_t)(nl - (h + i)) : len - i;
		if (ll > 20 && !strncasecmp(h + i, "content-disposition:", 20)) {
			mp_param(h + i + 20, ll - 20, "filename", m->filename, sizeof m->filename);
			mp_param(h + i + 20, ll - 20, "name", m->name, sizeof m->name);
		}
		i += ll + 1;
	}
}

ssize_t
envd_multipart_feed(struct envd_multipart *m, const char *buf, size_t len, bool eof,
		    const struct envd_mp_sink *sink, void *ud)
{
	size_t i = 0;
	int r;
	while (i < len || (eof && m->state != MP_END && m->state != MP_ERROR)) {
		switch (m->state) {
		case MP_PREAMBLE: {
			/* the first delimiter may come without its leading CRLF */
			const char *d = m->delim + 2;
			size_t dl = m->delim_len - 2;
			const char *p = memmem(buf + i, len - i, d, dl);
			if (!p) {
				if (eof) {
					m->state = MP_ERROR;
					return -EBADMSG;
				}
				/* keep what could be the start of a delimiter */
				size_t keep = len - i < dl ? len - i : dl - 1;
				return (ssize_t)(len - keep);
			}
			i = (size_t)(p - buf) + dl;
			m->state = MP_AFTER_DELIM;
			break;
		}
		case MP_AFTER_DELIM:
			if (len - i < 2) {
				if (eof) {
					m->state = MP_ERROR;
					return -EBADMSG;
				}
				return (ssize_t)i;
			}
			if (!memcmp(buf + i, "--", 2)) {
				m->state = MP_END;
				return (ssize_t)len; /* the epilogue is ignored */
			}
			if (memcmp(buf + i, "\r\n", 2)) {
				m->state = MP_ERROR;
				return -EBADMSG;
			}
			i += 2;
			m->head_len = 0;
			m->state = MP_HEADERS;
			break;
		case MP_HEADERS: {
			/* copy until CRLFCRLF, bounded */
			while (i < len) {
				if (m->head_len >= sizeof m->head) {
					m->state = MP_ERROR;
					return -EBADMSG;
				}
				m->head[m->head_len++] = buf[i++];
				if (m->head_len == 2 && !memcmp(m->head, "\r\n", 2))
					break; /* a part with no headers */
				if (m->head_len >= 4 &&
				    !memcmp(m->head + m->head_len - 4, "\r\n\r\n", 4))
					break;
			}
			bool complete = (m->head_len == 2 && !memcmp(m->head, "\r\n", 2)) ||
					(m->head_len >= 4 &&
					 !memcmp(m->head + m->head_len - 4, "\r\n\r\n", 4));
			if (!complete) {
				if (eof) {
					m->state = MP_ERROR;
					return -EBADMSG;
				}
				return (ssize_t)i;
			}
			mp_part_headers(m);
			m->parts++;
			m->state = MP_DATA;
			if (sink->part_begin && (r = sink->part_begin(m, ud)) < 0)
				return r;
			break;
		}
		case MP_DATA: {
			const char *p = memmem(buf + i, len - i, m->delim, m->delim_len);
			size_t end = p ? (size_t)(p - buf) : len;
			if (!p && !eof) {
				/* hold back a tail that could begin the delimiter */
				size_t keep = m->delim_len - 1;
				end = len - i > keep ? len - keep : i;
			}
			if (!p && eof) {
				m->state = MP_ERROR;
				return -EBADMSG;
			}
			if (end > i && sink->part_data &&
			    (r = sink->part_data(m, buf + i, end - i, ud)) < 0)
				return r;
			i = end;
			if (!p)
				return (ssize_t)i;
			i += m->delim_len;
			m->state = MP_AFTER_DELIM;
			if (sink->part_end && (r = sink->part_end(m, ud)) < 0)
				return r;
			break;
		}
		case MP_END:
			return (ssize_t)len;
		case MP_ERROR:
			return -EBADMSG;
		}
	}
	return (ssize_t)i;
}

int
envd_query_get(const char *q, size_t qlen, const char *name, char *out, size_t out_size)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < qlen;) {
		const char *amp = memchr(q + i, '&', qlen - i);
		size_t end = amp ? (size_t)(amp - q) : qlen;
		if (end - i > nl && q[i + nl] == '=' && !memcmp(q + i, name, nl)) {
			size_t o = 0;
			for (size_t k = i + nl + 1; k < end; k++) {
				char c = q[k];
				if (c == '+')
					c = ' ';
				else if (c == '%') {
					if (k + 2 >= end)
						return -EINVAL;
					int hi = hexdigit(q[k + 1]), lo = hexdigit(q[k + 2]);
					if (hi < 0 || lo < 0)
						return -EINVAL;
					c = (char)(hi << 4 | lo);
					k += 2;
				}
				if (c == 0 || o + 1 >= out_size)
					return -EINVAL;
				out[o++] = c;
			}
			out[o] = 0;
			return 1;
		}
		i = end + 1;
	}
	return 0;
}

/* ---- JSON requests ---- */

static char *
dup_str(json_t *v, enum envd_code *err)
{
	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_string(v) || json_string_length(v) > ENVD_MAX_STR ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		*err = ENVD_INVALID_ARGUMENT; /* not a string, too long, or holding a NUL */
		return NULL;
	}
	char *s = strdup(json_string_value(v));
	if (!s)
		*err = ENVD_RESOURCE_EXHAUSTED;
	return s;
}

/* proto3 JSON: uint32 as a number or a decimal string */
static bool
get_u32(json_t *v, uint32_t *out)
{
	if (!v || json_is_null(v))
		return true;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < 0 || i > UINT32_MAX)
			return false;
		*out = (uint32_t)i;
		return true;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;
		if (!*s || strlen(s) > 10)
			return false;
		unsigned long long x = strtoull(s, &end, 10);
		if (*end || x > UINT32_MAX || s[0] == '-' || s[0] == '+' || s[0] == ' ')
			return false;
		*out = (uint32_t)x;
		return true;
	}
	return false;
}

static bool
get_bool(json_t *v, bool *out)
{
	if (!v || json_is_null(v))
		return true;
	if (!json_is_boolean(v))
		return false;
	*out = json_is_true(v);
	return true;
}

static enum envd_code
decode_selector(json_t *o, struct envd_selector *s)
{
	enum envd_code err = ENVD_OK;
	if (!json_is_object(o))
		return ENVD_INVALID_ARGUMENT;
	json_t *pid = json_object_get(o, "pid"), *tag = json_object_get(o, "tag");
	if (pid && !json_is_null(pid)) {
		if (!get_u32(pid, &s->pid))
			return ENVD_INVALID_ARGUMENT;
		s->has_pid = true;
	}
	if (tag && !json_is_null(tag)) {
		s->tag = dup_str(tag, &err);
		s->has_tag = s->tag != NULL;
	}
	if (err)
		return err;
	return s->has_pid != s->has_tag ? ENVD_OK : ENVD_INVALID_ARGUMENT;
}

static enum envd_code
decode_input(json_t *o, struct envd_request *q)
{
	if (!json_is_object(o))
		return ENVD_INVALID_ARGUMENT;
	json_t *in = json_object_get(o, "stdin");
	q->input_pty = false;
	if (!in || json_is_null(in)) {
		in = json_object_get(o, "pty");
		q->input_pty = true;
	}
	if (!json_is_string(in))
		return ENVD_INVALID_ARGUMENT;
	size_t n = json_string_length(in);
	free(q->input);
	q->input = malloc(n / 4 * 3 + 3);
	if (!q->input)
		return ENVD_RESOURCE_EXHAUSTED;
	ssize_t k = base64_decode(json_string_value(in), n, q->input, n / 4 * 3 + 3);
	if (k < 0)
		return ENVD_INVALID_ARGUMENT;
	q->input_len = (size_t)k;
	return ENVD_OK;
}

static enum envd_code
decode_process_config(json_t *p, struct envd_request *q)
{
	enum envd_code err = ENVD_OK;
	if (!json_is_object(p))
		return ENVD_INVALID_ARGUMENT;
	q->cmd = dup_str(json_object_get(p, "cmd"), &err);
	if (err)
		return err;
	if (!q->cmd || !q->cmd[0])
		return ENVD_INVALID_ARGUMENT;
	json_t *args = json_object_get(p, "args");
	if (args && !json_is_null(args)) {
		if (!json_is_array(args) || json_array_size(args) > ENVD_MAX_ARGS)
			return ENVD_INVALID_ARGUMENT;
		q->args = calloc(json_array_size(args) + 1, sizeof *q->args);
		if (!q->args)
			return ENVD_RESOURCE_EXHAUSTED;
		for (size_t i = 0; i < json_array_size(args); i++) {
			q->args[i] = dup_str(json_array_get(args, i), &err);
			if (err || !q->args[i])
				return err ? err : ENVD_INVALID_ARGUMENT;
			q->n_args++;
		}
	}
	json_t *envs = json_object_get(p, "envs");
	if (envs && !json_is_null(envs)) {
		if (!json_is_object(envs) || json_object_size(envs) > ENVD_MAX_ENVS)
			return ENVD_INVALID_ARGUMENT;
		size_t n = json_object_size(envs);
		q->env_keys = calloc(n + 1, sizeof *q->env_keys);
		q->env_values = calloc(n + 1, sizeof *q->env_values);
		if (!q->env_keys || !q->env_values)
			return ENVD_RESOURCE_EXHAUSTED;
		const char *k;
		json_t *v;
		json_object_foreach(envs, k, v)
		{
			/* a name with '=' or nothing in it would be another variable */
			if (!k[0] || strchr(k, '=') || strlen(k) > ENVD_MAX_STR)
				return ENVD_INVALID_ARGUMENT;
			q->env_keys[q->n_envs] = strdup(k);
			q->env_values[q->n_envs] = dup_str(v, &err);
			if (err || !q->env_values[q->n_envs] || !q->env_keys[q->n_envs]) {
				q->n_envs++;
				return err ? err : ENVD_INVALID_ARGUMENT;
			}
			q->n_envs++;
		}
	}
	q->cwd = dup_str(json_object_get(p, "cwd"), &err);
	return err;
}

static enum envd_code
decode_pty(json_t *pty, struct envd_request *q)
{
	if (!pty || json_is_null(pty))
		return ENVD_OK;
	if (!json_is_object(pty))
		return ENVD_INVALID_ARGUMENT;
	q->has_pty = true;
	q->cols = 80;
	q->rows = 24;
	json_t *size = json_object_get(pty, "size");
	if (size && !json_is_null(size)) {
		if (!json_is_object(size) || !get_u32(json_object_get(size, "cols"), &q->cols) ||
		    !get_u32(json_object_get(size, "rows"), &q->rows))
			return ENVD_INVALID_ARGUMENT;
	}
	if (q->cols > 65535 || q->rows > 65535)
		return ENVD_INVALID_ARGUMENT;
	return ENVD_OK;
}

static enum envd_code
decode(enum envd_route r, json_t *o, struct envd_request *q)
{
	enum envd_code err = ENVD_OK;
	json_t *v;
	switch (r) {
	case ENVD_R_P_START: {
		if ((err = decode_process_config(json_object_get(o, "process"), q)))
			return err;
		if ((err = decode_pty(json_object_get(o, "pty"), q)))
			return err;
		q->tag = dup_str(json_object_get(o, "tag"), &err);
		v = json_object_get(o, "stdin");
		if (v && !json_is_null(v)) {
			bool b = false;
			if (!get_bool(v, &b))
				return ENVD_INVALID_ARGUMENT;
			q->stdin_mode = b;
		}
		return err;
	}
	case ENVD_R_P_CONNECT:
	case ENVD_R_P_CLOSE_STDIN:
		return decode_selector(json_object_get(o, "process"), &q->sel);
	case ENVD_R_P_UPDATE:
		if ((err = decode_selector(json_object_get(o, "process"), &q->sel)))
			return err;
		return decode_pty(json_object_get(o, "pty"), q);
	case ENVD_R_P_SEND_INPUT:
		if ((err = decode_selector(json_object_get(o, "process"), &q->sel)))
			return err;
		return decode_input(json_object_get(o, "input"), q);
	case ENVD_R_P_STREAM_INPUT:
		/* one message of the input stream: start {process}, data {input} or keepalive */
		if ((v = json_object_get(o, "start")))
			return json_is_object(v)
				       ? decode_selector(json_object_get(v, "process"), &q->sel)
				       : ENVD_INVALID_ARGUMENT;
		if ((v = json_object_get(o, "data")))
			return json_is_object(v) ? decode_input(json_object_get(v, "input"), q)
						 : ENVD_INVALID_ARGUMENT;
		return ENVD_OK;
	case ENVD_R_P_SEND_SIGNAL: {
		if ((err = decode_selector(json_object_get(o, "process"), &q->sel)))
			return err;
		v = json_object_get(o, "signal");
		if (json_is_string(v)) {
			const char *s = json_string_value(v);
			q->signal = !strcmp(s, "SIGNAL_SIGKILL")   ? 9
				    : !strcmp(s, "SIGNAL_SIGTERM") ? 15
								   : 0;
		} else if (json_is_integer(v))
			q->signal = (int)json_integer_value(v) == 9    ? 9
				    : (int)json_integer_value(v) == 15 ? 15
								       : 0;
		return q->signal ? ENVD_OK : ENVD_INVALID_ARGUMENT;
	}
	case ENVD_R_P_LIST:
		return ENVD_OK;
	case ENVD_R_F_MOVE:
		q->path = dup_str(json_object_get(o, "source"), &err);
		if (!err)
			q->destination = dup_str(json_object_get(o, "destination"), &err);
		if (!err && (!q->path || !q->destination))
			err = ENVD_INVALID_ARGUMENT;
		return err;
	case ENVD_R_F_STAT:
	case ENVD_R_F_MAKE_DIR:
	case ENVD_R_F_REMOVE:
	case ENVD_R_F_LIST_DIR:
	case ENVD_R_F_WATCH_DIR:
	case ENVD_R_F_CREATE_WATCHER:
		q->path = dup_str(json_object_get(o, "path"), &err);
		if (!err && !q->path)
			err = ENVD_INVALID_ARGUMENT;
		if (!err && !get_u32(json_object_get(o, "depth"), &q->depth))
			err = ENVD_INVALID_ARGUMENT;
		if (!err && !get_bool(json_object_get(o, "recursive"), &q->recursive))
			err = ENVD_INVALID_ARGUMENT;
		return err;
	case ENVD_R_F_GET_WATCHER_EVENTS:
	case ENVD_R_F_REMOVE_WATCHER:
		q->watcher_id = dup_str(json_object_get(o, "watcherId"), &err);
		if (!err && !q->watcher_id)
			err = ENVD_INVALID_ARGUMENT;
		return err;
	case ENVD_R_INIT: {
		v = json_object_get(o, "envVars");
		if (v && !json_is_null(v)) {
			if (!json_is_object(v) || json_object_size(v) > ENVD_MAX_ENVS)
				return ENVD_INVALID_ARGUMENT;
			size_t n = json_object_size(v);
			q->env_keys = calloc(n + 1, sizeof *q->env_keys);
			q->env_values = calloc(n + 1, sizeof *q->env_values);
			if (!q->env_keys || !q->env_values)
				return ENVD_RESOURCE_EXHAUSTED;
			const char *k;
			json_t *e;
			json_object_foreach(v, k, e)
			{
				if (!k[0] || strchr(k, '=') || strlen(k) > ENVD_MAX_STR)
					return ENVD_INVALID_ARGUMENT;
				q->env_keys[q->n_envs] = strdup(k);
				q->env_values[q->n_envs] = dup_str(e, &err);
				q->n_envs++;
				if (err || !q->env_values[q->n_envs - 1] ||
				    !q->env_keys[q->n_envs - 1])
					return err ? err : ENVD_INVALID_ARGUMENT;
			}
		}
		v = json_object_get(o, "accessToken");
		if (v && !json_is_null(v)) {
			q->access_token = dup_str(v, &err);
			q->has_access_token = q->access_token != NULL;
		}
		if (!err)
			q->timestamp = dup_str(json_object_get(o, "timestamp"), &err);
		if (!err)
			q->default_user = dup_str(json_object_get(o, "defaultUser"), &err);
		if (!err)
			q->default_workdir = dup_str(json_object_get(o, "defaultWorkdir"), &err);
		return err;
	}
	default:
		return ENVD_UNIMPLEMENTED;
	}
}

enum envd_code
envd_request_decode(enum envd_route r, const char *json, size_t len, struct envd_request *q,
		    char *why, size_t why_size)
{
	memset(q, 0, sizeof *q);
	q->route = r;
	q->stdin_mode = -1;
	if (len > ENVD_MAX_BODY) {
		snprintf(why, why_size, "request larger than %u bytes", ENVD_MAX_BODY);
		return ENVD_RESOURCE_EXHAUSTED;
	}
	json_error_t e;
	/* an empty body is the empty message (ListRequest) */
	json_t *o = len ? json_loadb(json, len, JSON_REJECT_DUPLICATES, &e) : json_object();
	if (!o || !json_is_object(o)) {
		snprintf(why, why_size, "the request is not a JSON object%s%s", o ? "" : ": ",
			 o ? "" : e.text);
		json_decref(o);
		return ENVD_INVALID_ARGUMENT;
	}
	enum envd_code c = decode(r, o, q);
	json_decref(o);
	if (c)
		snprintf(why, why_size, "the request does not decode as %s",
			 r == ENVD_R_INIT ? "an init body" : "its message");
	return c;
}

static void
free_vec(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void
envd_request_free(struct envd_request *q)
{
	free(q->cmd);
	free_vec(q->args, q->n_args);
	free_vec(q->env_keys, q->n_envs);
	free_vec(q->env_values, q->n_envs);
	free(q->cwd);
	free(q->tag);
	free(q->sel.tag);
	free(q->input);
	free(q->path);
	free(q->destination);
	free(q->watcher_id);
	free(q->access_token);
	free(q->timestamp);
	free(q->default_user);
	free(q->default_workdir);
	memset(q, 0, sizeof *q);
}

static bool
digits(const char *s, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

int
envd_parse_rfc3339(const char *s, int64_t *sec, long *nsec)
{
	int Y, M, D, h, m, S;
	size_t n = strlen(s);
	if (n < 20 || !digits(s, 4, &Y) || s[4] != '-' || !digits(s + 5, 2, &M) || s[7] != '-' ||
	    !digits(s + 8, 2, &D) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &m) || s[16] != ':' ||
	    !digits(s + 17, 2, &S))
		return -EINVAL;
	if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || S > 60 || Y < 1970)
		return -EINVAL;
	const char *p = s + 19;
	long ns = 0;
	if (*p == '.') {
		int k = 0;
		p++;
		while (*p >= '0' && *p <= '9') {
			if (k < 9) {
				ns = ns * 10 + (*p - '0');
				k++;
			}
			p++;
		}
		if (k == 0)
			return -EINVAL;
		for (; k < 9; k++)
			ns *= 10;
	}
	int off = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh, om;
		if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) || oh > 23 ||
		    om > 59)
			return -EINVAL;
		off = (oh * 60 + om) * 60 * (*p == '-' ? -1 : 1);
		p += 6;
	} else
		return -EINVAL;
	if (*p)
		return -EINVAL;
	/* days from civil (Howard Hinnant's algorithm) */
	int y = Y - (M <= 2);
	int era = y / 400;
	int yoe = y - era * 400;
	int doy = (153 * (M + (M > 2 ? -3 : 9)) + 2) / 5 + D - 1;
	int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	int64_t days = (int64_t)era * 146097 + doe - 719468;
	*sec = days * 86400 + h * 3600 + m * 60 + S - off;
	*nsec = ns;
	return 0;
}
