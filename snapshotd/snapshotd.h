/* warren-snapshotd: the image store and memory-reclaim daemon. Shared state. */
#pragma once
#include "daemon.h"
#include "ipc-server.h"

struct snapshotd {
	struct daemon_common dc;
	struct ipc_server *server;
	const char *store_dir;
	int store_fd; /* opened before lock-down; every image path is relative to it */
	const char *reclaim_dir; /* swap file and the host's saved zswap settings */
	const char *cgroup_parent;
};

/* reclaim.c */
int reclaim_setup(struct snapshotd *s, const Warren__V1__SetupReclaimRequest *q,
		  Warren__V1__SetupReclaimResponse *out, char *err, size_t errlen);
int reclaim_start(struct snapshotd *s, struct ipc_call *call);

int store_open(const char *dir);
int store_list(struct snapshotd *s, Warren__V1__ListImagesResponse *out);
void store_list_free(Warren__V1__ListImagesResponse *out);

extern const struct ipc_handler snapshotd_handlers[];
extern const unsigned snapshotd_n_handlers;
extern const int snapshotd_caps[];
extern const unsigned snapshotd_n_caps;
extern const struct seccomp_policy snapshotd_seccomp;
