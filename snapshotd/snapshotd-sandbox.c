/* warren-snapshotd's confinement: the capabilities it keeps and its seccomp allow-list. */
#include <linux/capability.h>

#include "snapshotd.h"

const int snapshotd_caps[] = {
	CAP_SYS_ADMIN, /* swapon/swapoff of the reclaim swap file */
};
const unsigned snapshotd_n_caps = sizeof snapshotd_caps / sizeof snapshotd_caps[0];

static const char *const groups[] = {"@default", "@basic-io", "@event-loop", "@ipc", "@file-read",
				     "@file-write", "@swap", NULL};
const struct seccomp_policy snapshotd_seccomp = {.name = "snapshotd", .groups = groups};
