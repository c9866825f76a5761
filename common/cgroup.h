/* Operations on a sandbox's cgroup (runsc creates it from cgroupsPath): freeze/thaw and the
 * frozen check (netnsd; snapshotd checks before reclaiming), kill and remove (netnsd's spawner).
 * cgroup v2 first, v1 where the host has it. */
#pragma once
#include <stdbool.h>

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
/* The same, leaving the children keep() names (sandboxes a restarted netnsd adopted). */
void cgroup_clear_children_except(const char *parent, bool (*keep)(const char *name));
