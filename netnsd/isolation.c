/* nftables isolation for netnsd: one `inet` table of its own, loaded with `nft -f -` once at
 * start (never on the claim path). Outbound access is per slot through the host veth's link
 * group, which netnsd sets with rtnetlink at claim time, so no rule changes per sandbox.
 *   - sandbox -> sandbox: dropped (forward, both interfaces ours)
 *   - sandbox -> host services: dropped (input from our veths, unless a reply or IPv6
 *     neighbour discovery, without which no IPv6 packet crosses a veth)
 *   - sandbox -> world: dropped unless the veth is in the outbound group (then masqueraded),
 *     and even then not to link-local, loopback, multicast, private ranges or the host's own
 *     subnets (the cloud metadata service, the host's LAN), unless --egress-allow names them;
 *     a slot with an egress allow-list (egress.c) jumps from the map egress_slots to a chain of
 *     its own first, which accepts what is listed (even a denied range) and drops the rest
 *   - world -> sandbox: dropped (forward to our veths, unless a reply)
 *   - host -> sandbox: only sockets of root and of the gateway's uid (output, meta skuid):
 *     any other local user would reach every port of every tenant and wake frozen ones
 * Forwarding: IPv4 decides on the *input* device, and the replies of a masqueraded flow come in
 * on whichever uplink the world answers through (also ones that appear later), so forwarding
 * on the pool's veths alone is not enough. When the host did not forward, netnsd switches
 * net.ipv4.ip_forward on, notes the old value in its runtime dir, adds a rule that forwards
 * only flows that began on a Warren outbound veth (so the host does not become a router for
 * its LAN), and whoever removes the table puts the old value back. Runs in netnsd as root before
 * its lock-down; isolation_remove in the spawner. */
#include "isolation.h"
#include "egress-policy.h"
#include "fileio.h"
#include "host-subnets.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define IP_FORWARD "/proc/sys/net/ipv4/ip_forward"

/* unspecified and loopback, IPv4-mapped, unique-local, link-local, multicast */
static const char *const deny6[] = {"::/127", "::ffff:0:0/96", "fc00::/7", "fe80::/10", "ff00::/8"};

bool
isolation_cidr_valid(const char *s)
{
	char addr[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	if (!slash || (size_t)(slash - s) >= sizeof addr)
		return false;
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = 0;
	unsigned char buf[16];
	int max = inet_pton(AF_INET, addr, buf) == 1	? 32
		  : inet_pton(AF_INET6, addr, buf) == 1 ? 128
							: -1;
	if (max < 0 || !slash[1] || strlen(slash + 1) > 3)
		return false;
	for (const char *p = slash + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return atoi(slash + 1) <= max;
}

int
isolation_option(struct isolation_config *c, int opt, const char *arg)
{
	switch (opt) {
	case 0x1001:
		c->gateway_user = arg;
		return 1;
	case 0x1002:
		if (!isolation_cidr_valid(arg) || c->n_egress_allow >= ISOLATION_MAX_EGRESS_ALLOW) {
			log_error("--egress-allow takes an IPv4 or IPv6 CIDR such as 192.0.2.0/24 "
				  "(at most %d)",
				  ISOLATION_MAX_EGRESS_ALLOW);
			return -EINVAL;
		}
		c->egress_allow[c->n_egress_allow++] = arg;
		return 1;
	}
	return 0;
}

int
isolation_finish(struct isolation_config *c)
{
	const char *name = c->gateway_user ? c->gateway_user : "warren-gateway";
	struct passwd *pw = getpwnam(name);
	if (!pw && c->gateway_user) {
		log_error("--gateway-user %s: no such user", name);
		return -ENOENT;
	}
	if (!pw)
		log_warning("No user %s: only root may connect to sandbox addresses", name);
	c->gateway_uid = pw ? pw->pw_uid : (uid_t)-1;
	return 0;
}

int
nft_run(const char *script)
{
	FILE *f = popen("nft -f -", "w");
	if (!f)
		return -errno;
	fputs(script, f);
	int st = pclose(f);
	return st == 0 ? 0 : -EIO;
}

static void
print_subnet(const struct host_subnet *s, void *ud)
{
	char a[INET6_ADDRSTRLEN];
	inet_ntop(s->family, s->addr, a, sizeof a);
	fprintf(ud, ", %s/%u", a, s->prefix);
}

static void
set_elements(FILE *f, const char *name, const char *type, const char *const *fixed, size_t n_fixed,
	     const struct isolation_config *c, int family, bool host, const char *extra)
{
	fprintf(f, " set %s { type %s; flags interval; auto-merge;\n", name, type);
	bool any = false;
	for (size_t i = 0; i < n_fixed; i++) {
		fprintf(f, "%s%s", any ? ", " : "  elements = { ", fixed[i]);
		any = true;
	}
	if (extra) {
		fprintf(f, "%s%s", any ? ", " : "  elements = { ", extra);
		any = true;
	}
	for (size_t i = 0; !fixed && i < c->n_egress_allow; i++) {
		bool v6 = strchr(c->egress_allow[i], ':') != NULL;
		if (v6 != (family == AF_INET6))
			continue;
		fprintf(f, "%s%s", any ? ", " : "  elements = { ", c->egress_allow[i]);
		any = true;
	}
	/* the host's own subnets, but not the pool's */
	int r = host && any ? host_subnets_each(family, c->ifname_prefix, print_subnet, f) : 0;
	if (r < 0)
		log_warning_errno(r, "Cannot read the host's addresses: %m");
	fprintf(f, "%s }\n", any ? " }\n" : "");
}

static int
forward_state_path(const struct isolation_config *c, char *buf, size_t size)
{
	if (!c->runtime_dir)
		return -EINVAL;
	snprintf(buf, size, "%s/ip_forward.before", c->runtime_dir);
	return 0;
}

/* Switch IPv4 forwarding on if the host had it off; true when netnsd did (so it restricts it). */
static bool
forwarding_on(const struct isolation_config *c)
{
	char path[512], now[8] = "", before[8] = "";
	file_read_line(IP_FORWARD, now, sizeof now);
	if (forward_state_path(c, path, sizeof path) < 0)
		return false;
	/* a netnsd before us switched it on and could not put it back: its note stays the truth */
	if (file_read_line(path, before, sizeof before) == 0 && !strcmp(before, "0")) {
		file_write_string(IP_FORWARD, "1");
		return true;
	}
	if (!strcmp(now, "1"))
		return false;
	int r = file_write_atomic(path, "0\n", 2, 0600, true);
	if (r < 0) {
		log_error_errno(r, "Cannot note ip_forward's value in %s, leaving it off: %m",
				path);
		return false;
	}
	r = file_write_string(IP_FORWARD, "1");
	if (r < 0)
		log_error_errno(r, "Cannot switch IPv4 forwarding on: %m");
	else
		log_info("IPv4 forwarding switched on for outbound sandboxes only; put back to 0 "
			 "when netnsd stops");
	return true;
}

int
isolation_install(const struct isolation_config *c, const char *extra)
{
	bool restrict_forward = forwarding_on(c);
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	if (!f)
		return -ENOMEM;
	const char *P = c->ifname_prefix;
	fprintf(f, "table inet %1$s\ndelete table inet %1$s\ntable inet %1$s {\n", c->table);
	set_elements(f, "egress_deny4", "ipv4_addr", egress_deny4, egress_deny4_n, c, AF_INET, true,
		     c->subnet_cidr);
	set_elements(f, "egress_deny6", "ipv6_addr", deny6, sizeof deny6 / sizeof *deny6, c,
		     AF_INET6, true, NULL);
	set_elements(f, "egress_allow4", "ipv4_addr", NULL, 0, c, AF_INET, false, NULL);
	set_elements(f, "egress_allow6", "ipv6_addr", NULL, 0, c, AF_INET6, false, NULL);
	/* host veth name -> jump to that slot's allow-list chain (egress.c adds the elements) */
	fprintf(f, " map egress_slots { type ifname : verdict; }\n");
	fprintf(f,
		" chain input { type filter hook input priority filter; policy accept;\n"
		"  iifname \"%1$s*\" ct state established,related accept\n"
		/* IPv6 neighbour discovery is ICMPv6, never a conntrack reply: without it no IPv6
		 * packet crosses a veth at all, even root's (ARP is not in this family's path).
		 * Hop limit 255: only on-link senders (RFC 4861). */
		"  iifname \"%1$s*\" icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } "
		"ip6 hoplimit 255 accept\n"
		"  iifname \"%1$s*\" drop\n"
		" }\n"
		" chain forward { type filter hook forward priority filter; policy accept;\n"
		"  iifname \"%1$s*\" oifname \"%1$s*\" drop\n"
		"  oifname \"%1$s*\" ct state established,related accept\n"
		"  oifname \"%1$s*\" drop\n"
		"  iifname \"%1$s*\" iifgroup != %2$u drop\n"
		"  iifname \"%1$s*\" ct state established,related accept\n"
		"  iifname vmap @egress_slots\n"
		"  iifname \"%1$s*\" ip daddr @egress_allow4 accept\n"
		"  iifname \"%1$s*\" ip6 daddr @egress_allow6 accept\n"
		"  iifname \"%1$s*\" ip daddr @egress_deny4 drop\n"
		"  iifname \"%1$s*\" ip6 daddr @egress_deny6 drop\n"
		"  iifname \"%1$s*\" accept\n",
		P, ISOLATION_OUTBOUND_GROUP);
	if (restrict_forward)
		/* the host did not forward before netnsd: it forwards Warren's outbound flows and
		 * their replies, nothing else (other Warren instances' veths share the group) */
		fprintf(f, "  ct state established,related accept\n  iifgroup != %u drop\n",
			ISOLATION_OUTBOUND_GROUP);
	fprintf(f, " }\n chain output { type filter hook output priority filter; policy accept;\n");
	/* by address, and by interface for whatever else reaches a slot's veth (IPv6 link-local) */
	char uids[32];
	if (c->gateway_uid != (uid_t)-1 && c->gateway_uid != 0)
		snprintf(uids, sizeof uids, "{ 0, %u }", (unsigned)c->gateway_uid);
	else
		snprintf(uids, sizeof uids, "0");
	fprintf(f, "  ip daddr %s meta skuid != %s drop\n", c->subnet_cidr, uids);
	fprintf(f, "  oifname \"%s*\" meta skuid != %s drop\n", P, uids);
	fprintf(f,
		" }\n"
		" chain postrouting { type nat hook postrouting priority srcnat; policy accept;\n"
		"  ip saddr %s oifname != \"%s*\" masquerade\n"
		" }\n"
		"}\n",
		c->subnet_cidr, P);
	/* the re-adopted slots' allow-lists, in the same transaction: no moment without them */
	if (extra)
		fputs(extra, f);
	fclose(f);
	int r = nft_run(s);
	if (r < 0)
		log_error("nftables script was:\n%s", s);
	free(s);
	if (r < 0)
		return log_error_errno(r, "Failed to load nftables table %s: %m", c->table);
	return 0;
}

int
isolation_remove(const struct isolation_config *c)
{
	char s[256];
	snprintf(s, sizeof s, "table inet %1$s\ndelete table inet %1$s\n", c->table);
	int r = nft_run(s);
	char path[512], before[8];
	if (forward_state_path(c, path, sizeof path) == 0 &&
	    file_read_line(path, before, sizeof before) == 0) {
		if (!strcmp(before, "0") && file_write_string(IP_FORWARD, "0") < 0)
			log_error("Cannot switch IPv4 forwarding back off");
		unlink(path);
	}
	return r;
}
