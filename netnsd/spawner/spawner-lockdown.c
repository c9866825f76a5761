/* The spawner's own confinement (docs/ARCHITECTURE.md: the spawner): the capabilities it keeps,
 * which are all runsc and the VMMs it starts can ever have (the bounding set goes with them),
 * and the drop of the steps that need none to an unprivileged user. The list was found by
 * experiment (runsc 20221219, --platform=ptrace --network=sandbox, run/exec/checkpoint/
 * restore/delete with one capability at a time removed; then the microVM tests). Runs in
 * netnsd's spawner, once its start-up (clean slate, templates dir) is done. */
#include "spawner-lockdown.h"
#include "log.h"
#include "privdrop.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

const int spawner_caps[] = {
	CAP_SYS_ADMIN,	  /* runsc: namespaces, mounts, pivot_root; setns into the slot; the
			   * rootfs bind mount (rootfs.c); the VMM launcher's setns */
	CAP_SYS_CHROOT,	  /* runsc: the gofer and sandbox chroot/pivot_root into their roots */
	CAP_SYS_PTRACE,	  /* runsc checkpoint/restore under --platform=ptrace (the stubs) */
	CAP_SETUID,	  /* runsc: its sandbox and gofer switch ids; the VMM drops to warren-vm
			   * (qemu -runas, or the launcher); a microVM exec step drops too */
	CAP_SETGID,	  /* the same, for groups */
	CAP_NET_ADMIN,	  /* runsc --network=sandbox takes the veth's address and routes; the
			   * microVM tap and its nftables table; the isolation table's removal */
	CAP_NET_RAW,	  /* runsc --network=sandbox: an AF_PACKET socket on the slot's veth */
	CAP_CHOWN,	  /* runsc checkpoint (its image files); the VMM's directory and log
			   * handed to warren-vm */
	CAP_KILL,	  /* SIGKILL to a VMM running as warren-vm and to a sandbox cgroup's
			   * processes that runsc runs under other ids */
	CAP_DAC_OVERRIDE, /* clean-up of what a VMM running as warren-vm left in its directory
			   * and RAM files; the image directories of snapshotd's store */
};
const unsigned spawner_n_caps = sizeof spawner_caps / sizeof spawner_caps[0];

int
spawner_lockdown_apply(void)
{
	/* no user switch (runsc must start as root), no seccomp filter (runsc installs its own
	 * and inherits ours otherwise); no_new_privs: nothing run from here gains a capability
	 * through a file */
	return privdrop_apply(NULL, spawner_caps, spawner_n_caps);
}

int
spawner_lockdown_drop_step(const char *user)
{
	uid_t uid;
	gid_t gid;
	int r = privdrop_lookup_user(user, &uid, &gid);
	if (r < 0)
		return r;
	if (uid == 0)
		return -EPERM;
	/* leaving uid 0 clears every capability (no SECBIT_KEEP_CAPS) */
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (geteuid() == 0 || getuid() == 0)
		return -EPERM;
	return 0;
}
