/* Unit tests of the namespace pool's sizing policy (netnsd/pool-policy.c): the target follows
 * claims plus spare between min and max, only idle excess is taken down, the defaults follow the
 * host's memory, admission refuses what would eat into the reserve, and bad options are named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "pool-policy.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static void
test_fixed(void **state)
{
	struct pool_policy pp;
	pool_policy_fixed(&pp, 6);
	/* --pool-size's meaning: all built whatever is claimed, nothing taken down, no memory
	 * admission (the size is the bound) */
	assert_int_equal(pool_policy_target(&pp, 0), 6);
	assert_int_equal(pool_policy_target(&pp, 6), 6);
	assert_int_equal(pool_policy_target(&pp, 100), 6);
	assert_int_equal(pool_policy_shrink(&pp, 6, 0, 6), 0);
	assert_int_equal(pool_policy_admit(&pp, 0), 0);
	char why[200];
	assert_int_equal(pool_policy_check(&pp, why, sizeof why), 0);
}

static void
test_target_grows_with_claims(void **state)
{
	struct pool_policy pp = {.min = 2, .max = 10, .spare = 3, .idle_ms = 1000};
	assert_int_equal(pool_policy_target(&pp, 0), 3);  /* spare above min */
	assert_int_equal(pool_policy_target(&pp, 4), 7);  /* claims + spare */
	assert_int_equal(pool_policy_target(&pp, 7), 10); /* capped at max */
	assert_int_equal(pool_policy_target(&pp, 50), 10);
	pp.spare = 0;
	assert_int_equal(pool_policy_target(&pp, 0), 2); /* min holds */
	assert_int_equal(pool_policy_target(&pp, 1), 2);
	assert_int_equal(pool_policy_target(&pp, 5), 5);
	/* no overflow at the top of unsigned */
	pp.spare = 4000;
	assert_int_equal(pool_policy_target(&pp, 0xfffffff0u), 10);
}

static void
test_shrink_only_idle_excess(void **state)
{
	struct pool_policy pp = {.min = 2, .max = 10, .spare = 1, .idle_ms = 1000};
	/* 8 built, 0 claimed: target 2, excess 6, all idle */
	assert_int_equal(pool_policy_shrink(&pp, 8, 0, 8), 6);
	/* only 3 idle long enough */
	assert_int_equal(pool_policy_shrink(&pp, 8, 0, 3), 3);
	/* 8 built, 5 claimed: target 6, excess 2 */
	assert_int_equal(pool_policy_shrink(&pp, 8, 5, 3), 2);
	/* at or below target: nothing goes, even when idle */
	assert_int_equal(pool_policy_shrink(&pp, 6, 5, 1), 0);
	assert_int_equal(pool_policy_shrink(&pp, 2, 0, 2), 0);
	assert_int_equal(pool_policy_shrink(&pp, 1, 0, 1), 0);
}

static void
test_defaults_follow_memory(void **state)
{
	struct pool_policy pp;
	/* 24 GiB: reserve 1.5 GiB, (24 - 1.5) GiB / 16 MiB = 1440 */
	pool_policy_defaults(&pp, 24 * GiB, 4000);
	assert_int_equal(pp.reserve_bytes, 24 * GiB / 16);
	assert_int_equal(pp.max, 1440);
	assert_true(pp.min <= pp.max && pp.spare <= pp.max);
	char why[200];
	assert_int_equal(pool_policy_check(&pp, why, sizeof why), 0);
	/* the cap (the /16 subnet and the slot file) bounds a big host */
	pool_policy_defaults(&pp, 512 * GiB, 4000);
	assert_int_equal(pp.max, 4000);
	/* a small host: the 512 MiB floor of the reserve, and never fewer than 8 slots */
	pool_policy_defaults(&pp, 1 * GiB, 4000);
	assert_int_equal(pp.reserve_bytes, 512 * MiB);
	assert_int_equal(pp.max, 32);
	pool_policy_defaults(&pp, 256 * MiB, 4000);
	assert_int_equal(pp.max, 8);
	assert_int_equal(pool_policy_check(&pp, why, sizeof why), 0);
}

static void
test_admit(void **state)
{
	struct pool_policy pp;
	pool_policy_defaults(&pp, 24 * GiB, 4000);
	assert_int_equal(pool_policy_admit(&pp, 20 * GiB), 0);
	/* exactly reserve + one sandbox is enough; a byte less is not */
	assert_int_equal(pool_policy_admit(&pp, pp.reserve_bytes + pp.slot_bytes), 0);
	assert_int_equal(pool_policy_admit(&pp, pp.reserve_bytes + pp.slot_bytes - 1), -ENOMEM);
	assert_int_equal(pool_policy_admit(&pp, 0), -ENOMEM);
}

/* A fork's reservation (pool_reserve): bounded by the slots the pool can still hold and by the
 * host's memory; a hostile count of 2^31, or the same count sent again and again, never takes it
 * past that bound. */
static void
test_reserve_bounded(void **state)
{
	struct pool_policy pp = {.min = 1, .max = 16, .spare = 1, .idle_ms = 1000};
	/* a fixed-size test pool (no memory admission): the count as asked, within max */
	assert_int_equal(pool_policy_reserve(&pp, 0, 0, 12, 0), 12);
	assert_int_equal(pool_policy_reserve(&pp, 4, 0, 12, 0), 12);
	assert_int_equal(pool_policy_reserve(&pp, 5, 0, 12, 0), 11); /* max - claimed */
	assert_int_equal(pool_policy_reserve(&pp, 16, 0, 12, 0), 0);
	assert_int_equal(pool_policy_reserve(&pp, 20, 0, 12, 0), 0); /* adopted beyond max */
	/* hostile counts: bounded, and the build target stays at max */
	assert_int_equal(pool_policy_reserve(&pp, 0, 0, 0x80000000u, 0), 16);
	assert_int_equal(pool_policy_reserve(&pp, 0, 0, 0xffffffffu, 0), 16);
	assert_int_equal(pool_policy_reserve(&pp, 0, 0xffffffffu, 0xffffffffu, 0), 16);
	assert_int_equal(
		pool_policy_target(&pp, 0 + pool_policy_reserve(&pp, 0, 0, 0xffffffffu, 0)), 16);
	/* repeated calls add up, never past the bound */
	unsigned r = 0;
	for (int i = 0; i < 100; i++)
		r = pool_policy_reserve(&pp, 3, r, 5, 0);
	assert_int_equal(r, 13);
	r = pool_policy_reserve(&pp, 0, 0, 5, 0);
	assert_int_equal(pool_policy_reserve(&pp, 0, r, 5, 0), 10);
	/* a growing pool: no more than the host's memory admits */
	pool_policy_defaults(&pp, 24 * GiB, 4000);
	uint64_t room10 = pp.reserve_bytes + 10 * pp.slot_bytes;
	assert_int_equal(pool_policy_reserve(&pp, 0, 0, 100, room10), 10);
	assert_int_equal(pool_policy_reserve(&pp, 0, 0, 100, room10 - 1), 9);
	assert_int_equal(pool_policy_reserve(&pp, 0, 0, 100, pp.reserve_bytes), 0);
	assert_int_equal(pool_policy_reserve(&pp, 0, 0, 100, 0), 0);
	assert_int_equal(pool_policy_reserve(&pp, 0, 0, 100, 20 * GiB), 100);
	assert_int_equal(pool_policy_reserve(&pp, 0, 0, 0xffffffffu, UINT64_MAX), pp.max);
}

static void
test_check_names_the_bad_option(void **state)
{
	char why[200];
	struct pool_policy pp = {.min = 5, .max = 4, .spare = 1, .idle_ms = 1000};
	assert_int_equal(pool_policy_check(&pp, why, sizeof why), -EINVAL);
	assert_non_null(strstr(why, "--pool-min"));
	pp = (struct pool_policy){.min = 1, .max = 4, .spare = 5, .idle_ms = 1000};
	assert_int_equal(pool_policy_check(&pp, why, sizeof why), -EINVAL);
	assert_non_null(strstr(why, "--pool-spare"));
	pp = (struct pool_policy){.min = 1, .max = 4, .spare = 1, .idle_ms = 10};
	assert_int_equal(pool_policy_check(&pp, why, sizeof why), -EINVAL);
	assert_non_null(strstr(why, "--pool-idle-ms"));
	pp = (struct pool_policy){.min = 0, .max = 0};
	assert_int_equal(pool_policy_check(&pp, why, sizeof why), -EINVAL);
	/* positive control: the same shape with sane values passes */
	pp = (struct pool_policy){.min = 1, .max = 4, .spare = 1, .idle_ms = 1000};
	assert_int_equal(pool_policy_check(&pp, why, sizeof why), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_target_grows_with_claims),
		cmocka_unit_test(test_shrink_only_idle_excess),
		cmocka_unit_test(test_defaults_follow_memory),
		cmocka_unit_test(test_admit),
		cmocka_unit_test(test_check_names_the_bad_option),
		cmocka_unit_test(test_reserve_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
