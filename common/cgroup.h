/* Operations on a sandbox's cgroup (runsc creates it from cgroupsPath): freeze/thaw and the
 * frozen check (netnsd; snapshotd checks before reclaiming), kill and remove (netnsd's spawner).
 * cgroup v2 first, v1 where the host has it. */
#pragma once
#include "cgroup-path.h"
#include <stdbool.h>
#include <sys/types.h>

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
