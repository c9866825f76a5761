/* The nftables rules that isolate sandboxes, installed once when netnsd starts. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Link group of host veths whose sandbox may reach the world ("WA"). */
#define ISOLATION_OUTBOUND_GROUP 0x5741
#define ISOLATION_MAX_EGRESS_ALLOW 32

struct isolation_config {
	const char *table;
	const char *ifname_prefix;
	const char *subnet_cidr; /* e.g. 10.201.0.0/16 */
	/* The one uid besides root whose sockets may open connections to sandbox addresses
	 * (the gateway's); (uid_t)-1: root only. */
	uid_t gateway_uid;
	const char *gateway_user; /* --gateway-user; NULL: the default, warren-gateway */
	/* CIDRs a sandbox with outbound access may reach although they are in the default
	 * deny list (private, link-local, the host's own subnets); checked by isolation_option */
	const char *egress_allow[ISOLATION_MAX_EGRESS_ALLOW];
	size_t n_egress_allow;
	/* Where netnsd notes the ip_forward value it found, so whoever removes the table (the
	 * spawner, or the next netnsd after a crash) puts it back. */
	const char *runtime_dir;
};

/* netnsd's options for the above: --gateway-user USER, --egress-allow CIDR (repeatable). */
#define ISOLATION_OPTIONS                                                                          \
	{"gateway-user", required_argument, NULL, 0x1001},                                         \
	{                                                                                          \
		"egress-allow", required_argument, NULL, 0x1002                                    \
	}
#define ISOLATION_HELP                                                                             \
	"  --gateway-user USER  only root and USER may connect to sandbox addresses (default\n"    \
	"                       warren-gateway; root only if that user does not exist)\n"          \
	"  --egress-allow CIDR  let outbound sandboxes reach CIDR although it is private,\n"       \
	"                       link-local or the host's own subnet (repeatable)\n"
/* 1: the option was one of these and is taken; 0: not ours; -EINVAL: bad value (logged). */
int isolation_option(struct isolation_config *c, int opt, const char *arg);
/* After the options: resolve the gateway user (a missing default user means root only). */
int isolation_finish(struct isolation_config *c);

/* Load the table; extra: more nft commands for the same transaction (egress.c's chains), or
 * NULL. */
int isolation_install(const struct isolation_config *c, const char *extra);
/* Load an nft script (`nft -f -`) in the caller's network namespace; 0 or -EIO. */
int nft_run(const char *script);
/* Remove the table and put net.ipv4.ip_forward back as netnsd found it. */
int isolation_remove(const struct isolation_config *c);
/* A CIDR as nft takes it: IPv4 or IPv6, a prefix length in range, nothing else. */
bool isolation_cidr_valid(const char *s);
