/* Unit tests of the names that cross process boundaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "cgroup.h"
#include "names.h"

static void
test_ids(void **state)
{
	char id[SANDBOX_ID_LEN + 1];
	for (int i = 0; i < 100; i++) {
		assert_int_equal(sandbox_id_new(id), 0);
		assert_true(sandbox_id_valid(id));
	}
	assert_false(sandbox_id_valid("0123456789a"));	 /* short: runsc prefix matching */
	assert_false(sandbox_id_valid("0123456789abc")); /* long */
	assert_false(sandbox_id_valid("0123456789aG"));
	assert_false(sandbox_id_valid("../../etc/pa"));
	assert_false(sandbox_id_valid(NULL));
}

static void
test_template_names(void **state)
{
	assert_true(template_name_valid("web"));
	assert_true(template_name_valid("my-app_2"));
	assert_false(template_name_valid(""));
	assert_false(template_name_valid("-x"));
	assert_false(template_name_valid("Web"));
	assert_false(template_name_valid("a/b"));
	assert_false(template_name_valid("abcdefghijklmnopqrstuvwxyz0123456"));
}

static void
test_paths(void **state)
{
	assert_true(path_is_inside("/var/lib/warren/templates/web/rootfs",
				   "/var/lib/warren/templates"));
	assert_false(path_is_inside("/var/lib/warren/templates", "/var/lib/warren/templates"));
	assert_false(path_is_inside("/var/lib/warren/templates2/x", "/var/lib/warren/templates"));
	assert_false(path_is_inside("/etc", "/var/lib/warren/templates"));
	assert_true(port_valid(8080));
	assert_false(port_valid(0));
	assert_false(port_valid(65536));
}

/* The cgroup a sandbox lives in: netnsd's and snapshotd's --cgroup-parent, and what netnsd
 * tells the supervisor (which opens it under /sys/fs/cgroup). */
static void
test_cgroup_paths(void **state)
{
	char buf[CGROUP_PATH_MAX];
	assert_true(cgroup_path_valid("/warren"));
	assert_true(cgroup_path_valid("/warren-t3h1/0123456789ab"));
	assert_true(cgroup_path_valid("/system.slice/warren@1.service"));
	assert_false(cgroup_path_valid(""));
	assert_false(cgroup_path_valid("/"));
	assert_false(cgroup_path_valid("warren"));   /* relative */
	assert_false(cgroup_path_valid("/warren/")); /* empty component */
	assert_false(cgroup_path_valid("//warren"));
	assert_false(cgroup_path_valid("/warren/../init.scope"));
	assert_false(cgroup_path_valid("/warren/./x"));
	assert_false(cgroup_path_valid("/warren/.."));
	assert_false(cgroup_path_valid("/war ren"));
	assert_false(cgroup_path_valid("/warren\n/x"));
	char longp[CGROUP_PATH_MAX + 1];
	memset(longp, 'a', sizeof longp - 1);
	longp[0] = '/';
	longp[sizeof longp - 1] = '\0';
	assert_false(cgroup_path_valid(longp));
	longp[CGROUP_PATH_MAX - 1] = '\0'; /* one shorter than the bound: fits */
	assert_true(cgroup_path_valid(longp));
	/* a parent must leave room for "/<id>": valid as a path, refused as a parent */
	assert_false(cgroup_parent_valid(longp));
	longp[CGROUP_PATH_MAX - 1 - 1 - SANDBOX_ID_LEN] = '\0';
	assert_true(cgroup_parent_valid(longp));
	assert_int_equal(cgroup_sandbox_path(longp, "0123456789ab", buf, sizeof buf), 0);
	longp[CGROUP_PATH_MAX - 1 - 1 - SANDBOX_ID_LEN] = 'a';
	longp[CGROUP_PATH_MAX - 1 - SANDBOX_ID_LEN] = '\0';
	assert_false(cgroup_parent_valid(longp));
	assert_false(cgroup_parent_valid("/warren/.."));

	assert_int_equal(cgroup_sandbox_path("/warren", "0123456789ab", buf, sizeof buf), 0);
	assert_string_equal(buf, "/warren/0123456789ab");
	assert_true(cgroup_path_valid(buf));
	longp[CGROUP_PATH_MAX - 5] = '\0';
	assert_int_equal(cgroup_sandbox_path(longp, "0123456789ab", buf, sizeof buf),
			 -ENAMETOOLONG);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_template_names),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_cgroup_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
