/* What netnsd checks in a request from the supervisor before anything privileged happens (see
 * netnsd-validate.c). Pure field checks, and the proof that an image directory fd belongs to
 * snapshotd's store; netnsd-dispatch.c calls these first, tests/fuzz links them. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc.h"

/* Where snapshotd keeps images: its --store and its --image-cache (decompressed images). */
struct netnsd_images {
	const char *store;
	const char *cache;
};

enum netnsd_image_use {
	NETNSD_IMAGE_CHECKPOINT, /* an empty temporary directory (.tmp.<tag>.<n>) of the store */
	NETNSD_IMAGE_RESTORE,	 /* a sealed tag <tag> of the store, or <tag>.<n> of the cache */
};

/* argv/env: at most max strings, each at most NETNSD_MAX_ARG_LEN bytes; env entries are
 * NAME=value. (They reach runsc in a JSON spec and a guest hex-encoded, never a shell.) */
#define NETNSD_MAX_ARGS 64
#define NETNSD_MAX_ARG_LEN 4096
bool netnsd_strings_valid(char *const *v, size_t n, size_t max, bool env);
/* A spawn or restore's fields (not the rootfs, which is looked up, nor the slot). 0 or -errno
 * with why filled. */
int netnsd_validate_spawn(const Warren__V1__SpawnSandboxRequest *q, uint64_t mem_total, char *why,
			  size_t size);
int netnsd_validate_exec(const Warren__V1__ExecRequest *q, char *why, size_t size);

/* Prove that fd (from the supervisor) is an image directory of snapshotd's: netnsd opens the
 * name the fd has beneath the store (or the cache) itself, with openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS, and compares device and inode. A checkpoint's directory must be an
 * empty temporary one of the store; a restore's must hold its members as regular files
 * (state and ram for a microVM, checkpoint.img for gVisor). On success *out is netnsd's own
 * fd of the directory, which is what goes to the spawner. 0 or -errno with why filled. */
int netnsd_image_open(const struct netnsd_images *im, int fd, enum netnsd_image_use use, bool vm,
		      int *out, char *why, size_t size);
/* The spawner, after runsc wrote a checkpoint: the file runsc created in the (proven) image
 * directory is a regular file of the spawner's own with one link, and is made 0600. */
int netnsd_image_member_seal(int dirfd, const char *name);
