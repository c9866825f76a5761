/* Saved template records (supervisor). 0.2.0 wrote argv elements raw into key=value lines, so an
 * AddTemplate argument holding a newline wrote keys of its own (standby=1000, warm=1) that a
 * restart applied. Now values are escaped on write, checked on write, and on load every line is
 * parsed strictly and every field checked again: a record that is not exactly what this code
 * writes is refused whole (the caller logs it), never half-applied. */
#include "template-record.h"
#include "egress-policy.h"
#include "names.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
why_set(char *why, size_t whylen, int r, const char *fmt, ...)
{
	if (why && whylen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return r;
}

int
template_record_check(const struct template_record *r, char *why, size_t whylen)
{
	if (!r->rootfs || r->rootfs[0] != '/' || !string_valid(r->rootfs, TEMPLATE_PATH_MAX))
		return why_set(why, whylen, -EINVAL,
			       "the root filesystem must be an absolute path of at most %d bytes "
			       "without control characters",
			       TEMPLATE_PATH_MAX);
	if (r->argc == 0 || r->argc > TEMPLATE_ARGC_MAX || !r->argv || !r->argv[0] ||
	    !r->argv[0][0])
		return why_set(why, whylen, -EINVAL, "the command must have 1-%d arguments",
			       TEMPLATE_ARGC_MAX);
	for (size_t i = 0; i < r->argc; i++)
		if (!r->argv[i] || !string_valid(r->argv[i], TEMPLATE_ARG_MAX))
			return why_set(why, whylen, -EINVAL,
				       "argument %zu is missing, longer than %d bytes or holds a "
				       "control character",
				       i, TEMPLATE_ARG_MAX);
	if (r->argv[r->argc])
		return why_set(why, whylen, -EINVAL, "the argument list is not terminated");
	if (!port_valid(r->port))
		return why_set(why, whylen, -EINVAL, "port %u is not 1-65535", r->port);
	if (r->memory_limit < TEMPLATE_MEMORY_MIN || r->memory_limit > TEMPLATE_MEMORY_MAX)
		return why_set(why, whylen, -EINVAL, "memory limit out of range");
	char canon[EGRESS_POLICY_MAX];
	if (r->egress && (egress_policy_canonical(r->egress, canon, sizeof canon, NULL, 0) < 0 ||
			  strcmp(canon, r->egress)))
		return why_set(why, whylen, -EINVAL, "the egress policy is not valid");
	if (r->standby > TEMPLATE_STANDBY_MAX)
		return why_set(why, whylen, -EINVAL, "standby is at most %d", TEMPLATE_STANDBY_MAX);
	if (r->pids_max && (r->pids_max < TEMPLATE_PIDS_MIN || r->pids_max > TEMPLATE_PIDS_MAX))
		return why_set(why, whylen, -EINVAL, "pids is 0 or %d-%d", TEMPLATE_PIDS_MIN,
			       TEMPLATE_PIDS_MAX);
	if (r->cpu_millis &&
	    (r->cpu_millis < TEMPLATE_CPU_MILLIS_MIN || r->cpu_millis > TEMPLATE_CPU_MILLIS_MAX))
		return why_set(why, whylen, -EINVAL, "cpu_millis is 0 or %d-%d",
			       TEMPLATE_CPU_MILLIS_MIN, TEMPLATE_CPU_MILLIS_MAX);
	if (r->envc > TEMPLATE_ENVC_MAX || (r->envc && !r->env))
		return why_set(why, whylen, -EINVAL, "the environment has more than %d entries",
			       TEMPLATE_ENVC_MAX);
	for (size_t i = 0; i < r->envc; i++)
		if (!r->env[i] || !template_env_valid(r->env[i]))
			return why_set(why, whylen, -EINVAL,
				       "environment entry %zu is not KEY=value of at most %d bytes "
				       "without control characters",
				       i, TEMPLATE_ARG_MAX);
	if (r->env && r->env[r->envc])
		return why_set(why, whylen, -EINVAL, "the environment is not terminated");
	if (r->cwd && (r->cwd[0] != '/' || !string_valid(r->cwd, TEMPLATE_PATH_MAX)))
		return why_set(why, whylen, -EINVAL,
			       "the working directory must be an absolute path of at most %d bytes "
			       "without control characters",
			       TEMPLATE_PATH_MAX);
	if (r->user_set && (r->uid > TEMPLATE_ID_MAX || r->gid > TEMPLATE_ID_MAX))
		return why_set(why, whylen, -EINVAL, "the user must be uid[:gid] of 0-%d",
			       TEMPLATE_ID_MAX);
	return 0;
}

bool
template_env_valid(const char *e)
{
	const char *eq = strchr(e, '=');
	return eq && eq != e && string_valid(e, TEMPLATE_ARG_MAX);
}

static void
put_escaped(FILE *f, const char *v)
{
	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		if (*p < 0x20 || *p == 0x7f || *p == '%')
			fprintf(f, "%%%02X", *p);
		else
			fputc(*p, f);
}

int
template_record_format(const struct template_record *r, char **out, size_t *len)
{
	if (template_record_check(r, NULL, 0) < 0)
		return -EINVAL;
	*out = NULL;
	*len = 0;
	FILE *f = open_memstream(out, len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "format=%d\nrootfs=", TEMPLATE_RECORD_FORMAT);
	put_escaped(f, r->rootfs);
	fprintf(f, "\nport=%u\nmemory=%llu\nallow_outbound=%d\nidle_ms=%u\nwarm=%d\nstandby=%u\n",
		r->port, (unsigned long long)r->memory_limit, r->allow_outbound, r->idle_ms,
		r->warm, r->standby);
	/* only when set: records of templates without them stay as 0.3 wrote them */
	if (r->pids_max)
		fprintf(f, "pids=%u\n", r->pids_max);
	if (r->cpu_millis)
		fprintf(f, "cpu_millis=%u\n", r->cpu_millis);
	for (size_t i = 0; i < r->argc; i++) {
		fputs("arg=", f);
		put_escaped(f, r->argv[i]);
		fputc('\n', f);
	}
	for (size_t i = 0; i < r->envc; i++) {
		fputs("env=", f);
		put_escaped(f, r->env[i]);
		fputc('\n', f);
	}
	if (r->cwd) {
		fputs("cwd=", f);
		put_escaped(f, r->cwd);
		fputc('\n', f);
	}
	if (r->user_set)
		fprintf(f, "uid=%u\ngid=%u\n", r->uid, r->gid);
	if (r->imported)
		fputs("imported=1\n", f);
	if (r->egress) /* canonical: digits, '.', '/', ':', ',' and the words off, on */
		fprintf(f, "egress=%s\n", r->egress);
	if (fclose(f) != 0) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

void
template_record_clear(struct template_record *r)
{
	free(r->rootfs);
	for (size_t i = 0; r->argv && i < r->argc; i++)
		free(r->argv[i]);
	free(r->argv);
	for (size_t i = 0; r->env && i < r->envc; i++)
		free(r->env[i]);
	free(r->env);
	free(r->cwd);
	free(r->egress);
	memset(r, 0, sizeof *r);
}

static int
hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
				      : -1;
}

/* The value v[0..n) unescaped (escaped: format 2) into a new string; NULL when an escape is
 * malformed or it decodes to a NUL. */
static char *
value_dup(const char *v, size_t n, bool escaped)
{
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (!escaped || v[i] != '%') {
			s[o++] = v[i];
			continue;
		}
		if (i + 2 >= n) {
			free(s);
			return NULL;
		}
		int hi = hexval(v[i + 1]);
		int lo = hexval(v[i + 2]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(s);
			return NULL;
		}
		s[o++] = (char)(hi << 4 | lo);
		i += 2;
	}
	s[o] = 0;
	return s;
}

static bool
parse_uint(const char *v, size_t n, uint64_t max, uint64_t *out)
{
	if (n == 0 || n > 20)
		return false;
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		unsigned d = (unsigned)(v[i] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	if (x > max)
		return false;
	*out = x;
	return true;
}

int
template_record_parse(const char *buf, size_t len, struct template_record *r, char *why,
		      size_t whylen)
{
	memset(r, 0, sizeof *r);
	if (len > TEMPLATE_RECORD_MAX_BYTES)
		return why_set(why, whylen, -EBADMSG, "record of %zu bytes", len);
	enum {
		K_FORMAT,
		K_ROOTFS,
		K_PORT,
		K_MEMORY,
		K_OUTBOUND,
		K_IDLE,
		K_WARM,
		K_STANDBY,
		K_PIDS,
		K_CPU,
		K_CWD,
		K_UID,
		K_GID,
		K_IMPORTED,
		K_EGRESS,
		K_MAX
	};
	static const char *const keys[K_MAX] = {
		"format",  "rootfs", "port",	"memory",   "allow_outbound",
		"idle_ms", "warm",   "standby", "pids",	    "cpu_millis",
		"cwd",	   "uid",    "gid",	"imported", "egress"};
	bool seen[K_MAX] = {0};
	bool escaped = false;
	size_t pos = 0, line = 0;
	int ret = 0;
	r->argv = calloc(1, sizeof *r->argv);
	if (!r->argv)
		return -ENOMEM;
	while (pos < len) {
		const char *l = buf + pos;
		const char *nl = memchr(l, '\n', len - pos);
		if (!nl) {
			ret = why_set(why, whylen, -EBADMSG, "line %zu has no end", line + 1);
			goto fail;
		}
		size_t n = (size_t)(nl - l);
		pos += n + 1;
		line++;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)l[i] < 0x20 || l[i] == 0x7f) {
				ret = why_set(why, whylen, -EBADMSG,
					      "line %zu holds a control character", line);
				goto fail;
			}
		const char *eq = memchr(l, '=', n);
		if (!eq) {
			ret = why_set(why, whylen, -EBADMSG, "line %zu is not key=value", line);
			goto fail;
		}
		size_t kn = (size_t)(eq - l), vn = n - kn - 1;
		const char *v = eq + 1;
		if (kn == 3 && !memcmp(l, "arg", 3)) {
			if (r->argc >= TEMPLATE_ARGC_MAX) {
				ret = why_set(why, whylen, -EBADMSG, "more than %d arguments",
					      TEMPLATE_ARGC_MAX);
				goto fail;
			}
			char *a = value_dup(v, vn, escaped);
			char **nv = a ? realloc(r->argv, (r->argc + 2) * sizeof *r->argv) : NULL;
			if (!nv) {
				free(a);
				ret = why_set(why, whylen, -EBADMSG, "argument %zu: bad escape",
					      r->argc);
				goto fail;
			}
			r->argv = nv;
			r->argv[r->argc++] = a;
			r->argv[r->argc] = NULL;
			continue;
		}
		if (kn == 3 && !memcmp(l, "env", 3)) {
			if (r->envc >= TEMPLATE_ENVC_MAX) {
				ret = why_set(why, whylen, -EBADMSG,
					      "more than %d environment entries",
					      TEMPLATE_ENVC_MAX);
				goto fail;
			}
			char *e = value_dup(v, vn, escaped);
			char **nv = e ? realloc(r->env, (r->envc + 2) * sizeof *r->env) : NULL;
			if (!nv) {
				free(e);
				ret = why_set(why, whylen, -EBADMSG,
					      "environment entry %zu: bad escape", r->envc);
				goto fail;
			}
			r->env = nv;
			r->env[r->envc++] = e;
			r->env[r->envc] = NULL;
			continue;
		}
		int k = 0;
		for (; k < K_MAX; k++)
			if (strlen(keys[k]) == kn && !memcmp(l, keys[k], kn))
				break;
		if (k == K_MAX) {
			ret = why_set(why, whylen, -EBADMSG, "unknown key on line %zu", line);
			goto fail;
		}
		if (seen[k]) {
			ret = why_set(why, whylen, -EBADMSG, "%s given twice (line %zu)", keys[k],
				      line);
			goto fail;
		}
		if (k == K_FORMAT && line != 1) {
			ret = why_set(why, whylen, -EBADMSG, "format is not the first line");
			goto fail;
		}
		seen[k] = true;
		uint64_t x = 0;
		bool ok = true;
		switch (k) {
		case K_FORMAT:
			ok = parse_uint(v, vn, UINT32_MAX, &x) && x == TEMPLATE_RECORD_FORMAT;
			escaped = true;
			break;
		case K_ROOTFS:
			r->rootfs = value_dup(v, vn, escaped);
			ok = r->rootfs != NULL;
			break;
		case K_PORT:
			ok = parse_uint(v, vn, 65535, &x);
			r->port = (unsigned)x;
			break;
		case K_MEMORY:
			ok = parse_uint(v, vn, TEMPLATE_MEMORY_MAX, &r->memory_limit);
			break;
		case K_OUTBOUND:
			ok = parse_uint(v, vn, 1, &x);
			r->allow_outbound = x;
			break;
		case K_IDLE:
			ok = parse_uint(v, vn, UINT32_MAX, &x);
			r->idle_ms = (uint32_t)x;
			break;
		case K_WARM:
			ok = parse_uint(v, vn, 1, &x);
			r->warm = x;
			break;
		case K_STANDBY:
			ok = parse_uint(v, vn, TEMPLATE_STANDBY_MAX, &x);
			r->standby = (unsigned)x;
			break;
		case K_PIDS: /* ranges: template_record_check below */
			ok = parse_uint(v, vn, TEMPLATE_PIDS_MAX, &x);
			r->pids_max = (uint32_t)x;
			break;
		case K_CPU:
			ok = parse_uint(v, vn, TEMPLATE_CPU_MILLIS_MAX, &x);
			r->cpu_millis = (uint32_t)x;
			break;
		case K_CWD:
			r->cwd = value_dup(v, vn, escaped);
			ok = r->cwd != NULL;
			break;
		case K_EGRESS: /* canonical or refused: template_record_check below */
			r->egress = value_dup(v, vn, escaped);
			ok = r->egress != NULL;
			break;
		case K_UID:
			ok = parse_uint(v, vn, TEMPLATE_ID_MAX, &x);
			r->uid = (uint32_t)x;
			r->user_set = true;
			break;
		case K_GID:
			ok = parse_uint(v, vn, TEMPLATE_ID_MAX, &x);
			r->gid = (uint32_t)x;
			break;
		case K_IMPORTED:
			ok = parse_uint(v, vn, 1, &x);
			r->imported = x;
			break;
		}
		if (!ok) {
			ret = why_set(why, whylen, -EBADMSG, "bad value for %s", keys[k]);
			goto fail;
		}
	}
	for (int k = K_ROOTFS; k <= K_MEMORY; k++)
		if (!seen[k]) {
			ret = why_set(why, whylen, -EBADMSG, "no %s", keys[k]);
			goto fail;
		}
	if (seen[K_UID] != seen[K_GID]) {
		ret = why_set(why, whylen, -EBADMSG, "uid and gid come together");
		goto fail;
	}
	if (template_record_check(r, why, whylen) < 0) {
		ret = -EBADMSG;
		goto fail;
	}
	return 0;
fail:
	template_record_clear(r);
	return ret;
}
