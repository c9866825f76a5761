#include "host-subnets.h"

#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

/* the address bytes of an interface's address or netmask, read as family (a netmask's own
 * sa_family need not be set) */
static const unsigned char *
sockaddr_bytes(const struct sockaddr *sa, int family, size_t *len)
{
	if (family == AF_INET) {
		*len = 4;
		return (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
	}
	*len = 16;
	return (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
}

/* netnsd's pool veths are named the prefix and a slot number (pool.c), nothing else: an
 * operator's interface that merely starts with the prefix is the host's */
static bool
is_pool_link(const char *name, const char *prefix, size_t plen)
{
	return plen && !strncmp(name, prefix, plen) && name[plen] &&
	       strspn(name + plen, "0123456789") == strlen(name + plen);
}

int
host_subnets_each(int family, const char *pool_prefix,
		  void (*fn)(const struct host_subnet *s, void *ud), void *ud)
{
	struct ifaddrs *ifa = NULL;
	if (getifaddrs(&ifa) < 0)
		return -errno;
	size_t skip = strlen(pool_prefix);
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != family ||
		    is_pool_link(i->ifa_name, pool_prefix, skip))
			continue;
		struct host_subnet s = {.family = family};
		size_t n;
		const unsigned char *a = sockaddr_bytes(i->ifa_addr, family, &n);
		const unsigned char *m = sockaddr_bytes(i->ifa_netmask, family, &n);
		for (size_t k = 0; k < n; k++) {
			s.addr[k] = a[k] & m[k];
			s.prefix += (unsigned)__builtin_popcount(m[k]);
		}
		fn(&s, ud);
	}
	freeifaddrs(ifa);
	return 0;
}

struct collect4 {
	struct egress_entry *out;
	size_t max, n;
	bool over;
};

static void
collect4(const struct host_subnet *s, void *ud)
{
	struct collect4 *c = ud;
	struct egress_entry e = {.prefix = (uint8_t)s->prefix};
	memcpy(&e.addr, s->addr, 4);
	for (size_t i = 0; i < c->n; i++)
		if (c->out[i].addr == e.addr && c->out[i].prefix == e.prefix)
			return;
	if (c->n == c->max)
		c->over = true;
	else
		c->out[c->n++] = e;
}

int
host_subnets4(const char *pool_prefix, struct egress_entry *out, size_t max)
{
	struct collect4 c = {.out = out, .max = max};
	int r = host_subnets_each(AF_INET, pool_prefix, collect4, &c);
	if (r < 0)
		return r;
	return c.over ? -E2BIG : (int)c.n;
}
