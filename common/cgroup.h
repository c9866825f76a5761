/* Operations on a sandbox's cgroup (runsc creates it from cgroupsPath): freeze/thaw and the
 * frozen check (netnsd; snapshotd checks before reclaiming), kill and remove (netnsd's spawner).
 * cgroup v2 first, v1 where the host has it. */
#pragma once
#include <stdbool.h>
#include <sys/types.h>

/* A sandbox's cgroup, relative to each hierarchy's root, is named in one place:
 * <parent>/<id>. The privileged helpers (netnsd, its spawner, snapshotd) compose it from their own
 * --cgroup-parent, never from a path the supervisor sends (a compromised supervisor would point
 * them at the host's cgroups); the supervisor is told it by netnsd (SpawnSandboxResponse.cgroup,
 * SandboxInfo.cgroup). -ENAMETOOLONG when it does not fit. */
#define CGROUP_PATH_MAX 160
int cgroup_sandbox_path(const char *parent, const char *id, char *buf, size_t size);
/* A --cgroup-parent or a path netnsd reports: absolute, no empty, "." or ".." component, only
 * [A-Za-z0-9._@-] in names, shorter than CGROUP_PATH_MAX. */
bool cgroup_path_valid(const char *p);

bool cgroup_is_v2(void);
int cgroup_freeze(const char *rel, bool freeze);
/* 1 frozen, 0 not, <0 error */
int cgroup_frozen(const char *rel);
/* Thaw, then SIGKILL every process until it is empty (bounded). */
int cgroup_kill_all(const char *rel);
/* rmdir the cgroup in every hierarchy. */
void cgroup_remove(const char *rel);
/* Remove every child cgroup of parent after killing its processes (netnsd's clean slate). */
void cgroup_clear_children(const char *parent);

/* Hand the knobs an unprivileged helper writes to that helper's user (root keeps the cgroup and
 * every other file): the freezer (v2 cgroup.freeze, v1 freezer.state) to freezer_uid (netnsd),
 * the reclaim knob (v2 memory.reclaim, v1 memory.force_empty) to memory_uid (snapshotd). So
 * neither needs CAP_DAC_OVERRIDE. A uid of (uid_t)-1 leaves that knob alone. Called by the
 * spawner (root, CAP_CHOWN) once the runtime made the cgroup. 0 or the first -errno. */
int cgroup_hand_knobs(const char *rel, uid_t freezer_uid, uid_t memory_uid);
/* The same, leaving the children keep() names (sandboxes a restarted netnsd adopted). */
void cgroup_clear_children_except(const char *parent, bool (*keep)(const char *name));
