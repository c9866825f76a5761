/* What netnsd checks in a request from the supervisor before anything privileged happens (see
 * netnsd-validate.c). Pure field checks (the proof that an image directory belongs to snapshotd's
 * store is the spawner's: spawner/image-proof.h); netnsd-dispatch.c calls these first,
 * tests/fuzz links them. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc.h"

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
/* A fork's announcement of count creates: count 0 is refused; a huge count is not an error (the
 * pool bounds the reservation, pool_policy_reserve). */
int netnsd_validate_pool_reserve(const Warren__V1__PoolReserveRequest *q, char *why, size_t size);

/* A SetEgress: the policy parsed into p (common/egress-policy.h's bounds: entries, prefix,
 * port, characters). The slot is the dispatch's to check (claimed). */
struct egress_policy;
int netnsd_validate_set_egress(const Warren__V1__SetEgressRequest *q, struct egress_policy *p,
			       char *why, size_t size);

/* An image directory fd for a checkpoint or a restore: a directory (fstat). Nothing more can be
 * known here; the spawner proves it is snapshotd's before using it (spawner/image-proof.h).
 * 0 or -errno with why filled. */
int netnsd_validate_image_fd(int fd, char *why, size_t size);
