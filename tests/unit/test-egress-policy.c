/* Unit tests of the egress policy text (common/egress-policy.c): what is accepted, its canonical
 * form, and every bound the privileged side relies on (entries, prefix, port, characters). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "egress-policy.h"

static void
canon(const char *in, const char *want)
{
	char buf[EGRESS_POLICY_MAX], why[200];
	int r = egress_policy_canonical(in, buf, sizeof buf, why, sizeof why);
	if (r < 0)
		fail_msg("%s refused: %s", in, why);
	assert_string_equal(buf, want);
	/* the canonical form reads back as itself */
	char again[EGRESS_POLICY_MAX];
	assert_int_equal(egress_policy_canonical(buf, again, sizeof again, why, sizeof why), 0);
	assert_string_equal(again, want);
}

static void
refused(const char *in)
{
	char buf[EGRESS_POLICY_MAX], why[200] = "";
	if (egress_policy_canonical(in, buf, sizeof buf, why, sizeof why) != -EINVAL)
		fail_msg("%s accepted as %s", in, buf);
	assert_true(why[0] != 0);
}

static void
test_accepted(void **state)
{
	canon("off", "off");
	canon("on", "on");
	canon("10.0.0.0/8:443,1.2.3.4", "10.0.0.0/8:443,1.2.3.4");
	canon("10.1.2.3/8", "10.0.0.0/8"); /* host bits cleared */
	canon("192.0.2.7/32:80, 198.51.100.0/24", "192.0.2.7:80,198.51.100.0/24");
	canon("0.0.0.0/0", "0.0.0.0/0");
	canon("1.2.3.4:65535", "1.2.3.4:65535");
	struct egress_policy p;
	assert_int_equal(egress_policy_parse("10.0.0.0/8:443,1.2.3.4", &p, NULL, 0), 0);
	assert_int_equal(p.mode, EGRESS_LIST);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.e[0].prefix, 8);
	assert_int_equal(p.e[0].port, 443);
	assert_int_equal(p.e[1].prefix, 32);
	assert_int_equal(p.e[1].port, 0);
}

static void
test_bounds(void **state)
{
	char many[EGRESS_POLICY_MAX] = "";
	for (int i = 0; i < EGRESS_MAX_ENTRIES; i++)
		snprintf(many + strlen(many), sizeof many - strlen(many), "%s255.255.255.%d:65535",
			 i ? "," : "", i);
	canon(many, many);
	strcat(many, ",1.1.1.1");
	refused(many); /* one entry too many */
	refused("1.2.3.4/33");
	refused("1.2.3.4/");
	refused("1.2.3.4/008");
	refused("1.2.3.4:0");
	refused("1.2.3.4:70000");
	refused("1.2.3.4:");
	refused("1.2.3.4:-1");
	refused("1.2.3.4:443:1");
}

static void
test_garbage(void **state)
{
	refused("");
	refused("ON");
	refused("of");
	refused("offf");
	refused("garbage");
	refused("1.2.3.4\n");
	refused("1.2.3.4\t");
	refused("1.2.3.4,\x01");
	refused("1.2.3.4,");
	refused(",1.2.3.4");
	refused("1.2.3.4,,5.6.7.8");
	refused("1.2.3");
	refused("256.1.1.1");
	refused("::1/128");
	refused("1.2.3.4 /8");
	refused("on,1.2.3.4");
	assert_int_equal(egress_policy_parse(NULL, &(struct egress_policy){0}, NULL, 0), -EINVAL);
	char big[EGRESS_POLICY_MAX + 10];
	memset(big, '1', sizeof big - 1);
	big[sizeof big - 1] = 0;
	refused(big);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepted),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_garbage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
