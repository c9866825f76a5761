/* Unit test of the form check of netnsd's restart records (netnsd/adopt.c): a restarted netnsd
 * reads them back as root, so anything but the exact form the spawner writes is refused before
 * the kernel is even asked (adopt_scan then checks pid, start time, cgroup, runsc state and the
 * veth pair). The positive control is the spawner's own format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "adopt.h"

#define GOOD "id=0123456789ab\nslot=5\npid=1234\nstart=987654\nbackend=gvisor\nmemory=268435456\n"

static int
parse(const char *s)
{
	struct adopt_record r;
	return adopt_record_parse(s, strlen(s), &r);
}

static void
test_good(void **state)
{
	struct adopt_record r;
	assert_int_equal(adopt_record_parse(GOOD, strlen(GOOD), &r), 0);
	assert_string_equal(r.id, "0123456789ab");
	assert_int_equal(r.slot, 5);
	assert_int_equal(r.pid, 1234);
	assert_int_equal(r.start, 987654);
	assert_int_equal(r.backend, 0);
	assert_int_equal(r.memory, 268435456);
	assert_int_equal(
		parse("backend=microvm\nid=0123456789ab\nslot=0\npid=2\nstart=1\nmemory=0\n"), 0);
}

static void
test_hostile(void **state)
{
	/* keys missing, a key twice, an unknown key, bad ids, the slot bound, pid 1, 0, negative,
	 * too big, signed, spaced, no start, a start too big, an unknown backend, no final newline,
	 * no '=', an empty line */
	const char *bad[] = {
		"",
		"id=0123456789ab\n",
		GOOD "slot=6\n",
		GOOD "uid=0\n",
		"id=../../etc/x\nslot=5\npid=1234\nstart=9\nbackend=gvisor\nmemory=0\n",
		"id=0123456789AB\nslot=5\npid=1234\nstart=9\nbackend=gvisor\nmemory=0\n",
		"id=0123456789ab\nslot=4000\npid=1234\nstart=9\nbackend=gvisor\nmemory=0\n",
		"id=0123456789ab\nslot=5\npid=1\nstart=9\nbackend=gvisor\nmemory=0\n",
		"id=0123456789ab\nslot=5\npid=0\nstart=9\nbackend=gvisor\nmemory=0\n",
		"id=0123456789ab\nslot=5\npid=-5\nstart=9\nbackend=gvisor\nmemory=0\n",
		"id=0123456789ab\nslot=5\npid=99999999\nstart=9\nbackend=gvisor\nmemory=0\n",
		"id=0123456789ab\nslot=5\npid=+12\nstart=9\nbackend=gvisor\nmemory=0\n",
		"id=0123456789ab\nslot=5\npid= 12\nstart=9\nbackend=gvisor\nmemory=0\n",
		"id=0123456789ab\nslot=5\npid=12\nstart=0\nbackend=gvisor\nmemory=0\n",
		"id=0123456789ab\nslot=5\npid=12\nstart=99999999999999999999999\nbackend="
		"gvisor\nmemory=0\n",
		"id=0123456789ab\nslot=5\npid=12\nstart=9\nbackend=runc\nmemory=0\n",
		"id=0123456789ab\nslot=5\npid=12\nstart=9\nbackend=gvisor\nmemory=0",
		"id=0123456789ab\nslot=5\npid=12\nstart=9\nbackend=gvisor\nmemory0\n",
		"id=0123456789ab\nslot=5\n\npid=12\nstart=9\nbackend=gvisor\nmemory=0\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		if (parse(bad[i]) != -EBADMSG)
			fail_msg("accepted hostile record %zu: %s", i, bad[i]);
	}
	/* a NUL inside */
	char nul[sizeof GOOD];
	memcpy(nul, GOOD, sizeof GOOD);
	nul[5] = 0;
	struct adopt_record r;
	assert_int_equal(adopt_record_parse(nul, sizeof GOOD - 1, &r), -EBADMSG);
	/* over 512 bytes */
	char big[700];
	memset(big, 'a', sizeof big);
	assert_int_equal(adopt_record_parse(big, sizeof big, &r), -EBADMSG);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_good),
					   cmocka_unit_test(test_hostile)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
