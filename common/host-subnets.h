/* The subnets of the host's own interfaces: its LAN and bridges, which a sandbox whose egress is
 * "on" may not reach (netnsd adds them to its deny set when it starts), and which an E2B client's
 * allow-list may therefore not name either (e2b-api reads them when it starts). */
#pragma once
#include <stddef.h>

#include "egress-policy.h"

struct host_subnet {
	int family;		/* AF_INET or AF_INET6 */
	unsigned char addr[16]; /* host bits cleared; 4 bytes for AF_INET */
	unsigned prefix;
};

/* Each subnet of family of the interfaces other than netnsd's pool veths (pool_prefix and a
 * number; "" skips none), to fn; 0, or -errno when the interfaces cannot be read. */
int host_subnets_each(int family, const char *pool_prefix,
		      void (*fn)(const struct host_subnet *s, void *ud), void *ud);
/* The distinct IPv4 ones into out: their count, or -E2BIG when there are more than max (a check
 * that saw only some of them would let the rest be named). */
int host_subnets4(const char *pool_prefix, struct egress_entry *out, size_t max);
