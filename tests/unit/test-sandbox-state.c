/* Unit test of the supervisor's sandbox state table (supervisor/sandbox-state.c): every
 * (state, event) pair is walked and compared with the list below, written from what sandbox.c and
 * readopt.c did before the table existed, less the late transitions issue 14 removed; a pair not
 * in the list must be refused. State and
 * event names round-trip; numbers outside the enums are refused, not read past the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sandbox-state.h"

#define C SANDBOX_CREATING
#define ST SANDBOX_STARTING
#define R SANDBOX_RUNNING
#define FZ SANDBOX_FROZEN
#define X SANDBOX_EXITED
#define F SANDBOX_FAILED
#define D SANDBOX_DESTROYING
#define SN SANDBOX_SNAPSHOTTING

static const struct legal {
	enum sandbox_state from;
	enum sandbox_event ev;
	enum sandbox_state to;
} legal[] = {
	/* the create flow */
	{C, SANDBOX_EVENT_CLAIMED, ST},
	{ST, SANDBOX_EVENT_READY, R},
	/* an end only where a runtime runs or is being started; the first end stands (no end
	 * from CREATING, EXITED or FAILED) */
	{ST, SANDBOX_EVENT_FAILED, F},
	{R, SANDBOX_EVENT_FAILED, F},
	{FZ, SANDBOX_EVENT_FAILED, F},
	{SN, SANDBOX_EVENT_FAILED, F},
	{ST, SANDBOX_EVENT_EXITED, X},
	{R, SANDBOX_EVENT_EXITED, X},
	{FZ, SANDBOX_EVENT_EXITED, X},
	{SN, SANDBOX_EVENT_EXITED, X},
	/* Destroy from everything but DESTROYING */
	{C, SANDBOX_EVENT_DESTROY, D},
	{ST, SANDBOX_EVENT_DESTROY, D},
	{R, SANDBOX_EVENT_DESTROY, D},
	{FZ, SANDBOX_EVENT_DESTROY, D},
	{X, SANDBOX_EVENT_DESTROY, D},
	{F, SANDBOX_EVENT_DESTROY, D},
	{SN, SANDBOX_EVENT_DESTROY, D},
	/* freeze_done applies to RUNNING and FROZEN only */
	{R, SANDBOX_EVENT_FROZEN, FZ},
	{FZ, SANDBOX_EVENT_FROZEN, FZ},
	{R, SANDBOX_EVENT_THAWED, R},
	{FZ, SANDBOX_EVENT_THAWED, R},
	/* snapshots */
	{R, SANDBOX_EVENT_SNAPSHOT_BEGIN, SN},
	{SN, SANDBOX_EVENT_SNAPSHOT_ABORTED, R},
	/* a restore only of the sandbox being snapshotted */
	{SN, SANDBOX_EVENT_RESTORE, ST},
	/* re-adoption: every recorded state but CREATING and DESTROYING (readopt.c skips them);
	 * a running sandbox netnsd runs thawed stays as it is */
	{ST, SANDBOX_EVENT_READOPT_FROZEN, FZ},
	{R, SANDBOX_EVENT_READOPT_FROZEN, FZ},
	{FZ, SANDBOX_EVENT_READOPT_FROZEN, FZ},
	{X, SANDBOX_EVENT_READOPT_FROZEN, FZ},
	{F, SANDBOX_EVENT_READOPT_FROZEN, FZ},
	{SN, SANDBOX_EVENT_READOPT_FROZEN, FZ},
	{ST, SANDBOX_EVENT_READOPT_ALIVE, ST},
	{FZ, SANDBOX_EVENT_READOPT_ALIVE, ST},
	{X, SANDBOX_EVENT_READOPT_ALIVE, ST},
	{F, SANDBOX_EVENT_READOPT_ALIVE, ST},
	{SN, SANDBOX_EVENT_READOPT_ALIVE, ST},
};

static int
expected(enum sandbox_state s, enum sandbox_event e)
{
	for (size_t i = 0; i < sizeof legal / sizeof legal[0]; i++)
		if (legal[i].from == s && legal[i].ev == e)
			return (int)legal[i].to;
	return -EINVAL;
}

static void
test_every_pair(void **state)
{
	unsigned n_legal = 0, n_refused = 0;
	for (int s = 0; s < _SANDBOX_STATE_MAX; s++)
		for (int e = 0; e < _SANDBOX_EVENT_MAX; e++) {
			int want = expected(s, e), got = sandbox_state_next(s, e);
			if (got != want)
				fail_msg("%s on %s: got %d, want %d", sandbox_state_to_string(s),
					 sandbox_event_to_string(e), got, want);
			if (got >= 0)
				n_legal++;
			else
				n_refused++;
		}
	assert_int_equal(n_legal, sizeof legal / sizeof legal[0]);
	assert_int_equal(n_legal + n_refused, _SANDBOX_STATE_MAX * _SANDBOX_EVENT_MAX);
}

/* No pair lists twice (the count above would hide a duplicate that shadows a missing one). */
static void
test_list_unique(void **state)
{
	size_t n = sizeof legal / sizeof legal[0];
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			assert_false(legal[i].from == legal[j].from && legal[i].ev == legal[j].ev);
}

/* Nothing leaves DESTROYING; the only way into STARTING from CREATING is the claim. */
static void
test_invariants(void **state)
{
	for (int e = 0; e < _SANDBOX_EVENT_MAX; e++)
		assert_int_equal(sandbox_state_next(D, e), -EINVAL);
	for (int e = 0; e < _SANDBOX_EVENT_MAX; e++)
		if (sandbox_state_next(C, e) == ST)
			assert_int_equal(e, SANDBOX_EVENT_CLAIMED);
	for (int s = 0; s < _SANDBOX_STATE_MAX; s++)
		if (sandbox_state_next(s, SANDBOX_EVENT_READY) >= 0)
			assert_int_equal(s, ST);
}

static void
test_out_of_range(void **state)
{
	assert_int_equal(sandbox_state_next(_SANDBOX_STATE_MAX, SANDBOX_EVENT_DESTROY), -EINVAL);
	assert_int_equal(sandbox_state_next(R, _SANDBOX_EVENT_MAX), -EINVAL);
	assert_int_equal(sandbox_state_next((enum sandbox_state)(-1), 0), -EINVAL);
	assert_string_equal(sandbox_state_to_string(_SANDBOX_STATE_MAX), "unknown");
	assert_string_equal(sandbox_event_to_string(_SANDBOX_EVENT_MAX), "unknown");
}

static void
test_names_round_trip(void **state)
{
	for (int s = 0; s < _SANDBOX_STATE_MAX; s++) {
		const char *n = sandbox_state_to_string(s);
		assert_string_not_equal(n, "unknown");
		assert_int_equal(sandbox_state_from_string(n), s);
	}
	for (int e = 0; e < _SANDBOX_EVENT_MAX; e++) {
		const char *n = sandbox_event_to_string(e);
		assert_non_null(n);
		assert_string_not_equal(n, "unknown");
		assert_int_equal(sandbox_event_from_string(n), e);
	}
	assert_int_equal(sandbox_state_from_string("unknown"), -EINVAL);
	assert_int_equal(sandbox_event_from_string(""), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_pair),	 cmocka_unit_test(test_list_unique),
		cmocka_unit_test(test_invariants),	 cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_names_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
