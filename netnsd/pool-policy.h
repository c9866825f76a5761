/* The namespace pool's sizing policy: how many slots to keep built, which free ones to take down
 * and whether the host's memory can hold one more sandbox. Pure arithmetic on numbers the pool
 * and /proc/meminfo give, so it is unit-tested without namespaces (tests/unit/test-pool-policy.c).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pool_policy {
	unsigned min;		/* slots always kept built */
	unsigned max;		/* slots at most (the slot table's size) */
	unsigned spare;		/* free slots kept built ahead of claims */
	unsigned idle_ms;	/* a free slot beyond min + spare older than this is taken down */
	uint64_t slot_bytes;	/* memory a live sandbox is counted with (the admission unit) */
	uint64_t reserve_bytes; /* memory kept for the host: no create eats into it */
};

/* A fixed pool of n slots: --pool-size's meaning, as tests and warren-launch use it. */
void pool_policy_fixed(struct pool_policy *pp, unsigned n);
/* Defaults from the host's memory: max = (RAM - reserve) / slot_bytes, bounded by cap. */
void pool_policy_defaults(struct pool_policy *pp, uint64_t mem_total, unsigned cap);
/* 0 when the values hold together, -EINVAL with why filled otherwise. */
int pool_policy_check(const struct pool_policy *pp, char *why, size_t why_len);
/* Slots that should be built now: claimed + spare, at least min, at most max. */
unsigned pool_policy_target(const struct pool_policy *pp, unsigned claimed);
/* A fork's "count creates are coming" added to the reservation already held (reserved): the
 * creates the pool builds ahead for, at most the slots it can still hold (max - claimed) and, on a
 * growing pool, the sandboxes the host's memory still admits (slot_bytes each above the reserve).
 * The supervisor may be compromised: any count, any number of calls, never beyond that bound. */
unsigned pool_policy_reserve(const struct pool_policy *pp, unsigned claimed, unsigned reserved,
			     uint32_t count, uint64_t mem_available);
/* How many free slots may be taken down now: the excess over the target among those idle for
 * idle_ms (idle_free counts them). */
unsigned pool_policy_shrink(const struct pool_policy *pp, unsigned built, unsigned claimed,
			    unsigned idle_free);
/* Whether a claim may proceed: -ENOMEM when one more sandbox would take MemAvailable below the
 * reserve. Swap is not counted: a create the host can hold only by swapping is refused. A
 * fixed pool (slot_bytes 0) admits every claim: its size is the bound. */
int pool_policy_admit(const struct pool_policy *pp, uint64_t mem_available);
