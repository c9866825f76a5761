/* Parse and check a tag image's header (snapshotd). The header is written by snapshotd itself,
 * but it sits in a store a compromised helper may have scribbled in, and an image restored from
 * a wrong header runs someone else's memory: every line is checked, anything unexpected makes the
 * image corrupt (-EBADMSG) rather than half-read. */
#include "image-header.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
bad(char *why, size_t whylen, const char *fmt, ...)
{
	if (why && whylen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

bool
image_file_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > IMAGE_FILE_NAME_MAX || name[0] == '.' || !strcmp(name, IMAGE_HEADER_NAME))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

/* A decimal or hexadecimal number, whole (no sign, no spaces, no trailing text). */
static bool
parse_u64(const char *s, size_t n, int base, uint64_t *v)
{
	if (n == 0 || n > 20)
		return false;
	char tmp[24];
	memcpy(tmp, s, n);
	tmp[n] = 0;
	for (size_t i = 0; i < n; i++)
		if (!(base == 16 ? strchr("0123456789abcdefABCDEF", tmp[i]) != NULL
				 : (tmp[i] >= '0' && tmp[i] <= '9')))
			return false;
	errno = 0;
	char *end;
	unsigned long long x = strtoull(tmp, &end, base);
	if (errno || *end)
		return false;
	*v = x;
	return true;
}

static int
parse_file(const char *v, size_t vn, struct image_header *h, char *why, size_t whylen)
{
	/* "<name> <size> <16 hex digits>" */
	const char *sp1 = memchr(v, ' ', vn);
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', vn - (size_t)(sp1 + 1 - v)) : NULL;
	if (!sp1 || !sp2)
		return bad(why, whylen, "file line without name, size and checksum");
	size_t nn = (size_t)(sp1 - v);
	if (nn == 0 || nn > IMAGE_FILE_NAME_MAX)
		return bad(why, whylen, "file name of %zu bytes", nn);
	if (h->n_files >= IMAGE_MAX_FILES)
		return bad(why, whylen, "more than %d files", IMAGE_MAX_FILES);
	struct image_file *f = &h->files[h->n_files];
	memcpy(f->name, v, nn);
	f->name[nn] = 0;
	if (!image_file_name_valid(f->name))
		return bad(why, whylen, "bad file name");
	for (size_t i = 0; i < h->n_files; i++)
		if (!strcmp(h->files[i].name, f->name))
			return bad(why, whylen, "file %s listed twice", f->name);
	const char *sz = sp1 + 1, *hx = sp2 + 1;
	size_t hn = vn - (size_t)(hx - v);
	if (!parse_u64(sz, (size_t)(sp2 - sz), 10, &f->size) || hn != 16 ||
	    !parse_u64(hx, hn, 16, &f->hash))
		return bad(why, whylen, "file %s: bad size or checksum", f->name);
	h->n_files++;
	return 0;
}

int
image_header_parse(const char *buf, size_t len, struct image_header *h, char *why, size_t whylen)
{
	memset(h, 0, sizeof *h);
	h->backend = "gvisor";
	if (len > IMAGE_HEADER_MAX_BYTES)
		return bad(why, whylen, "header of %zu bytes", len);
	enum { K_FORMAT, K_CREATED, K_PARENT, K_TEMPLATE, K_BACKEND, K_COMPRESSION, K_MAX };
	static const char *const keys[K_MAX] = {"format",   "created", "parent",
						"template", "backend", "compression"};
	bool seen[K_MAX] = {0};
	size_t pos = 0, line = 0;
	while (pos < len) {
		const char *l = buf + pos;
		const char *nl = memchr(l, '\n', len - pos);
		if (!nl)
			return bad(why, whylen, "line %zu has no end", line + 1);
		size_t n = (size_t)(nl - l);
		pos += n + 1;
		line++;
		const char *eq = memchr(l, '=', n);
		if (!eq)
			return bad(why, whylen, "line %zu is not key=value", line);
		size_t kn = (size_t)(eq - l), vn = n - kn - 1;
		const char *v = eq + 1;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)l[i] < 0x20 || l[i] == 0x7f)
				return bad(why, whylen, "line %zu holds a control character", line);
		if (kn == 4 && !memcmp(l, "file", 4)) {
			int r = parse_file(v, vn, h, why, whylen);
			if (r < 0)
				return r;
			continue;
		}
		int k = 0;
		for (; k < K_MAX; k++)
			if (strlen(keys[k]) == kn && !memcmp(l, keys[k], kn))
				break;
		if (k == K_MAX)
			return bad(why, whylen, "unknown key on line %zu", line);
		if (seen[k])
			return bad(why, whylen, "%s given twice", keys[k]);
		seen[k] = true;
		uint64_t x;
		switch (k) {
		case K_FORMAT:
			if (!parse_u64(v, vn, 10, &x) ||
			    (x != IMAGE_HEADER_FORMAT && x != IMAGE_HEADER_FORMAT_FNV))
				return bad(why, whylen, "unknown format");
			h->format = (unsigned)x;
			break;
		case K_CREATED:
			if (!parse_u64(v, vn, 10, &h->created_usec))
				return bad(why, whylen, "bad created time");
			break;
		case K_PARENT:
			if (vn != 0 && vn != SANDBOX_ID_LEN)
				return bad(why, whylen, "bad parent");
			memcpy(h->parent, v, vn);
			h->parent[vn] = 0;
			if (vn && !sandbox_id_valid(h->parent))
				return bad(why, whylen, "bad parent");
			break;
		case K_TEMPLATE:
			if (vn >= sizeof h->template_name)
				return bad(why, whylen, "bad template");
			memcpy(h->template_name, v, vn);
			h->template_name[vn] = 0;
			if (vn && !template_name_valid(h->template_name))
				return bad(why, whylen, "bad template");
			break;
		case K_BACKEND:
			if (vn == 6 && !memcmp(v, "gvisor", 6))
				h->backend = "gvisor";
			else if (vn == 7 && !memcmp(v, "microvm", 7))
				h->backend = "microvm";
			else
				return bad(why, whylen, "unknown backend");
			break;
		case K_COMPRESSION:
			if (vn == 4 && !memcmp(v, "none", 4))
				h->compressed = false;
			else if (vn == 4 && !memcmp(v, "zstd", 4))
				h->compressed = true;
			else
				return bad(why, whylen, "unknown compression");
			break;
		}
	}
	if (!seen[K_FORMAT])
		return bad(why, whylen, "no format line");
	if (h->n_files == 0)
		return bad(why, whylen, "no files");
	return 0;
}
