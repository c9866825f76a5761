/* The nftables rules that isolate sandboxes, installed once when netnsd starts. */
#pragma once
#include <stdint.h>

/* Link group of host veths whose sandbox may reach the world ("WA"). */
#define ISOLATION_OUTBOUND_GROUP 0x5741

struct isolation_config {
	const char *table;
	const char *ifname_prefix;
	const char *subnet_cidr; /* e.g. 10.201.0.0/16 */
};
int isolation_install(const struct isolation_config *c);
/* Load an nft script (`nft -f -`) in the caller's network namespace; 0 or -EIO. */
int nft_run(const char *script);
int isolation_remove(const struct isolation_config *c);
