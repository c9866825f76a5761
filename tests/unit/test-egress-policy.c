/* Unit tests of the egress policy text (common/egress-policy.c): what is accepted, its canonical
 * form, and every bound the privileged side relies on (entries, prefix, port, characters). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
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

/* within(p, ceiling): p parsed from a, ceiling from b */
static bool
within(const char *a, const char *b)
{
	struct egress_policy p, c;
	assert_int_equal(egress_policy_parse(a, &p, NULL, 0), 0);
	assert_int_equal(egress_policy_parse(b, &c, NULL, 0), 0);
	return egress_policy_within(&p, &c);
}

/* The ceiling an operator's template sets on what an E2B client asks for: nothing beyond it */
static void
test_within(void **state)
{
	(void)state;
	assert_true(within("off", "off"));
	assert_true(within("off", "on"));
	assert_true(within("off", "192.0.2.7"));
	assert_false(within("on", "off"));
	assert_false(within("192.0.2.7", "off"));
	assert_true(within("on", "on"));
	assert_false(within("on", "192.0.2.0/24"));
	/* a list within on: public addresses only (on never reaches the deny list) */
	assert_true(within("192.0.2.7,198.51.100.0/24:443", "on"));
	assert_false(within("10.1.2.3", "on"));
	assert_false(within("192.0.2.7,169.254.169.254", "on"));
	assert_false(within("0.0.0.0/0", "on"));
	/* a list within a list: each entry inside one of the ceiling's, ports included */
	assert_true(within("192.0.2.7", "192.0.2.0/24"));
	assert_true(within("192.0.2.7:443,198.51.100.9", "198.51.100.0/24,192.0.2.0/24:443"));
	assert_false(within("192.0.2.7", "192.0.2.0/24:443"));
	assert_false(within("192.0.2.7:80", "192.0.2.0/24:443"));
	assert_false(within("192.0.2.0/23", "192.0.2.0/24"));
	assert_false(within("192.0.3.1", "192.0.2.0/24"));
	/* a ceiling's private entry (the operator's choice) covers a client's entry inside it */
	assert_true(within("10.1.2.3", "10.0.0.0/8"));
}

static void
test_denied_entry(void **state)
{
	(void)state;
	struct egress_policy p;
	assert_int_equal(egress_policy_parse("192.0.2.7,8.8.8.8,10.0.0.1", &p, NULL, 0), 0);
	assert_int_equal(egress_policy_denied_entry(&p), 3);
	assert_int_equal(egress_policy_parse("0.0.0.0/0", &p, NULL, 0), 0);
	assert_int_equal(egress_policy_denied_entry(&p), 1);
	/* 172.15.255.255 is just below 172.16.0.0/12, 172.32.0.0 just above it */
	assert_int_equal(egress_policy_parse("172.15.255.255,172.32.0.0", &p, NULL, 0), 0);
	assert_int_equal(egress_policy_denied_entry(&p), 0);
	assert_int_equal(egress_policy_parse("on", &p, NULL, 0), 0);
	assert_int_equal(egress_policy_denied_entry(&p), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepted),     cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_garbage),	     cmocka_unit_test(test_within),
		cmocka_unit_test(test_denied_entry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
