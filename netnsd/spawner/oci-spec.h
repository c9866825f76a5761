/* The OCI runtime spec (config.json) netnsd writes for runsc. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "agent-protocol.h" /* AGENT_PROTO_GVISOR_PATH: where the container sees the agent */

struct oci_spec {
	const char *id;
	const char *rootfs;
	char *const *argv;
	size_t argc;
	char *const *env;
	size_t envc;
	const char *cwd;       /* NULL or "": / */
	uint32_t uid, gid;     /* the program's ids inside the sandbox */
	uint64_t memory_limit; /* also memory+swap: swap never lets a guest past its limit */
	uint32_t pids_limit;   /* host tasks of the sandbox (gVisor's sentry, gofer, stubs) */
	uint32_t cpu_quota_us, cpu_period_us; /* CFS bandwidth; 0: no quota */
	const char *netns_path;
	const char *cgroups_path;
	/* the sandbox agent's binary, bind-mounted read-only at AGENT_PROTO_GVISOR_PATH; NULL: none
	 */
	const char *agent_source;
};
/* Bounds every gVisor sandbox gets (config.json's linux.resources; memory comes per template). */
struct oci_limits {
	uint32_t pids_max;   /* host tasks: runsc's sentry and gofer threads and ptrace stubs */
	uint32_t cpu_millis; /* CPU time per second, in thousandths of a CPU; 0: no quota */
};
/* the ranges of --sandbox-pids/--sandbox-cpus and of a template's own pids and cpu_millis */
#define OCI_PIDS_MIN 64
#define OCI_PIDS_MAX 65536
#define OCI_CPU_MILLIS_MIN 50
#define OCI_CPU_MILLIS_MAX 1024000
/* A sandbox's bounds: the template's own where it has them, never above the host's caps (a cap
 * of 0 CPU: none, so the template's applies). */
struct oci_limits oci_limits_effective(const struct oci_limits *cap, uint32_t pids,
				       uint32_t cpu_millis);
/* An idle web sandbox runs ~40 host tasks and the app ~60; one CPU each keeps one busy tenant
 * from taking every core. */
#define OCI_LIMITS_DEFAULT                                                                         \
	{                                                                                          \
		.pids_max = 512, .cpu_millis = 1000                                                \
	}
#define OCI_LIMITS_OPTIONS                                                                         \
	{"sandbox-pids", required_argument, NULL, 0x1101},                                         \
	{                                                                                          \
		"sandbox-cpus", required_argument, NULL, 0x1102                                    \
	}
#define OCI_LIMITS_HELP                                                                            \
	"  --sandbox-pids N     host tasks per gVisor sandbox (64-65536, default 512)\n"           \
	"  --sandbox-cpus X     CPU quota per gVisor sandbox in CPUs (0.05-1024, default 1;\n"     \
	"                       0: none)\n"
/* 1: taken; 0: not a limits option; -EINVAL: out of range (logged). */
int oci_spec_limits_option(struct oci_limits *l, int opt, const char *arg);

/* Write bundle_dir/config.json. */
int oci_spec_write(const char *bundle_dir, const struct oci_spec *s);
/* Point an existing bundle's network namespace at netns_path: a sandbox adopted from an earlier
 * spawner names that spawner's fd, and its restore in place must name this one's. */
int oci_spec_set_netns(const char *bundle_dir, const char *netns_path);
