/* warren-snapshotd: the image store and memory-reclaim daemon. Shared state. */
#pragma once
#include "daemon.h"
#include "ipc-server.h"

struct snapshotd {
	struct daemon_common dc;
	struct ipc_server *server;
	const char *store_dir;
	int store_fd;		 /* opened before lock-down; every image path is relative to it */
	const char *reclaim_dir; /* swap file and the host's saved zswap settings */
	const char *cgroup_parent;
	unsigned compress_below; /* MB/s; 0: never compress */
	int zstd_level;
	/* A frozen sandbox holding less is left as it is. Not higher: an idle `web` sandbox holds
	 * ~12 MiB (10 of them the sentry's and gofer's Go heaps), which reclaim takes down to
	 * ~6 MiB in all, for a first request answered in ~30 ms instead of ~20
	 * (bench/bench-density.sh, 40 sandboxes, --reclaim-min 16 vs 0). */
	uint64_t reclaim_min;
	const char *cache_dir; /* decompressed images, on tmpfs */
	/* zswap's enabled, compressor, max_pool_percent (root's 0644 in /sys/module), opened for
	 * writing before the drop: reclaim sets them through these, with no CAP_DAC_OVERRIDE;
	 * -1 where they could not be opened (no zswap, or not started as root) */
	int zswap_fd[3];
	uint64_t store_reserve; /* bytes the store keeps free beyond a snapshot's estimate */
};

/* store-space.c: room for a snapshot of sandbox id, from its cgroup's memory; -ENOSPC with a
 * message a person can act on when there is not. */
int store_space_check(struct snapshotd *s, const char *id, char *why, size_t size);

/* image.c */
int image_prepare(struct snapshotd *s, const char *tag, char *temp, size_t size, int *dirfd);
int image_abort(struct snapshotd *s, const char *temp);
int image_commit(struct snapshotd *s, const Warren__V1__CommitImageRequest *q, uint64_t *total);
int image_read(struct snapshotd *s, const char *tag, bool verify, Warren__V1__ImageInfo *info,
	       int *dirfd_out);
void image_info_free(Warren__V1__ImageInfo *info);
int image_remove(struct snapshotd *s, const char *tag);
void image_clean_temporaries(struct snapshotd *s);
/* .tmp.<tag>.<8 hex>: a directory image_prepare made */
bool image_temp_name_valid(const char *name);

/* reclaim.c: open zswap's parameters while still root (before the lock-down) */
void reclaim_open_zswap(struct snapshotd *s);

/* compress.c */
int disk_speed(struct snapshotd *s, bool remeasure, unsigned *mbps);
/* a CommitImage's compression is one the policy knows */
bool compression_valid(Warren__V1__Compression c);
/* AUTO and a disk slower than --compress-below: zstd; NONE or a fast disk: plain files */
bool compress_wanted(struct snapshotd *s, Warren__V1__Compression c);
int compress_image_files(struct snapshotd *s, int dirfd);
int image_decompressed(struct snapshotd *s, const char *tag, int dirfd, int *out_fd);
void image_cache_remove(struct snapshotd *s, const char *tag);

/* reclaim.c */
int reclaim_setup(struct snapshotd *s, const Warren__V1__SetupReclaimRequest *q,
		  Warren__V1__SetupReclaimResponse *out, char *err, size_t errlen);
int reclaim_start(struct snapshotd *s, struct ipc_call *call);

int store_open(const char *dir);
int store_list(struct snapshotd *s, Warren__V1__ListImagesResponse *out);
void store_list_free(Warren__V1__ListImagesResponse *out);

/* snapshotd-dispatch.c: NULL when every field of req may be acted on, else what is wrong */
const char *snapshotd_request_invalid(const IpcRequest *req);
extern const struct ipc_handler snapshotd_handlers[];
extern const unsigned snapshotd_n_handlers;
extern const char snapshotd_user[];
extern const int snapshotd_caps[];
extern const unsigned snapshotd_n_caps;
extern const struct seccomp_policy snapshotd_seccomp;
