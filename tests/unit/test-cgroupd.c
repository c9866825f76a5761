/* Unit tests of warren-cgroupd's reading of /proc/self/cgroup: which line names the unit's
 * cgroup on a pure v2, a hybrid and a v1-only host, and what it refuses. (The set-up itself runs
 * against the kernel in tests/integration/test-cgroupd.sh.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "cgroup-path.h"
#include "cgroupd.h"

static void
test_own_path(void **state)
{
	char p[CGROUP_PATH_MAX];
	/* pure v2 */
	assert_int_equal(cgroupd_own_path("0::/system.slice/warren-cgroupd.service\n", p, sizeof p),
			 0);
	assert_string_equal(p, "/system.slice/warren-cgroupd.service");
	/* hybrid, systemd's unit: both name it */
	assert_int_equal(cgroupd_own_path("12:memory:/system.slice/warren-cgroupd.service\n"
					  "1:name=systemd:/system.slice/warren-cgroupd.service\n"
					  "0::/system.slice/warren-cgroupd.service\n",
					  p, sizeof p),
			 0);
	assert_string_equal(p, "/system.slice/warren-cgroupd.service");
	/* hybrid with the unified line at the root: name=systemd's */
	assert_int_equal(
		cgroupd_own_path("1:name=systemd:/system.slice/w.service\n0::/\n", p, sizeof p), 0);
	assert_string_equal(p, "/system.slice/w.service");
	/* v1 only */
	assert_int_equal(cgroupd_own_path("4:memory:/x\n1:name=systemd:/system.slice/w.service\n",
					  p, sizeof p),
			 0);
	assert_string_equal(p, "/system.slice/w.service");
	/* no line to go by */
	assert_int_equal(cgroupd_own_path("4:memory:/x\n", p, sizeof p), -ENOENT);
	assert_int_equal(cgroupd_own_path("", p, sizeof p), -ENOENT);
	/* the root cgroup is nobody's own: not started by systemd as its unit */
	assert_int_equal(cgroupd_own_path("0::/\n", p, sizeof p), -EINVAL);
	/* names Warren does not make paths of (a space, a deleted cgroup's suffix, ..) */
	assert_int_equal(cgroupd_own_path("0::/a b\n", p, sizeof p), -EINVAL);
	assert_int_equal(cgroupd_own_path("0::/a (deleted)\n", p, sizeof p), -EINVAL);
	assert_int_equal(cgroupd_own_path("0::/a/../b\n", p, sizeof p), -EINVAL);
	/* too long for the buffer */
	char small[8];
	assert_int_equal(cgroupd_own_path("0::/system.slice\n", small, sizeof small),
			 -ENAMETOOLONG);
}

static void
test_delegate_refuses(void **state)
{
	char parent[CGROUP_PATH_MAX], why[256];
	/* a path it did not read from /proc is still checked */
	assert_int_equal(
		cgroupd_delegate("/nonexistent", "/", parent, sizeof parent, why, sizeof why),
		-EINVAL);
	assert_int_equal(
		cgroupd_delegate("/nonexistent", "/../x", parent, sizeof parent, why, sizeof why),
		-EINVAL);
	/* not cgroup v2 (a plain directory): the parent is named, nothing is written */
	assert_int_equal(cgroupd_delegate("/nonexistent", "/system.slice/w.service", parent,
					  sizeof parent, why, sizeof why),
			 0);
	assert_string_equal(parent, "/system.slice/w.service/sandboxes");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_path),
		cmocka_unit_test(test_delegate_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
