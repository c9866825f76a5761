/* netnsd's spawner: a small child forked before netnsd locks itself down. It keeps the
 * capabilities runsc needs and no seccomp filter (runsc inherits both), accepts only the typed
 * orders netnsd has already validated over a private socketpair, and is the subreaper of every
 * runsc process so a sandbox that exits is reported. */
#pragma once
#include <stdint.h>
#include <sys/types.h>

#include "isolation.h"
#include "microvm.h"

/* Bounds every gVisor sandbox gets (config.json's linux.resources; memory comes per template). */
struct spawn_limits {
	uint32_t pids_max;      /* host tasks: runsc's sentry and gofer threads and ptrace stubs */
	uint32_t cpu_millis;    /* CPU time per second, in thousandths of a CPU; 0: no quota */
};
/* An idle web sandbox runs ~40 host tasks and the app ~60; one CPU each keeps one busy tenant
 * from taking every core. */
#define SPAWN_LIMITS_DEFAULT {.pids_max = 512, .cpu_millis = 1000}
#define SPAWN_LIMITS_OPTIONS                                                                       \
	{"sandbox-pids", required_argument, NULL, 0x1101},                                         \
	{                                                                                          \
		"sandbox-cpus", required_argument, NULL, 0x1102                                    \
	}
#define SPAWN_LIMITS_HELP                                                                          \
	"  --sandbox-pids N     host tasks per gVisor sandbox (64-65536, default 512)\n"          \
	"  --sandbox-cpus X     CPU quota per gVisor sandbox in CPUs (0.05-1024, default 1;\n"   \
	"                       0: none)\n"
/* 1: taken; 0: not a limits option; -EINVAL: out of range (logged). */
int spawn_limits_option(struct spawn_limits *l, int opt, const char *arg);

struct spawner_config {
	const char *runsc;
	const char *runtime_dir; /* runsc --root and bundles live under it */
	const char *cgroup_parent;
	const struct isolation_config *isolation;
	const struct spawn_limits *limits;
	const struct microvm_config *vm; /* the microVM backend, when this host has it */
};

/* Fork the spawner; returns netnsd's end of the link. */
int spawner_start(const struct spawner_config *cfg, pid_t *pid);
