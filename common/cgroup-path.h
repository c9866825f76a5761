/* The name of a sandbox's cgroup and the check of a cgroup path: string work only, so every
 * process (and the fuzzers, which stub the cgroup operations) links it alone. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

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
/* A --cgroup-parent: a valid path that leaves room for "/<sandbox id>" (a longer one would pass
 * the check and then fail every spawn, reclaim and re-adoption). */
bool cgroup_parent_valid(const char *p);
