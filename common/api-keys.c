/* E2B API key file: format, strict parser, generation and constant-time match (see
 * api-keys.h). Linked into warren-e2b-api (reads the file) and warrenctl (writes it). */
#include "api-keys.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool
is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static bool
all_hex(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!is_lower_hex(s[i]))
			return false;
	return true;
}

bool
api_key_well_formed(const char *key, size_t len)
{
	const size_t plen = sizeof(API_KEY_PREFIX) - 1;
	return key && len == API_KEY_LEN && !memcmp(key, API_KEY_PREFIX, plen) &&
	       all_hex(key + plen, API_KEY_HEX);
}

bool
api_key_name_valid(const char *name)
{
	size_t len = strlen(name);
	if (len > API_KEY_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

bool
api_key_id_valid(const char *id)
{
	return strlen(id) == API_KEY_ID_LEN && all_hex(id, API_KEY_ID_LEN);
}

int
api_key_digest(const char *key, size_t len, uint8_t digest[32])
{
	unsigned int out = 0;
	if (!EVP_Digest(key, len, digest, &out, EVP_sha256(), NULL) || out != 32)
		return -EIO;
	return 0;
}

static int
hex_decode(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!is_lower_hex(s[2 * i]) || !is_lower_hex(s[2 * i + 1]))
			return -EINVAL;
		char b[3] = {s[2 * i], s[2 * i + 1], 0};
		out[i] = (uint8_t)strtoul(b, NULL, 16);
	}
	return 0;
}

/* One line "<id> <hex digest> <created> <name>" (name may be empty). */
static int
parse_line(const char *line, size_t len, struct api_key *k)
{
	/* fixed layout: 16 + 1 + 64 + 1 + digits + 1 + name */
	if (len < API_KEY_ID_LEN + 1 + 64 + 1 + 1 + 1)
		return -EBADMSG;
	if (line[API_KEY_ID_LEN] != ' ' || line[API_KEY_ID_LEN + 1 + 64] != ' ')
		return -EBADMSG;
	memcpy(k->id, line, API_KEY_ID_LEN);
	k->id[API_KEY_ID_LEN] = 0;
	if (!api_key_id_valid(k->id))
		return -EBADMSG;
	if (hex_decode(line + API_KEY_ID_LEN + 1, k->digest, 32) < 0)
		return -EBADMSG;
	size_t p = API_KEY_ID_LEN + 1 + 64 + 1, digits = 0;
	uint64_t created = 0;
	while (p < len && line[p] >= '0' && line[p] <= '9' && digits < 19) {
		created = created * 10 + (uint64_t)(line[p] - '0');
		p++;
		digits++;
	}
	if (digits == 0 || p >= len || line[p] != ' ')
		return -EBADMSG;
	p++;
	size_t nlen = len - p;
	if (nlen > API_KEY_NAME_MAX)
		return -EBADMSG;
	memcpy(k->name, line + p, nlen);
	k->name[nlen] = 0;
	if (strlen(k->name) != nlen || !api_key_name_valid(k->name))
		return -EBADMSG;
	k->created = created;
	return 0;
}

int
api_keys_parse(const char *buf, size_t len, struct api_key *keys, size_t max, size_t *n)
{
	const size_t hlen = sizeof(API_KEYS_HEADER) - 1;
	*n = 0;
	if (len < hlen + 1 || memcmp(buf, API_KEYS_HEADER, hlen) || buf[hlen] != '\n')
		return -EBADMSG;
	if (buf[len - 1] != '\n')
		return -EBADMSG; /* truncated */
	size_t pos = hlen + 1, count = 0;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t l = (size_t)(nl - (buf + pos));
		struct api_key k;
		if (count >= API_KEYS_MAX || count >= max)
			return -E2BIG;
		if (parse_line(buf + pos, l, &k) < 0)
			return -EBADMSG;
		for (size_t i = 0; keys && i < count; i++)
			if (!strcmp(keys[i].id, k.id))
				return -EBADMSG;
		if (keys)
			keys[count] = k;
		count++;
		pos += l + 1;
	}
	*n = count;
	return 0;
}

char *
api_keys_format(const struct api_key *keys, size_t n)
{
	size_t cap =
		sizeof(API_KEYS_HEADER) + 1 + n * (API_KEY_ID_LEN + 66 + 22 + API_KEY_NAME_MAX + 2);
	char *out = malloc(cap), *p = out;
	if (!out)
		return NULL;
	p += sprintf(p, "%s\n", API_KEYS_HEADER);
	for (size_t i = 0; i < n; i++) {
		p += sprintf(p, "%s ", keys[i].id);
		for (size_t j = 0; j < 32; j++)
			p += sprintf(p, "%02x", keys[i].digest[j]);
		p += sprintf(p, " %llu %s\n", (unsigned long long)keys[i].created, keys[i].name);
	}
	return out;
}

int
api_keys_match(const struct api_key *keys, size_t n, const char *presented, size_t len)
{
	uint8_t d[32];
	/* a malformed key is refused before hashing; its shape is public */
	if (!api_key_well_formed(presented, len) || api_key_digest(presented, len, d) < 0)
		return -ENOKEY;
	int found = -ENOKEY;
	for (size_t i = 0; i < n; i++) {
		/* no early exit: every digest is compared */
		int eq = CRYPTO_memcmp(keys[i].digest, d, 32) == 0;
		found = eq ? (int)i : found;
	}
	return found;
}

int
api_keys_match_digest_hex(const struct api_key *keys, size_t n, const char *hex)
{
	uint8_t d[32];
	if (!hex || strlen(hex) != 64 || hex_decode(hex, d, 32) < 0)
		return -EINVAL;
	int found = -ENOKEY;
	for (size_t i = 0; i < n; i++) {
		int eq = CRYPTO_memcmp(keys[i].digest, d, 32) == 0;
		found = eq ? (int)i : found;
	}
	return found;
}

int
api_key_digest_hex(const char *key, size_t len, char hex[65])
{
	uint8_t d[32];
	int r = api_key_digest(key, len, d);
	if (r < 0)
		return r;
	static const char x[] = "0123456789abcdef";
	for (size_t i = 0; i < 32; i++) {
		hex[2 * i] = x[d[i] >> 4];
		hex[2 * i + 1] = x[d[i] & 15];
	}
	hex[64] = 0;
	return 0;
}

static void
hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char x[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = x[in[i] >> 4];
		out[2 * i + 1] = x[in[i] & 15];
	}
	out[2 * n] = 0;
}

int
api_key_generate(char key[API_KEY_LEN + 1], struct api_key *rec, const char *name)
{
	uint8_t raw[API_KEY_HEX / 2], idraw[API_KEY_ID_LEN / 2];
	if (!api_key_name_valid(name))
		return -EINVAL;
	if (getrandom(raw, sizeof raw, 0) != sizeof raw ||
	    getrandom(idraw, sizeof idraw, 0) != sizeof idraw)
		return -EIO;
	strcpy(key, API_KEY_PREFIX);
	hex_encode(raw, sizeof raw, key + sizeof(API_KEY_PREFIX) - 1);
	hex_encode(idraw, sizeof idraw, rec->id);
	snprintf(rec->name, sizeof rec->name, "%s", name);
	rec->created = (uint64_t)time(NULL);
	return api_key_digest(key, API_KEY_LEN, rec->digest);
}

int
api_keys_load(const char *path, struct api_key *keys, size_t max, size_t *n)
{
	*n = 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	int r = 0;
	char *buf = NULL;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	/* a file anyone but root could have written is no list of keys; one others can read
	 * leaks the hashes */
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 0026)) {
		r = -EPERM;
		goto out;
	}
	if (st.st_size > API_KEYS_FILE_MAX) {
		r = -EFBIG;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + got, (size_t)st.st_size - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r = k < 0 ? -errno : -EBADMSG;
			goto out;
		}
		got += (size_t)k;
	}
	r = api_keys_parse(buf, got, keys, max, n);
out:
	free(buf);
	close(fd);
	return r;
}
