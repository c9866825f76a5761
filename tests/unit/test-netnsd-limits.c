/* Unit tests of netnsd's bounds: the resources config.json gives runsc (memory+swap equal to
 * memory, pids, CPU quota), the range checks of the limit and egress options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "isolation.h"
#include "oci-spec.h"

static void
test_spec_resources(void **state)
{
	char dir[] = "/tmp/test-netnsd-limits.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *argv[] = {"/bin/true"};
	struct oci_spec s = {.id = "0123456789ab",
			     .rootfs = "/nonexistent",
			     .argv = argv,
			     .argc = 1,
			     .memory_limit = 64ull << 20,
			     .pids_limit = 512,
			     .cpu_quota_us = 50000,
			     .cpu_period_us = 100000,
			     .netns_path = "/proc/1/fd/3",
			     .cgroups_path = "/warren/0123456789ab"};
	assert_int_equal(oci_spec_write(dir, &s), 0);
	char path[300], *json = NULL;
	size_t len;
	snprintf(path, sizeof path, "%s/config.json", dir);
	assert_int_equal(file_read_all(path, &json, &len), 0);
	assert_non_null(strstr(json, "\"memory\":{\"limit\":67108864,\"swap\":67108864}"));
	assert_non_null(strstr(json, "\"pids\":{\"limit\":512}"));
	assert_non_null(strstr(json, "\"cpu\":{\"quota\":50000,\"period\":100000}"));
	free(json);
	/* no quota asked: no cpu object, and no pids object without a limit */
	s.cpu_quota_us = 0;
	s.pids_limit = 0;
	assert_int_equal(oci_spec_write(dir, &s), 0);
	assert_int_equal(file_read_all(path, &json, &len), 0);
	assert_null(strstr(json, "\"cpu\""));
	assert_null(strstr(json, "\"pids\""));
	free(json);
	unlink(path);
	rmdir(dir);
}

static void
test_limit_options(void **state)
{
	struct oci_limits l = OCI_LIMITS_DEFAULT;
	assert_int_equal(l.pids_max, 512);
	assert_int_equal(oci_spec_limits_option(&l, 0x1101, "128"), 1);
	assert_int_equal(l.pids_max, 128);
	assert_int_equal(oci_spec_limits_option(&l, 0x1101, "10"), -EINVAL);
	assert_int_equal(oci_spec_limits_option(&l, 0x1101, "99999999"), -EINVAL);
	assert_int_equal(oci_spec_limits_option(&l, 0x1101, "12x"), -EINVAL);
	assert_int_equal(oci_spec_limits_option(&l, 0x1102, "0.5"), 1);
	assert_int_equal(l.cpu_millis, 500);
	assert_int_equal(oci_spec_limits_option(&l, 0x1102, "0"), 1);
	assert_int_equal(l.cpu_millis, 0);
	assert_int_equal(oci_spec_limits_option(&l, 0x1102, "0.001"), -EINVAL);
	assert_int_equal(oci_spec_limits_option(&l, 0x1102, "nan"), -EINVAL);
	assert_int_equal(oci_spec_limits_option(&l, 0x1102, "5000"), -EINVAL);
	assert_int_equal(oci_spec_limits_option(&l, 'p', "1"), 0);
}

static void
test_egress_options(void **state)
{
	assert_true(isolation_cidr_valid("10.0.0.0/8"));
	assert_true(isolation_cidr_valid("169.254.169.254/32"));
	assert_true(isolation_cidr_valid("fd00::/8"));
	assert_false(isolation_cidr_valid("10.0.0.0"));
	assert_false(isolation_cidr_valid("10.0.0.0/33"));
	assert_false(isolation_cidr_valid("fd00::/129"));
	assert_false(isolation_cidr_valid("10.0.0.0/8; flush ruleset"));
	assert_false(isolation_cidr_valid("10.0.0.0/8\n"));
	assert_false(isolation_cidr_valid("10.0.0.0/-1"));
	assert_false(isolation_cidr_valid("example.com/8"));
	struct isolation_config c = {0};
	assert_int_equal(isolation_option(&c, 0x1002, "192.0.2.0/24"), 1);
	assert_int_equal(c.n_egress_allow, 1);
	assert_int_equal(isolation_option(&c, 0x1002, "}; table x"), -EINVAL);
	for (int i = 1; i < ISOLATION_MAX_EGRESS_ALLOW; i++)
		assert_int_equal(isolation_option(&c, 0x1002, "192.0.2.0/24"), 1);
	assert_int_equal(isolation_option(&c, 0x1002, "192.0.2.0/24"), -EINVAL);
	assert_int_equal(isolation_option(&c, 0x1001, "nosuchuser-netguard"), 1);
	assert_int_equal(isolation_finish(&c), -ENOENT);
	c.gateway_user = NULL;
	assert_int_equal(isolation_finish(&c), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_resources),
		cmocka_unit_test(test_limit_options),
		cmocka_unit_test(test_egress_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
