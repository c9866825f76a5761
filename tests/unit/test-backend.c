/* Unit tests of the backend enum: names round-trip, out-of-range numbers are refused, and the
 * values match the proto enum that carries them over IPC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "backend.h"
#include "warren/v1/backend.pb-c.h"

static void
test_round_trip(void **state)
{
	for (int b = 0; b < _BACKEND_MAX; b++) {
		const char *name = backend_to_string(b);
		assert_non_null(name);
		assert_int_equal(backend_from_string(name), b);
	}
	assert_string_equal(backend_to_string(BACKEND_GVISOR), "gvisor");
	assert_string_equal(backend_to_string(BACKEND_MICROVM), "microvm");
}

static void
test_refused(void **state)
{
	assert_int_equal(backend_from_string(NULL), -EINVAL);
	assert_int_equal(backend_from_string(""), -EINVAL);
	assert_int_equal(backend_from_string("firecracker"), -EINVAL); /* a VMM, not a backend */
	assert_int_equal(backend_from_string("gvisor "), -EINVAL);
	assert_int_equal(backend_from_string("MICROVM"), -EINVAL);
	assert_null(backend_to_string(-1));
	assert_null(backend_to_string(_BACKEND_MAX));
	assert_null(backend_to_string(1 << 30));
	assert_false(backend_valid(-1));
	assert_false(backend_valid(_BACKEND_MAX));
}

static void
test_proto_values(void **state)
{
	assert_int_equal(WARREN__V1__BACKEND__BACKEND_GVISOR, BACKEND_GVISOR);
	assert_int_equal(WARREN__V1__BACKEND__BACKEND_MICROVM, BACKEND_MICROVM);
	/* every proto value has a name here, and no more */
	assert_int_equal(warren__v1__backend__descriptor.n_values, _BACKEND_MAX);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_proto_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
