/* Unit test of the lifetime record (supervisor/lifetime-record.c): the supervisor reads
 * <state-dir>/lifetimes/<id> back after a restart and destroys or pauses the sandbox at the end
 * it names, so only the exact form it writes, with an end in bounds, is accepted. The positive
 * control is the writer's own output; the action names round-trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lifetime-record.h"

#define NOW 1800000000000000ull /* realtime µs */

static int
parse(const char *s)
{
	uint64_t end = 0;
	int action = -1;
	return lifetime_record_parse(s, strlen(s), NOW, &end, &action);
}

static void
test_round_trip(void **state)
{
	for (int a = LIFETIME_KILL; a <= LIFETIME_PAUSE; a++) {
		assert_int_equal(lifetime_action_from_string(lifetime_action_to_string(a)), a);
		char buf[LIFETIME_RECORD_MAX];
		int n = lifetime_record_format(buf, sizeof buf, NOW + 5000000, a);
		assert_true(n > 0 && n < (int)sizeof buf);
		uint64_t end = 0;
		int action = -1;
		assert_int_equal(lifetime_record_parse(buf, (size_t)n, NOW, &end, &action), 0);
		assert_int_equal(end, NOW + 5000000);
		assert_int_equal(action, a);
	}
	assert_int_equal(lifetime_action_from_string("boom"), -EINVAL);
	assert_int_equal(lifetime_action_from_string(""), -EINVAL);
	assert_int_equal(lifetime_action_from_string("Kill"), -EINVAL);
	/* the longest record fits the buffer and the reader's size bound */
	char buf[LIFETIME_RECORD_MAX];
	assert_true(lifetime_record_format(buf, sizeof buf, UINT64_MAX, LIFETIME_PAUSE) <
		    LIFETIME_RECORD_MAX);
}

static void
test_bounds(void **state)
{
	char buf[64];
	/* an end in the past fires at once: accepted */
	assert_int_equal(parse("1 kill\n"), 0);
	/* the bound: 30 days from now, plus the clock slack */
	snprintf(buf, sizeof buf, "%llu kill\n",
		 (unsigned long long)(NOW + LIFETIME_MAX_SECONDS * 1000000ull +
				      LIFETIME_CLOCK_SLACK_USEC));
	assert_int_equal(parse(buf), 0);
	snprintf(buf, sizeof buf, "%llu kill\n",
		 (unsigned long long)(NOW + LIFETIME_MAX_SECONDS * 1000000ull +
				      LIFETIME_CLOCK_SLACK_USEC + 1));
	assert_int_equal(parse(buf), -ERANGE);
	assert_int_equal(parse("0 kill\n"), -ERANGE);
	assert_int_equal(parse("18446744073709551615 kill\n"), -ERANGE);
	assert_int_equal(parse("99999999999999999999 kill\n"), -ERANGE);   /* overflows */
	assert_int_equal(parse("999999999999999999999 kill\n"), -EBADMSG); /* 21 digits */
}

static void
test_form(void **state)
{
	static const char *const bad[] = {
		"",
		"\n",
		"1800000000000000 kill",       /* no newline */
		"1800000000000000 kill\n\n",   /* two */
		"1800000000000000 kill\nx",    /* more after */
		"1800000000000000  kill\n",    /* two spaces */
		"1800000000000000\tkill\n",    /* a tab */
		" 1800000000000000 kill\n",    /* leading space */
		"+1800000000000000 kill\n",    /* a sign */
		"-1 kill\n",		       /* negative */
		"0x10 kill\n",		       /* hex */
		"1800000000000000 boom\n",     /* unknown action */
		"1800000000000000 \n",	       /* no action */
		"1800000000000000 kill \n",    /* trailing space */
		"1800000000000000 pauseeee\n", /* too long */
		"1800000000000000 KILL\n",     /* case */
		"1800000000000000 kill\r\n",   /* CR */
		"kill 1800000000000000\n",     /* swapped */
		"end=1800000000000000 kill\n", /* key=value */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int r = parse(bad[i]);
		if (r != -EBADMSG)
			fail_msg("record %zu (\"%s\") gave %d, not -EBADMSG", i, bad[i], r);
	}
	/* a NUL inside: len counts past it */
	uint64_t end;
	int action;
	assert_int_equal(lifetime_record_parse("1 kill\n\0x\n", 10, NOW, &end, &action), -EBADMSG);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_form),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
