#include "host-subnets.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>

size_t
host_subnets4(const char *skip_prefix, struct egress_entry *out, size_t max)
{
	struct ifaddrs *ifa = NULL;
	size_t n = 0;
	if (getifaddrs(&ifa) < 0)
		return 0;
	for (struct ifaddrs *i = ifa; i && n < max; i = i->ifa_next) {
		if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != AF_INET ||
		    (*skip_prefix && !strncmp(i->ifa_name, skip_prefix, strlen(skip_prefix))))
			continue;
		uint32_t mask = ((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr;
		out[n].addr = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr & mask;
		out[n].prefix = (uint8_t)__builtin_popcount(mask);
		out[n].port = 0;
		n++;
	}
	freeifaddrs(ifa);
	return n;
}
