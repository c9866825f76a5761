/* warren-cgroupd: holds the cgroup subtree systemd delegates to warren-cgroupd.service (its
 * Delegate=), where every sandbox's cgroup is made, so sandboxes live in a unit's delegated
 * subtree yet outside netnsd's own unit: netnsd restarts without touching them (issue 12).
 *
 *   <unit>            the unit's cgroup: no process of its own once set up (cgroup v2 allows
 *                     controllers for children only in a cgroup without processes)
 *   <unit>/cgroupd    this daemon, which does nothing after start but keep the unit active
 *   <unit>/sandboxes  netnsd's and snapshotd's --cgroup-parent; the spawner makes one cgroup
 *                     per sandbox in it
 *
 * docs/ARCHITECTURE.md, "Sandbox cgroups under systemd". */
#pragma once
#include <stddef.h>

#include "seccomp-policy.h"

#define CGROUPD_SELF "cgroupd"
#define CGROUPD_SANDBOXES "sandboxes"

/* The cgroup a process is in, from the text of /proc/PID/cgroup: the unified hierarchy's line
 * ("0::PATH"), or name=systemd's on a host with v1 hierarchies only. A path that is not a valid
 * cgroup path of Warren's (cgroup-path.h: the root "/" is not one) is refused with -EINVAL; no
 * such line: -ENOENT. */
int cgroupd_own_path(const char *proc_cgroup, char *buf, size_t size);

/* Set up the layout above beneath own in the hierarchy mounted at root (cgroup v2: make
 * <own>/cgroupd and move this process there, enable every controller own has for its children
 * and for <own>/sandboxes' children; v1 hierarchies: nothing to move, the runtimes make the
 * per-controller directories). The sandbox parent goes to parent. 0 or -errno, what failed in
 * why. */
int cgroupd_delegate(const char *root, const char *own, char *parent, size_t parent_size, char *why,
		     size_t why_size);

extern const struct seccomp_policy cgroupd_seccomp;
