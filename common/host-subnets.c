#include "host-subnets.h"

#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>

static const unsigned char *
sockaddr_bytes(const struct sockaddr *sa, size_t *len)
{
	if (sa->sa_family == AF_INET) {
		*len = 4;
		return (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
	}
	*len = 16;
	return (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
}

int
host_subnets_each(int family, const char *skip_prefix,
		  void (*fn)(const struct host_subnet *s, void *ud), void *ud)
{
	struct ifaddrs *ifa = NULL;
	if (getifaddrs(&ifa) < 0)
		return -errno;
	size_t skip = strlen(skip_prefix);
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != family ||
		    (skip && !strncmp(i->ifa_name, skip_prefix, skip)))
			continue;
		struct host_subnet s = {.family = family};
		size_t n;
		const unsigned char *a = sockaddr_bytes(i->ifa_addr, &n);
		const unsigned char *m = sockaddr_bytes(i->ifa_netmask, &n);
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
host_subnets4(const char *skip_prefix, struct egress_entry *out, size_t max)
{
	struct collect4 c = {.out = out, .max = max};
	int r = host_subnets_each(AF_INET, skip_prefix, collect4, &c);
	if (r < 0)
		return r;
	return c.over ? -E2BIG : (int)c.n;
}
