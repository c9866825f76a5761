/* The namespace pool's sizing policy (see pool-policy.h); runs in netnsd, called by pool.c and
 * the claim handler. */
#include "pool-policy.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>

/* A live web sandbox costs ~21 MiB PSS before it is frozen and ~9 MiB after reclaim: 16 MiB
 * is the admission unit, so a host takes one create per 16 MiB it can still give. */
#define SLOT_BYTES_DEFAULT (16ull << 20)

void
pool_policy_fixed(struct pool_policy *pp, unsigned n)
{
	*pp = (struct pool_policy){.min = n, .max = n, .spare = 0, .idle_ms = 0};
}

void
pool_policy_defaults(struct pool_policy *pp, uint64_t mem_total, unsigned cap)
{
	/* the host keeps 1/16 of RAM, at least 512 MiB, for itself and the daemons */
	uint64_t reserve = mem_total / 16;
	if (reserve < (512ull << 20))
		reserve = 512ull << 20;
	uint64_t usable = mem_total > reserve ? mem_total - reserve : 0;
	uint64_t max = usable / SLOT_BYTES_DEFAULT;
	if (max > cap)
		max = cap;
	if (max < 8)
		max = 8;
	*pp = (struct pool_policy){.min = 8,
				   .max = (unsigned)max,
				   .spare = 8,
				   .idle_ms = 60000,
				   .slot_bytes = SLOT_BYTES_DEFAULT,
				   .reserve_bytes = reserve};
}

int
pool_policy_check(const struct pool_policy *pp, char *why, size_t why_len)
{
	if (pp->max == 0)
		return snprintf(why, why_len, "the pool's maximum is 0"), -EINVAL;
	if (pp->min > pp->max)
		return snprintf(why, why_len, "--pool-min %u is above --pool-max %u", pp->min,
				pp->max),
		       -EINVAL;
	if (pp->spare > pp->max)
		return snprintf(why, why_len, "--pool-spare %u is above --pool-max %u", pp->spare,
				pp->max),
		       -EINVAL;
	if (pp->min < pp->max && pp->idle_ms < 100)
		return snprintf(why, why_len, "--pool-idle-ms %u is below 100", pp->idle_ms),
		       -EINVAL;
	return 0;
}

unsigned
pool_policy_target(const struct pool_policy *pp, unsigned claimed)
{
	uint64_t t = (uint64_t)claimed + pp->spare;
	if (t < pp->min)
		t = pp->min;
	if (t > pp->max)
		t = pp->max;
	return (unsigned)t;
}

unsigned
pool_policy_reserve(const struct pool_policy *pp, unsigned claimed, unsigned reserved,
		    uint32_t count, uint64_t mem_available)
{
	uint64_t want = (uint64_t)reserved + count;
	uint64_t room = pp->max > claimed ? pp->max - claimed : 0;
	if (pp->slot_bytes) {
		/* a slot is cheap, its sandbox is not: build no more than the claims admit */
		uint64_t fit = mem_available > pp->reserve_bytes
				       ? (mem_available - pp->reserve_bytes) / pp->slot_bytes
				       : 0;
		if (fit < room)
			room = fit;
	}
	return (unsigned)(want < room ? want : room);
}

unsigned
pool_policy_shrink(const struct pool_policy *pp, unsigned built, unsigned claimed,
		   unsigned idle_free)
{
	unsigned target = pool_policy_target(pp, claimed);
	if (built <= target)
		return 0;
	unsigned excess = built - target;
	return excess < idle_free ? excess : idle_free;
}

int
pool_policy_admit(const struct pool_policy *pp, uint64_t mem_available)
{
	if (pp->slot_bytes == 0)
		return 0;
	return mem_available >= pp->reserve_bytes + pp->slot_bytes ? 0 : -ENOMEM;
}
