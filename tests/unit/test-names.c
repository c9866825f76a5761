/* Unit tests of the names that cross process boundaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_template_names),
		cmocka_unit_test(test_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
