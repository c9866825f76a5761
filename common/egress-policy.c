/* Egress policies (egress-policy.h): the one parser and writer of their text, shared by the
 * supervisor, netnsd and its spawner so all three agree on what a policy means. The privileged
 * sides parse again what the supervisor sends: nothing here trusts its input. */
#include "egress-policy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int why_err(char *why, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
why_err(char *why, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (why && size)
		vsnprintf(why, size, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* digits only, at most max of them, value in lo..hi */
static bool
number(const char *s, size_t len, size_t max, unsigned long lo, unsigned long hi,
       unsigned long *out)
{
	if (len == 0 || len > max)
		return false;
	unsigned long v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static int
entry_parse(const char *s, size_t len, struct egress_entry *e, char *why, size_t size)
{
	char addr[INET_ADDRSTRLEN];
	const char *colon = memchr(s, ':', len);
	const char *end = colon ? colon : s + len;
	const char *slash = memchr(s, '/', (size_t)(end - s));
	size_t alen = (size_t)((slash ? slash : end) - s);
	if (alen == 0 || alen >= sizeof addr)
		return why_err(why, size, "entry %.*s: not an IPv4 address", (int)len, s);
	memcpy(addr, s, alen);
	addr[alen] = 0;
	struct in_addr a;
	if (inet_pton(AF_INET, addr, &a) != 1)
		return why_err(why, size, "entry %.*s: not an IPv4 address", (int)len, s);
	unsigned long prefix = 32, port = 0;
	if (slash && !number(slash + 1, (size_t)(end - slash - 1), 2, 0, 32, &prefix))
		return why_err(why, size, "entry %.*s: the prefix length is not 0-32", (int)len, s);
	if (colon && !number(colon + 1, (size_t)(s + len - colon - 1), 5, 1, 65535, &port))
		return why_err(why, size, "entry %.*s: the port is not 1-65535", (int)len, s);
	uint32_t mask = prefix ? htonl(~0u << (32 - prefix)) : 0;
	e->addr = a.s_addr & mask;
	e->prefix = (uint8_t)prefix;
	e->port = (uint16_t)port;
	return 0;
}

int
egress_policy_parse(const char *s, struct egress_policy *p, char *why, size_t size)
{
	memset(p, 0, sizeof *p);
	if (!s || !s[0])
		return why_err(why, size, "an empty egress policy (off, on, or CIDR[:PORT],...)");
	size_t len = strnlen(s, EGRESS_POLICY_MAX);
	if (len >= EGRESS_POLICY_MAX)
		return why_err(why, size, "the egress policy is longer than %d bytes",
			       EGRESS_POLICY_MAX - 1);
	for (size_t i = 0; i < len; i++)
		if (!strchr("0123456789./:, ", s[i]) && !(s[i] >= 'a' && s[i] <= 'z'))
			return why_err(why, size,
				       "the egress policy has a character other than digits, "
				       "'.', '/', ':', ',' and spaces");
	if (!strcmp(s, "off") || !strcmp(s, "on")) {
		p->mode = s[1] == 'n' ? EGRESS_ON : EGRESS_OFF;
		return 0;
	}
	p->mode = EGRESS_LIST;
	const char *at = s;
	for (;;) {
		while (*at == ' ')
			at++;
		const char *comma = strchr(at, ',');
		size_t elen = comma ? (size_t)(comma - at) : strlen(at);
		if (elen == 0 || memchr(at, ' ', elen))
			return why_err(why, size,
				       "an empty or malformed entry in the egress policy");
		if (p->n >= EGRESS_MAX_ENTRIES)
			return why_err(why, size, "more than %d entries in the egress policy",
				       EGRESS_MAX_ENTRIES);
		int r = entry_parse(at, elen, &p->e[p->n], why, size);
		if (r < 0)
			return r;
		p->n++;
		if (!comma)
			return 0;
		at = comma + 1;
	}
}

int
egress_policy_format(const struct egress_policy *p, char *buf, size_t size)
{
	if (p->mode != EGRESS_LIST) {
		int k = snprintf(buf, size, "%s", p->mode == EGRESS_ON ? "on" : "off");
		return k < 0 || (size_t)k >= size ? -ENOSPC : 0;
	}
	size_t used = 0;
	for (size_t i = 0; i < p->n && i < EGRESS_MAX_ENTRIES; i++) {
		char a[INET_ADDRSTRLEN];
		struct in_addr in = {p->e[i].addr};
		inet_ntop(AF_INET, &in, a, sizeof a);
		char pre[8] = "", port[8] = "";
		if (p->e[i].prefix != 32)
			snprintf(pre, sizeof pre, "/%u", p->e[i].prefix);
		if (p->e[i].port)
			snprintf(port, sizeof port, ":%u", p->e[i].port);
		int k = snprintf(buf + used, size - used, "%s%s%s%s", i ? "," : "", a, pre, port);
		if (k < 0 || (size_t)k >= size - used)
			return -ENOSPC;
		used += (size_t)k;
	}
	return used ? 0 : -EINVAL;
}

int
egress_policy_canonical(const char *s, char *buf, size_t size, char *why, size_t why_size)
{
	struct egress_policy p;
	int r = egress_policy_parse(s, &p, why, why_size);
	if (r < 0)
		return r;
	r = egress_policy_format(&p, buf, size);
	if (r < 0)
		return why_err(why, why_size, "the egress policy does not fit");
	return 0;
}

const char *const egress_deny4[] = {"0.0.0.0/8",    "10.0.0.0/8",     "100.64.0.0/10",
				    "127.0.0.0/8",  "169.254.0.0/16", "172.16.0.0/12",
				    "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15",
				    "224.0.0.0/4",  "240.0.0.0/4"};
const size_t egress_deny4_n = sizeof egress_deny4 / sizeof egress_deny4[0];

static uint32_t
prefix_mask(unsigned prefix)
{
	return prefix ? htonl(~0u << (32 - prefix)) : 0;
}

size_t
egress_policy_overlaps(const struct egress_policy *p, const struct egress_entry *ranges, size_t n)
{
	for (size_t j = 0; j < n; j++)
		for (size_t i = 0; p->mode == EGRESS_LIST && i < p->n; i++) {
			/* two blocks overlap when they agree on the shorter prefix */
			unsigned pre = p->e[i].prefix < ranges[j].prefix ? p->e[i].prefix
									 : ranges[j].prefix;
			if ((p->e[i].addr & prefix_mask(pre)) ==
			    (ranges[j].addr & prefix_mask(pre)))
				return i + 1;
		}
	return 0;
}

size_t
egress_policy_denied_entry(const struct egress_policy *p)
{
	struct egress_entry d[16];
	size_t n = 0;
	for (size_t j = 0; j < egress_deny4_n && n < sizeof d / sizeof d[0]; j++)
		if (entry_parse(egress_deny4[j], strlen(egress_deny4[j]), &d[n], NULL, 0) == 0)
			n++;
	return egress_policy_overlaps(p, d, n);
}

/* e's addresses and ports are all c's */
static bool
entry_within(const struct egress_entry *e, const struct egress_entry *c)
{
	return c->prefix <= e->prefix && (e->addr & prefix_mask(c->prefix)) == c->addr &&
	       (c->port == 0 || c->port == e->port);
}

bool
egress_policy_within(const struct egress_policy *p, const struct egress_policy *ceiling)
{
	if (p->mode == EGRESS_OFF || ceiling->mode == EGRESS_ON)
		return p->mode != EGRESS_LIST || egress_policy_denied_entry(p) == 0;
	if (ceiling->mode == EGRESS_OFF || p->mode == EGRESS_ON)
		return false;
	for (size_t i = 0; i < p->n; i++) {
		bool inside = false;
		for (size_t j = 0; j < ceiling->n && !inside; j++)
			inside = entry_within(&p->e[i], &ceiling->e[j]);
		if (!inside)
			return false;
	}
	return true;
}
