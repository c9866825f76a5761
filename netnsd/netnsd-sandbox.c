/* warren-netnsd's own confinement: the capabilities it keeps and its seccomp allow-list.
 * The spawner (spawn.c) is forked before this applies and keeps runsc's capabilities. */
#include <linux/capability.h>

#include "netnsd.h"

const int netnsd_caps[] = {
	CAP_NET_ADMIN, /* rtnetlink: veth, addresses, routes, link group; ctnetlink scrub */
	CAP_SYS_ADMIN, /* unshare(CLONE_NEWNET) to build slots, setns() to configure them */
};
const unsigned netnsd_n_caps = sizeof netnsd_caps / sizeof netnsd_caps[0];

static const char *const groups[] = {"@default", "@basic-io", "@event-loop", "@ipc", "@file-read",
				     "@namespaces", NULL};
/* openat2: netnsd opens image directories beneath snapshotd's store (netnsd-validate.c) */
static const char *const extra[] = {"openat2", NULL};
const struct seccomp_policy netnsd_seccomp = {.name = "netnsd", .groups = groups, .extra = extra};
