/* warren-netnsd's own confinement: the user it switches to, the capabilities it keeps and its
 * seccomp allow-list. The spawner (spawn.c) is forked before this applies and keeps runsc's
 * capabilities as root. */
#include <linux/capability.h>
#include <linux/sockios.h>
#include <sched.h>
#include <sys/socket.h>

#include "netnsd.h"

const char netnsd_user[] = "warren-netnsd";

const int netnsd_caps[] = {
	CAP_NET_ADMIN, /* rtnetlink: veth, addresses, routes, link group; ctnetlink scrub */
	CAP_SYS_ADMIN, /* unshare(CLONE_NEWNET) to build slots, setns() to configure them */
	/* no CAP_DAC_OVERRIDE: the spawner hands each sandbox's freezer knob (v1 freezer.state,
	 * v2 cgroup.freeze) to this user once runsc or the VMM launch made the cgroup */
};
const unsigned netnsd_n_caps = sizeof netnsd_caps / sizeof netnsd_caps[0];

/* if_nametoindex() (pool.c, netlink.c) asks the kernel with SIOCGIFINDEX on an AF_UNIX socket */
static const unsigned long ioctls[] = {SIOCGIFINDEX, 0};
/* AF_UNIX: IPC, if_nametoindex(); AF_NETLINK: rtnetlink and ctnetlink */
static const int families[] = {AF_UNIX, AF_NETLINK, 0};
/* @file-update: cgroup freezer.state / cgroup.freeze (netnsd-dispatch.c handle_freeze); no
 * file is ever created or truncated after start-up */
static const char *const groups[] = {"@default",   "@basic-io",	   "@event-loop", "@ipc",
				     "@file-read", "@file-update", "@namespaces", NULL};
const struct seccomp_policy netnsd_seccomp = {.name = "netnsd",
					      .groups = groups,
					      .unshare_flags = CLONE_NEWNET, /* pool.c slot_build */
					      .ioctls = ioctls,
					      .socket_families = families};
