/* Unit tests of the agent's reading of the template program's ids (agent/agent-user.c): what
 * passes is exactly "UID:GID" in decimal, each within 0..65534; a sign, a blank, an overflow or
 * a trailing byte is refused rather than read as some other id (root among them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>

#include "agent-user.h"

static void
test_valid(void **state)
{
	(void)state;
	uid_t u = 7;
	gid_t g = 7;
	assert_int_equal(agent_user_parse("1000:1001", true, &u, &g), 0);
	assert_int_equal(u, 1000);
	assert_int_equal(g, 1001);
	assert_int_equal(agent_user_parse("0:0", true, &u, &g), 0);
	assert_int_equal(u, 0);
	assert_int_equal(g, 0);
	assert_int_equal(agent_user_parse("65534:65534", true, &u, &g), 0);
	assert_int_equal(u, 65534);
	/* leading zeros are still decimal digits, within ten of them */
	assert_int_equal(agent_user_parse("0000001000:0000000010", true, &u, &g), 0);
	assert_int_equal(u, 1000);
	assert_int_equal(g, 10);
	/* on the kernel command line: up to a blank or the final newline */
	assert_int_equal(agent_user_parse("1000:1000 warren.cwd=2f", false, &u, &g), 0);
	assert_int_equal(agent_user_parse("5:6\n", false, &u, &g), 0);
	assert_int_equal(u, 5);
	assert_int_equal(g, 6);
	assert_int_equal(agent_user_parse("5:6", false, &u, &g), 0);
}

static void
test_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"",
		":",
		"1000",
		"1000:",
		":1000",
		"-1:0",
		"0:-1",
		"+5:5",
		"5:+5",
		" 5:5",
		"5: 5",
		"5 :5",
		"65535:0", /* above the cap (the supervisor's too) */
		"0:65535",
		"4294967295:0", /* (uid_t)-1 */
		"4294967296:0", /* wrapped to 0 by sscanf's %u: root */
		"0:4294967296",
		"00000000001:0", /* eleven digits */
		"99999999999999999999:0",
		"1000:1000:1000",
		"1000:1000x",
		"0x10:0",
		"1e3:0",
		"1000:1000\t",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		uid_t u = 7;
		gid_t g = 7;
		for (int exact = 0; exact < 2; exact++) {
			if (agent_user_parse(bad[i], exact, &u, &g) != -EINVAL)
				fail_msg("'%s' (exact %d) was not refused", bad[i], exact);
			/* untouched: the caller must not run as half a refused id */
			assert_int_equal(u, 7);
			assert_int_equal(g, 7);
		}
	}
	/* a blank or newline ends it on the command line only, not in --user */
	uid_t u;
	gid_t g;
	assert_int_equal(agent_user_parse("5:6 ", true, &u, &g), -EINVAL);
	assert_int_equal(agent_user_parse("5:6\n", true, &u, &g), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
