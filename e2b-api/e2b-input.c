/* warren-e2b-api: input checks (see e2b-input.h). Nothing here allocates more than the bounds
 * it checks, and nothing trusts a length it did not count. */
#include "e2b-input.h"
#include "egress-policy.h"
#include "names.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool
e2b_input_text_ok(const char *s, size_t len, size_t max)
{
	if (!s || len > max)
		return false;
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			return false;
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t n;
		uint32_t cp;
		if ((c & 0xe0) == 0xc0) {
			n = 2;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 3;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 4;
			cp = c & 0x07;
		} else
			return false;
		if (i + n > len)
			return false;
		for (size_t k = 1; k < n; k++) {
			unsigned char cc = (unsigned char)s[i + k];
			if ((cc & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (cc & 0x3f);
		}
		/* overlong forms, surrogates, beyond U+10FFFF, and the C1 controls */
		if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff || (cp >= 0x80 && cp <= 0x9f))
			return false;
		i += n;
	}
	return true;
}

bool
e2b_input_id_ok(const char *s)
{
	if (!s || strlen(s) != E2B_ID_LEN)
		return false;
	for (size_t i = 0; i < E2B_ID_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Warren's own rule (common/names.c), which the supervisor applies again */
bool
e2b_input_template_ok(const char *s)
{
	return s && strlen(s) <= E2B_TEMPLATE_MAX && template_name_valid(s);
}

bool
e2b_input_env_name_ok(const char *s)
{
	size_t len = s ? strlen(s) : 0;
	if (len == 0 || len > E2B_ENV_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return false;
	}
	return true;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
e2b_input_unescape(const char *in, size_t inlen, char *out, size_t outlen)
{
	size_t o = 0;
	for (size_t i = 0; i < inlen; i++) {
		char c = in[i];
		if (c == '%') {
			if (i + 2 >= inlen)
				return -EINVAL;
			int h = hexval(in[i + 1]), l = hexval(in[i + 2]);
			if (h < 0 || l < 0)
				return -EINVAL;
			c = (char)(h * 16 + l);
			i += 2;
		} else if (c == '+')
			c = ' ';
		if (c == 0 || o + 1 >= outlen)
			return c == 0 ? -EINVAL : -E2BIG;
		out[o++] = c;
	}
	out[o] = 0;
	return (int)o;
}

void
e2b_kv_free(struct e2b_kv *kv, size_t n)
{
	for (size_t i = 0; kv && i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
		kv[i].key = kv[i].value = NULL;
	}
}

int
e2b_input_parse_metadata_query(const char *q, struct e2b_kv *out, size_t max, size_t *n)
{
	*n = 0;
	size_t len = strlen(q), pos = 0;
	if (len == 0)
		return 0;
	while (pos <= len) {
		const char *amp = memchr(q + pos, '&', len - pos);
		size_t plen = amp ? (size_t)(amp - (q + pos)) : len - pos;
		const char *eq = memchr(q + pos, '=', plen);
		if (!eq || eq == q + pos)
			goto bad;
		if (*n >= max || *n >= E2B_META_MAX) {
			e2b_kv_free(out, *n);
			*n = 0;
			return -E2BIG;
		}
		size_t klen = (size_t)(eq - (q + pos)), vlen = plen - klen - 1;
		char k[E2B_META_KEY_MAX + 1], v[E2B_META_VALUE_MAX + 1];
		int kl = e2b_input_unescape(q + pos, klen, k, sizeof k);
		int vl = e2b_input_unescape(eq + 1, vlen, v, sizeof v);
		if (kl <= 0 || vl < 0 || !e2b_input_text_ok(k, (size_t)kl, E2B_META_KEY_MAX) ||
		    !e2b_input_text_ok(v, (size_t)vl, E2B_META_VALUE_MAX))
			goto bad;
		out[*n].key = strdup(k);
		out[*n].value = strdup(v);
		(*n)++;
		if (!out[*n - 1].key || !out[*n - 1].value) {
			e2b_kv_free(out, *n);
			*n = 0;
			return -ENOMEM;
		}
		if (!amp)
			break;
		pos += plen + 1;
	}
	return 0;
bad:
	e2b_kv_free(out, *n);
	*n = 0;
	return -EINVAL;
}

int
e2b_input_parse_states(const char *s, unsigned *mask)
{
	*mask = 0;
	size_t len = strlen(s), pos = 0;
	if (len == 0 || len > 64)
		return -EINVAL;
	while (pos <= len) {
		const char *comma = memchr(s + pos, ',', len - pos);
		size_t l = comma ? (size_t)(comma - (s + pos)) : len - pos;
		if (l == 7 && !memcmp(s + pos, "running", 7))
			*mask |= E2B_STATE_RUNNING;
		else if (l == 6 && !memcmp(s + pos, "paused", 6))
			*mask |= E2B_STATE_PAUSED;
		else
			return -EINVAL;
		if (!comma)
			break;
		pos += l + 1;
	}
	return 0;
}

int
e2b_input_parse_limit(const char *s, unsigned *limit)
{
	size_t len = strlen(s);
	if (len == 0 || len > 3)
		return -EINVAL;
	unsigned v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v < 1 || v > 100)
		return -EINVAL;
	*limit = v;
	return 0;
}

int
e2b_input_parse_token(const char *s, uint64_t *started_usec, char id[E2B_ID_LEN + 1])
{
	size_t len = strlen(s);
	const char *us = strchr(s, '_');
	if (len >= E2B_TOKEN_MAX || !us || us == s || (size_t)(us - s) > 19)
		return -EINVAL;
	uint64_t v = 0;
	for (const char *p = s; p < us; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (!e2b_input_id_ok(us + 1))
		return -EINVAL;
	*started_usec = v;
	memcpy(id, us + 1, E2B_ID_LEN + 1);
	return 0;
}

void
e2b_input_format_token(uint64_t started_usec, const char *id, char out[E2B_TOKEN_MAX])
{
	snprintf(out, E2B_TOKEN_MAX, "%llu_%s", (unsigned long long)started_usec, id);
}

int
e2b_input_network_policy(const char *const *allow, size_t n_allow, const char *const *deny,
			 size_t n_deny, bool internet, char *out, size_t size, char *why,
			 size_t whylen)
{
	bool deny_all = !internet;
	for (size_t i = 0; i < n_deny; i++) {
		if (strcmp(deny[i], "0.0.0.0/0") != 0) {
			snprintf(why, whylen,
				 "network.denyOut: only 0.0.0.0/0 (all traffic) is supported, with "
				 "allowOut for what may pass");
			return -EINVAL;
		}
		deny_all = true;
	}
	if (n_allow > EGRESS_MAX_ENTRIES) {
		snprintf(why, whylen, "network.allowOut: at most %d entries", EGRESS_MAX_ENTRIES);
		return -EINVAL;
	}
	char list[EGRESS_POLICY_MAX] = "";
	size_t len = 0;
	for (size_t i = 0; i < n_allow; i++) {
		const char *e = allow[i];
		/* an address, a CIDR block: digits, dots, one slash; a letter is a domain name */
		if (!*e || strspn(e, "0123456789./") != strlen(e)) {
			snprintf(why, whylen,
				 "network.allowOut: '%.64s' is not an IPv4 address or CIDR block "
				 "(domain names are not supported)",
				 e);
			return -EINVAL;
		}
		int k = snprintf(list + len, sizeof list - len, "%s%s", len ? "," : "", e);
		if (k < 0 || (size_t)k >= sizeof list - len) {
			snprintf(why, whylen, "network.allowOut is too long");
			return -EINVAL;
		}
		len += (size_t)k;
	}
	if (!deny_all) {
		snprintf(out, size, "%s", "");
		return 0;
	}
	char reason[160];
	if (egress_policy_canonical(len ? list : "off", out, size, reason, sizeof reason) < 0) {
		snprintf(why, whylen, "network.allowOut: %s", reason);
		return -EINVAL;
	}
	/* An allow-list entry passes even where netnsd's deny list refuses (an owner's SetEgress
	 * may open a private address). An API key holder is not the host's operator: what it
	 * lists must stay out of those ranges (egress_deny4, netnsd's deny set), or allowOut
	 * ["0.0.0.0/0"] would reach the cloud metadata service and the host's LAN. */
	struct egress_policy p;
	if (egress_policy_parse(out, &p, reason, sizeof reason) < 0)
		return snprintf(why, whylen, "network.allowOut: %s", reason), -EINVAL;
	size_t bad = egress_policy_denied_entry(&p);
	if (bad) {
		snprintf(why, whylen,
			 "network.allowOut: entry %zu overlaps a range Warren keeps closed "
			 "(private, "
			 "loopback, link-local, multicast, reserved)",
			 bad);
		return -EINVAL;
	}
	return 0;
}

#define KIND(k) (1u << (k))
#define ANY_KIND (~0u)

/* network's keys and the values that ask for nothing Warren does not do; E2B's spec and SDK
 * (SandboxNetworkOpts) name no others. A value outside the set is refused with why. */
static const struct {
	const char *key;
	unsigned kinds;	   /* KIND() of the values accepted */
	bool empty_object; /* and {} */
	const char *why;
} network_keys[] = {
	/* their entries are e2b_input_network_policy's; the caller checks they are arrays */
	{"allowOut", ANY_KIND, false, NULL},
	{"denyOut", ANY_KIND, false, NULL},
	/* true (E2B's default) is what the gateway does: a sandbox's own port is served with no
	 * traffic token (only the agent's port needs one); false would ask it to demand one */
	{"allowPublicTraffic", KIND(E2B_JSON_NULL) | KIND(E2B_JSON_TRUE), false,
	 "only true is supported: Warren's gateway serves a sandbox's port to every client that "
	 "reaches it, with no traffic access token"},
	{"maskRequestHost", KIND(E2B_JSON_NULL), false,
	 "is not supported: Warren's gateway forwards the Host header as the client sent it"},
	/* per-host header transforms need an egress HTTP proxy; Warren filters addresses */
	{"rules", KIND(E2B_JSON_NULL), true,
	 "is not supported: Warren has no egress proxy to apply per-host transforms (only {} is "
	 "accepted)"},
	{"egressProxy", KIND(E2B_JSON_NULL), false,
	 "is not supported: Warren does not tunnel a sandbox's egress through a proxy"},
};

int
e2b_input_network_key(const char *key, enum e2b_json_kind kind, size_t n, char *why, size_t whylen)
{
	for (size_t i = 0; i < sizeof network_keys / sizeof network_keys[0]; i++) {
		if (strcmp(key, network_keys[i].key))
			continue;
		if ((network_keys[i].kinds & KIND(kind)) ||
		    (network_keys[i].empty_object && kind == E2B_JSON_OBJECT && n == 0))
			return 0;
		snprintf(why, whylen, "network.%s %s", key, network_keys[i].why);
		return -EINVAL;
	}
	/* the key is the client's: echoed only when it is printable text */
	if (e2b_input_text_ok(key, strlen(key), 64))
		snprintf(why, whylen,
			 "network.%s: unknown key (Warren knows allowOut, denyOut, "
			 "allowPublicTraffic, maskRequestHost, rules, egressProxy)",
			 key);
	else
		snprintf(why, whylen,
			 "network: an unknown key (Warren knows allowOut, denyOut, "
			 "allowPublicTraffic, maskRequestHost, rules, egressProxy)");
	return -EINVAL;
}

bool
e2b_input_uri_ok(const char *uri)
{
	if (!uri || !*uri)
		return false;
	for (const unsigned char *c = (const unsigned char *)uri; *c; c++)
		if (*c <= 0x20 || *c >= 0x7f)
			return false;
	return true;
}
