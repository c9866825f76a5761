/* warren-netnsd --remove-all: a stopped netnsd leaves its sandboxes running for the next one
 * (restart without loss), so stopping Warren for good is this explicit step: every runtime in
 * the sandbox cgroups is killed, runsc's state, the bundles and records are removed, the slots'
 * veths deleted and the nftables table (with the forwarding note) taken away. Runs as root,
 * after the lock the last spawner held is free. */
#include "adopt.h"
#include "cgroup.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "netlink.h"
#include "netnsd.h"

#include <linux/netlink.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

int
netnsd_remove_all(const char *runtime_dir, const char *cgroup_parent, const char *prefix,
		  const struct isolation_config *iso)
{
	int lock = adopt_lock(runtime_dir, 120000);
	if (lock < 0)
		return log_error_errno(lock, "Cannot lock %s/lock: %m", runtime_dir);
	cgroup_clear_children(cgroup_parent);
	const char *sub[] = {"runsc", "bundles", "sandboxes", "slots", "egress"};
	char path[512];
	for (size_t i = 0; i < ELEMENTSOF(sub); i++) {
		snprintf(path, sizeof path, "%s/%s", runtime_dir, sub[i]);
		rm_rf(path);
		unlink(path);
	}
	int nl = nl_open(NETLINK_ROUTE);
	struct if_nameindex *ifs = if_nameindex();
	size_t plen = strlen(prefix);
	for (struct if_nameindex *i = ifs; nl >= 0 && i && i->if_index; i++)
		if (!strncmp(i->if_name, prefix, plen) && i->if_name[plen] &&
		    strspn(i->if_name + plen, "0123456789") == strlen(i->if_name + plen))
			nl_link_del(nl, (int)i->if_index);
	if (ifs)
		if_freenameindex(ifs);
	safe_close(nl);
	isolation_remove(iso);
	log_info("Removed every sandbox and slot under %s", runtime_dir);
	close(lock);
	return 0;
}
