/* Name validation shared by the supervisor (early, friendly errors) and the helpers
 * (authoritative). */
#include "names.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

bool
sandbox_id_valid(const char *id)
{
	if (!id || strlen(id) != SANDBOX_ID_LEN)
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

int
sandbox_id_new(char id[SANDBOX_ID_LEN + 1])
{
	unsigned char raw[SANDBOX_ID_LEN / 2];
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return -errno;
	for (size_t i = 0; i < sizeof raw; i++) {
		id[2 * i] = "0123456789abcdef"[raw[i] >> 4];
		id[2 * i + 1] = "0123456789abcdef"[raw[i] & 15];
	}
	id[SANDBOX_ID_LEN] = 0;
	return 0;
}

bool
template_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > 32)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			  (i > 0 && (c == '-' || c == '_'));
		if (!ok)
			return false;
	}
	return true;
}

bool
port_valid(unsigned port)
{
	return port > 0 && port < 65536;
}

bool
path_is_inside(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] != 0;
}

bool
tag_name_valid(const char *tag)
{
	return template_name_valid(tag);
}

bool
tag_reserved(const char *tag)
{
	return tag && !strncmp(tag, TAG_WARM_PREFIX, strlen(TAG_WARM_PREFIX));
}

int
string_check(const char *s, size_t max, size_t *bad_at)
{
	if (!s)
		return -EINVAL;
	/* strnlen: a 100 KiB string is not walked to its end to be refused */
	size_t n = strnlen(s, max + 1);
	if (n > max)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		/* C1 controls are U+0080..U+009F, in UTF-8 0xC2 0x80..0x9F */
		bool c1 = c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
			  (unsigned char)s[i + 1] <= 0x9f;
		if (c < 0x20 || c == 0x7f || c1) {
			if (bad_at)
				*bad_at = i;
			return -EINVAL;
		}
	}
	return 0;
}

bool
string_valid(const char *s, size_t max)
{
	return string_check(s, max, NULL) == 0;
}
