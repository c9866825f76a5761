/* Unit tests of warren-clusterd's placement policy (cluster/place.c) and of its input checks
 * (cluster/cluster-input.c): where a create goes, that a full cluster is refused, that this
 * placer's reservations steer, and what may reach etcd or D-Bus. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "clusterd.h"
#include "place.h"

static uint32_t
seq(void *arg)
{
	unsigned *n = arg;
	return (*n)++;
}

static struct place_host
host(const char *name, uint32_t free_slots, uint64_t mem, bool warm, uint32_t standby)
{
	struct place_host h = {.free_slots = free_slots,
			       .mem_avail = mem,
			       .warm = warm,
			       .standby = standby,
			       .accepting = true};
	strncpy(h.name, name, sizeof h.name - 1);
	return h;
}

static void
test_full(void **state)
{
	struct place_host h[3] = {host("a", 0, 1 << 30, false, 0), host("b", 0, 1 << 30, true, 1),
				  host("c", 5, 1 << 30, false, 0)};
	size_t order[3];
	unsigned n = 0;
	h[2].accepting = false; /* cut off from etcd */
	assert_int_equal(place_order(h, 3, NULL, 0, 2, seq, &n, order), 0);
	h[2].accepting = true;
	assert_int_equal(place_order(h, 3, NULL, 0, 2, seq, &n, order), 1);
	assert_int_equal(order[0], 2);
}

static void
test_rank_all(void **state)
{
	/* K = all hosts: the best by standby, then warm, then memory, then slots */
	struct place_host h[4] = {
		host("a", 9, 8ull << 30, false, 0), host("b", 1, 1ull << 30, true, 0),
		host("c", 1, 1ull << 30, true, 2), host("d", 3, 9ull << 30, false, 0)};
	size_t order[4];
	unsigned n = 0;
	assert_int_equal(place_order(h, 4, NULL, 0, 4, seq, &n, order), 4);
	assert_int_equal(order[0], 2); /* a standby ready */
	assert_int_equal(order[1], 1); /* warm */
	assert_int_equal(order[2], 3); /* most memory */
	assert_int_equal(order[3], 0);
}

static void
test_best_of_k(void **state)
{
	/* K = 1: the sample is one host; every host still follows as a fallback */
	struct place_host h[3] = {host("a", 1, 1, false, 0), host("b", 1, 2, false, 0),
				  host("c", 1, 3, false, 0)};
	size_t order[3];
	for (unsigned start = 0; start < 3; start++) {
		unsigned n = start;
		assert_int_equal(place_order(h, 3, NULL, 0, 1, seq, &n, order), 3);
		assert_int_equal(order[0], start); /* the shuffle's pick */
		/* the others by memory, best first */
		assert_true(h[order[1]].mem_avail > h[order[2]].mem_avail);
	}
}

static void
test_reservations(void **state)
{
	struct place_host h[2] = {host("a", 1, 9ull << 30, true, 1), host("b", 2, 1, false, 0)};
	struct place_reservation res[PLACE_MAX_HOSTS];
	size_t n_res = 0, order[2];
	unsigned n = 0;
	place_reserve(res, &n_res, "a", +1);
	/* a's one slot is reserved by this placer: b first, a kept last (its record may count
	 * the create already; it refuses at once if it is full) */
	assert_int_equal(place_order(h, 2, res, n_res, 2, seq, &n, order), 2);
	assert_int_equal(order[0], 1);
	assert_int_equal(order[1], 0);
	place_reserve(res, &n_res, "a", -1);
	assert_int_equal(place_order(h, 2, res, n_res, 2, seq, &n, order), 2);
	assert_int_equal(order[0], 0);
	/* never below zero, never a new entry for a release */
	place_reserve(res, &n_res, "a", -1);
	place_reserve(res, &n_res, "z", -1);
	assert_int_equal(n_res, 1);
	assert_int_equal(res[0].count, 0);
}

static void
test_input(void **state)
{
	char t[72], r[CLUSTER_RID_MAX + 1];
#define CREATE(s) cluster_input_create(s, strlen(s), t, sizeof t, r, sizeof r)
	assert_int_equal(CREATE("{\"template\":\"web\",\"request_id\":\"a-1_B\"}"), 0);
	assert_string_equal(t, "web");
	assert_string_equal(r, "a-1_B");
	assert_int_equal(CREATE("{\"template\":\"web\"}"), 0);
	assert_string_equal(r, "");
	assert_int_equal(CREATE("{\"template\":\"../x\"}"), -EINVAL);
	assert_int_equal(CREATE("{\"template\":\".x\"}"), -EINVAL);
	assert_int_equal(CREATE("{\"template\":\"web\",\"request_id\":\"a/b\"}"), -EINVAL);
	assert_int_equal(CREATE("{\"template\":\"web\",\"request_id\":\"\"}"), -EINVAL);
	assert_int_equal(CREATE("{\"template\":\"web\",\"request_id\":7}"), -EINVAL);
	assert_int_equal(CREATE("{\"template\":\"web\",\"template\":\"web\"}"), -EINVAL);
	assert_int_equal(CREATE("[]"), -EINVAL);
	assert_int_equal(CREATE("{"), -EINVAL);
	assert_true(cluster_input_name_ok("h1"));
	assert_false(cluster_input_name_ok("-h"));
	assert_false(cluster_input_name_ok("H1"));
	assert_false(cluster_input_name_ok(""));
	assert_true(cluster_input_id_ok("0123456789ab"));
	assert_false(cluster_input_id_ok("0123456789aB"));
	assert_false(cluster_input_id_ok("0123456789a"));
	assert_true(cluster_input_addr_ok("10.0.0.1:8303"));
	assert_false(cluster_input_addr_ok("10.0.0.256:8303"));
	assert_false(cluster_input_addr_ok("10.0.0.1:0"));
	assert_false(cluster_input_addr_ok("10.0.0.1:8303x"));
	assert_false(cluster_input_addr_ok("host:8303"));
	/* a host's E2B control plane as it publishes it */
	assert_true(cluster_input_url_ok("http://10.0.0.1:8302"));
	assert_false(cluster_input_url_ok("https://10.0.0.1:8302"));
	assert_false(cluster_input_url_ok("http://10.0.0.1:8302/"));
	assert_false(cluster_input_url_ok("http://evil.example:8302"));
	assert_false(cluster_input_url_ok("10.0.0.1:8302"));
	assert_false(cluster_input_url_ok(NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full),	  cmocka_unit_test(test_rank_all),
		cmocka_unit_test(test_best_of_k), cmocka_unit_test(test_reservations),
		cmocka_unit_test(test_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
