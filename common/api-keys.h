/* E2B API keys (warren-e2b-api and `warrenctl apikey`): the key file format, its strict
 * parser, key generation and a constant-time match. A key is "e2b_" followed by 40 hex digits
 * (what E2B's SDKs accept); only its SHA-256 is stored, in a root-owned file (default
 * /etc/warren/api-keys, 0640 root:warren-e2b), one line per key:
 *     <id: 16 hex> <sha256: 64 hex> <created: unix seconds> <name: [A-Za-z0-9._-]{0,64}>
 * after the header line API_KEYS_HEADER. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define API_KEYS_DEFAULT_PATH "/etc/warren/api-keys"
#define API_KEYS_HEADER "# warren api-keys v1"
#define API_KEY_PREFIX "e2b_"
#define API_KEY_HEX 40
#define API_KEY_LEN (sizeof(API_KEY_PREFIX) - 1 + API_KEY_HEX) /* 44 */
#define API_KEY_ID_LEN 16
#define API_KEY_NAME_MAX 64
#define API_KEYS_MAX 1024
#define API_KEYS_FILE_MAX (256 * 1024)

struct api_key {
	char id[API_KEY_ID_LEN + 1];
	uint8_t digest[32];
	uint64_t created;
	char name[API_KEY_NAME_MAX + 1];
};

/* A presented key is shaped like ours (prefix, 40 lower-case hex digits, nothing else). */
bool api_key_well_formed(const char *key, size_t len);
bool api_key_name_valid(const char *name);
bool api_key_id_valid(const char *id);
/* SHA-256 of the key's bytes. 0 or -EIO. */
int api_key_digest(const char *key, size_t len, uint8_t digest[32]);
/* Parse a whole file's content. Every line must be valid: a file with one bad line is refused
 * as a whole (-EBADMSG), so a damaged file never half-works. keys may be NULL to count only.
 * At most API_KEYS_MAX keys (-E2BIG). Duplicate ids are refused. */
int api_keys_parse(const char *buf, size_t len, struct api_key *keys, size_t max, size_t *n);
/* Write the file's content (header + lines) into a malloc'd string. */
char *api_keys_format(const struct api_key *keys, size_t n);
/* The index of the key matching the presented one, or -ENOKEY. Every stored digest is compared
 * with CRYPTO_memcmp whatever matched before, so the time does not tell which or how much. */
int api_keys_match(const struct api_key *keys, size_t n, const char *presented, size_t len);
/* The same for a key's SHA-256 given as 64 lower-case hex digits (what a front door of the
 * cluster sends for its client's key): the index, -ENOKEY, or -EINVAL when malformed. */
int api_keys_match_digest_hex(const struct api_key *keys, size_t n, const char *hex);
/* SHA-256 of the key's bytes as 64 lower-case hex digits. 0 or -EIO. */
int api_key_digest_hex(const char *key, size_t len, char hex[65]);
/* A new key (NUL-terminated, API_KEY_LEN chars) and its record (id, digest, created, name). */
int api_key_generate(char key[API_KEY_LEN + 1], struct api_key *rec, const char *name);
/* Read the key file through an fd opened with O_NOFOLLOW: a regular file of root's, not
 * writable by group or others, not readable by others, at most API_KEYS_FILE_MAX bytes. */
int api_keys_load(const char *path, struct api_key *keys, size_t max, size_t *n);
