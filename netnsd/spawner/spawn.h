/* netnsd's spawner: a small child forked before netnsd locks itself down. It keeps the
 * capabilities runsc needs and no seccomp filter (runsc inherits both), accepts only the typed
 * orders netnsd has already validated over a private socketpair, proves itself what it writes
 * into or restores from as root (image directories: image-proof.h), and is the subreaper of
 * every runsc process so a sandbox that exits is reported. */
#pragma once
#include <sys/types.h>

#include "image-proof.h"
#include "isolation.h"
#include "microvm.h"
#include "oci-spec.h"

struct spawner_config {
	const char *runsc;
	const char *runtime_dir; /* runsc --root and bundles live under it */
	const char *cgroup_parent;
	const char *templates_dir; /* canonical; every gVisor rootfs is opened beneath it */
	const struct isolation_config *isolation;
	const struct oci_limits *limits;
	const struct microvm_config *vm; /* the microVM backend, when this host has it */
	/* snapshotd's store and cache: every image directory the spawner writes into or restores
	 * from is proven to be in one (image-proof.h) */
	struct image_proof_roots images;
	/* the users of the cgroup knobs the unprivileged helpers write (cgroup_hand_knobs):
	 * netnsd's freezer, snapshotd's reclaim; (uid_t)-1 leaves a knob root's */
	uid_t freezer_uid, reclaim_uid;
	/* restart without loss: the runtimes netnsd checked before the fork (adopt.h), and the
	 * lock on the runtime directory the spawner holds until its last command is done */
	const struct adoption *adopt;
	int lock_fd;
	unsigned pool_size;
	size_t log_ring_size; /* each sandbox's console log ring (log-ring.h); 0: default */
	/* gVisor sandboxes start warren-agent first (the envd API); off by default until templates
	 * with a Debian tree start with it (docs/E2B.md) */
	bool gvisor_agent;
};

/* Fork the spawner; returns netnsd's end of the link. */
int spawner_start(const struct spawner_config *cfg, pid_t *pid);
