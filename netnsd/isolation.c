/* nftables isolation for netnsd: one `inet` table of its own, loaded with `nft -f -` once at
 * start (never on the claim path). Outbound access is per slot through the host veth's link
 * group, which netnsd sets with rtnetlink at claim time, so no rule changes per sandbox.
 *   - sandbox -> sandbox: dropped (forward, both interfaces ours)
 *   - sandbox -> host services: dropped (input from our veths, unless a reply)
 *   - sandbox -> world: dropped unless the veth is in the outbound group (then masqueraded)
 *   - world -> sandbox: dropped (forward to our veths, unless a reply)
 *   - host (the gateway) -> sandbox: allowed (output is not filtered) */
#include "isolation.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

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

int
isolation_install(const struct isolation_config *c)
{
	char s[4096];
	snprintf(s, sizeof s,
		 "table inet %1$s\n"
		 "delete table inet %1$s\n"
		 "table inet %1$s {\n"
		 " chain input { type filter hook input priority filter; policy accept;\n"
		 "  iifname \"%2$s*\" ct state established,related accept\n"
		 "  iifname \"%2$s*\" drop\n"
		 " }\n"
		 " chain forward { type filter hook forward priority filter; policy accept;\n"
		 "  iifname \"%2$s*\" oifname \"%2$s*\" drop\n"
		 "  oifname \"%2$s*\" ct state established,related accept\n"
		 "  oifname \"%2$s*\" drop\n"
		 "  iifname \"%2$s*\" iifgroup %4$u accept\n"
		 "  iifname \"%2$s*\" drop\n"
		 " }\n"
		 " chain postrouting { type nat hook postrouting priority srcnat; policy accept;\n"
		 "  ip saddr %3$s oifname != \"%2$s*\" masquerade\n"
		 " }\n"
		 "}\n",
		 c->table, c->ifname_prefix, c->subnet_cidr, ISOLATION_OUTBOUND_GROUP);
	int r = nft_run(s);
	if (r < 0)
		return log_error_errno(r, "Failed to load nftables table %s: %m", c->table);
	/* Forwarding is needed only for outbound sandboxes; the forward chain keeps the rest in. */
	FILE *f = fopen("/proc/sys/net/ipv4/ip_forward", "w");
	if (f) {
		fputs("1", f);
		fclose(f);
	}
	return 0;
}

int
isolation_remove(const struct isolation_config *c)
{
	char s[256];
	snprintf(s, sizeof s, "table inet %1$s\ndelete table inet %1$s\n", c->table);
	return nft_run(s);
}
