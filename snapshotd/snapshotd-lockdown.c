/* warren-snapshotd's confinement: the user it switches to, the capabilities it keeps and its
 * seccomp allow-list. */
#include <linux/capability.h>
#include <sys/socket.h>

#include "snapshotd.h"

const char snapshotd_user[] = "warren-snapshotd";

const int snapshotd_caps[] = {
	CAP_SYS_ADMIN, /* swapon/swapoff of the reclaim swap file (reclaim.c) */
	/* no CAP_DAC_OVERRIDE: each sandbox's reclaim knob (v1 memory.force_empty, v2
	 * memory.reclaim) is handed to this user by netnsd's spawner, zswap's parameters are
	 * opened before the drop (reclaim.c), the spawner hands what runsc and the VMMs write in
	 * the store to this user (image-proof.c), and the store and cache are this user's */
};
const unsigned snapshotd_n_caps = sizeof snapshotd_caps / sizeof snapshotd_caps[0];

/* AF_UNIX: IPC and sd_notify; no ioctl(), no unshare() */
static const int families[] = {AF_UNIX, 0};
static const char *const groups[] = {"@default",   "@basic-io",	  "@event-loop", "@ipc",
				     "@file-read", "@file-write", "@swap",	 NULL};
const struct seccomp_policy snapshotd_seccomp = {
	.name = "snapshotd", .groups = groups, .socket_families = families};
