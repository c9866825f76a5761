/* warren-e2b-api: the checks every string from HTTP goes through before it is used, stored or
 * sent on D-Bus (pure functions: unit-tested and fuzzed). Limits are small and named here. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define E2B_ID_LEN 12		/* Warren's sandbox ids: 12 lower-case hex digits */
#define E2B_TEMPLATE_MAX 64	/* template names: [A-Za-z0-9._-] */
#define E2B_META_MAX 64		/* metadata pairs per sandbox */
#define E2B_META_KEY_MAX 128	/* bytes */
#define E2B_META_VALUE_MAX 1024 /* bytes */
#define E2B_ENV_MAX 256		/* env vars per /init */
#define E2B_ENV_NAME_MAX 256
#define E2B_ENV_VALUE_MAX 32768
#define E2B_BODY_MAX (1024 * 1024)
#define E2B_TOKEN_MAX 64   /* nextToken */
#define E2B_NETWORK_MAX 64 /* entries of network.allowOut, of denyOut, as sent */

enum e2b_state_mask { E2B_STATE_RUNNING = 1, E2B_STATE_PAUSED = 2 };

struct e2b_kv {
	char *key, *value;
};

/* A string that may be stored and sent on: at most max bytes, valid UTF-8, no control
 * character (C0, DEL, C1), as the supervisor's D-Bus input rule. */
bool e2b_input_text_ok(const char *s, size_t len, size_t max);
bool e2b_input_id_ok(const char *s);
/* A request URI that may be written, as it is, in the request line to another host: printable
 * ASCII only (no space, control byte, DEL or byte >= 0x80; percent-escapes are left as sent). */
bool e2b_input_uri_ok(const char *uri);
bool e2b_input_template_ok(const char *s);
bool e2b_input_env_name_ok(const char *s);
/* "key=value&k2=v2", each part percent-decoded (as the SDK sends metadata filters); at most
 * E2B_META_MAX pairs, each checked like stored metadata. Fills out (malloc'd strings, free
 * with e2b_kv_free). 0, -EINVAL, -E2BIG, -ENOMEM. */
int e2b_input_parse_metadata_query(const char *q, struct e2b_kv *out, size_t max, size_t *n);
void e2b_kv_free(struct e2b_kv *kv, size_t n);
/* "running,paused" (form style, explode=false) -> mask; -EINVAL on anything else */
int e2b_input_parse_states(const char *s, unsigned *mask);
/* "1".."100" -> limit; -EINVAL otherwise */
int e2b_input_parse_limit(const char *s, unsigned *limit);
/* a nextToken as written by e2b_input_format_token: "<started usec>_<id>" */
int e2b_input_parse_token(const char *s, uint64_t *started_usec, char id[E2B_ID_LEN + 1]);
void e2b_input_format_token(uint64_t started_usec, const char *id, char out[E2B_TOKEN_MAX]);
/* percent-decode into out (at most outlen-1 bytes); '+' is a space; -EINVAL on a bad escape or
 * an embedded NUL */
int e2b_input_unescape(const char *in, size_t inlen, char *out, size_t outlen);

/* E2B's network.denyOut/allowOut (allowed entries win) and allow_internet_access (false is a
 * denyOut of all traffic) as a Warren egress policy, into out (size >= 512):
 *  - traffic denied to all ("0.0.0.0/0" in denyOut, or no internet access): the allowOut
 *    entries as an allow-list (IPv4 addresses and CIDR blocks, at most 16), "off" when none;
 *  - else "" (the template's policy: E2B then allows all, and Warren never opens more than
 *    its operator chose).
 * Refused (-EINVAL, why filled) rather than loosely applied: a domain name (nftables matches
 * addresses), a denyOut entry other than all traffic (Warren has allow-lists, not deny-lists), an
 * entry Warren's policy parser refuses. Returns 0. */
int e2b_input_network_policy(const char *const *allow, size_t n_allow, const char *const *deny,
			     size_t n_deny, bool internet, char *out, size_t size, char *why,
			     size_t whylen);

/* As much of a JSON value's type as e2b_input_network_key needs (e2b-input.c does not parse
 * JSON: its caller says what it holds). */
enum e2b_json_kind {
	E2B_JSON_NULL,
	E2B_JSON_TRUE,
	E2B_JSON_FALSE,
	E2B_JSON_STRING,
	E2B_JSON_NUMBER,
	E2B_JSON_ARRAY,
	E2B_JSON_OBJECT,
};

/* One key of the create body's network object, with its value's kind and, for an array or an
 * object, its size: 0 when Warren honours it (allowOut and denyOut, whose entries
 * e2b_input_network_policy judges) or it asks for what Warren does anyway (allowPublicTraffic
 * true, no maskRequestHost, rules {}, no egressProxy); -EINVAL, why filled, when it asks for
 * what Warren does not do, or the key is unknown: a network setting, which is a security one,
 * is refused rather than silently dropped. */
int e2b_input_network_key(const char *key, enum e2b_json_kind kind, size_t n, char *why,
			  size_t whylen);
