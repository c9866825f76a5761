/* The spawner's proof that an image directory fd it is sent belongs to snapshotd's store (see
 * image-proof.c), and the sealing of the files it wrote there. The spawner is the side that
 * writes into image directories as root, so it is the side that checks them: netnsd, under its
 * own uid with no openat2 and no right to read the store, only forwards the supervisor's fd.
 * spawn.c calls these before acting; tests/fuzz/fuzz-netnsd-request.c links them. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Where snapshotd keeps images: its --store and its --image-cache (decompressed images);
 * netnsd's --image-store and --image-cache, given to the spawner in its config. */
struct image_proof_roots {
	const char *store;
	const char *cache;
};

enum image_proof_use {
	IMAGE_PROOF_CHECKPOINT, /* an empty temporary directory (.tmp.<tag>.<8 hex>) of the store */
	IMAGE_PROOF_RESTORE,	/* a sealed <tag> of the store, or <tag>.<n> of the cache */
};

/* A proven image directory: the spawner's own fd of it, opened beneath the store or the cache,
 * and the owner of the store (snapshotd's uid and gid), who gets the files sealed in it. */
struct image_proof {
	int fd;
	uid_t owner;
	gid_t group;
};

/* Prove that fd (from the supervisor, through netnsd) is an image directory of snapshotd's:
 * the name the fd has now is opened again beneath the store (or the cache) with openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV and device
 * and inode are compared. A checkpoint's directory must be an empty temporary one of the store;
 * a restore's must hold its members as regular files with one link (state and ram for a
 * microVM, checkpoint.img for gVisor). On success out->fd is the spawner's own fd of the
 * directory (the caller closes it). 0 or -errno with why filled. */
int image_proof_open(const struct image_proof_roots *roots, int fd, enum image_proof_use use,
		     bool vm, struct image_proof *out, char *why, size_t size);

/* After runsc or the microVM snapshot wrote name into a proven checkpoint directory: the file
 * (opened O_NOFOLLOW, never through a name that could be swapped) is a regular file of the
 * spawner's own with one link; it is made 0600 and handed to the store's owner (fchown on the
 * same fd), so snapshotd seals it (fsync, hash, rename) without CAP_DAC_OVERRIDE. 0 or
 * -errno, logged. */
int image_proof_seal(const struct image_proof *img, const char *name);
