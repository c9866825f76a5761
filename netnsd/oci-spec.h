/* The OCI runtime spec (config.json) netnsd writes for runsc. */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct oci_spec {
	const char *id;
	const char *rootfs;
	char *const *argv;
	size_t argc;
	char *const *env;
	size_t envc;
	uint64_t memory_limit; /* also memory+swap: swap never lets a guest past its limit */
	uint32_t pids_limit;   /* host tasks of the sandbox (gVisor's sentry, gofer, stubs) */
	uint32_t cpu_quota_us, cpu_period_us; /* CFS bandwidth; 0: no quota */
	const char *netns_path;
	const char *cgroups_path;
};
/* Write bundle_dir/config.json. */
int oci_spec_write(const char *bundle_dir, const struct oci_spec *s);
