/* Unit tests of warren-clusterd's watched catalog (cluster/catalog-table.c): etcd's watch
 * messages and range answers as its JSON gateway writes them (captured from etcd 3.4), what is
 * refused (malformed, an error message, over the bounds), and the table they build: puts and
 * deletes of owner and host records, foreign keys and malformed records left out; and the
 * fork bodies clusterd takes (cluster/cluster-input.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "clusterd.h"

/* base64 of /warren/hosts/h1, {"gateway":"http://1.2.3.4:5"}, /warren/owners/abcdef012345,
 * {"host":"h1"} */
#define K_H1 "L3dhcnJlbi9ob3N0cy9oMQ=="
#define V_H1 "eyJnYXRld2F5IjoiaHR0cDovLzEuMi4zLjQ6NSJ9"
#define K_O "L3dhcnJlbi9vd25lcnMvYWJjZGVmMDEyMzQ1"
#define V_O "eyJob3N0IjoiaDEifQ=="

static int
watch(const char *s, struct catalog_msg *m)
{
	return catalog_parse_watch(s, strlen(s), m);
}

static void
test_parse_watch(void **state)
{
	struct catalog_msg m;
	(void)state;
	assert_int_equal(
		watch("{\"result\":{\"header\":{\"revision\":\"2\"},\"created\":true}}", &m), 0);
	assert_true(m.created);
	assert_int_equal(m.revision, 2);
	assert_int_equal(m.n, 0);
	catalog_msg_clear(&m);
	assert_int_equal(watch("{\"result\":{\"header\":{\"revision\":\"4\"},\"events\":[{\"kv\":{"
			       "\"key\":\"" K_H1 "\",\"value\":\"" V_H1 "\"}},{\"type\":\"DELETE\","
			       "\"kv\":{\"key\":\"" K_O "\",\"mod_revision\":\"4\"}}]}}",
			       &m),
			 0);
	assert_int_equal(m.n, 2);
	assert_false(m.ev[0].del);
	assert_string_equal(m.ev[0].key, "/warren/hosts/h1");
	assert_string_equal(m.ev[0].value, "{\"gateway\":\"http://1.2.3.4:5\"}");
	assert_true(m.ev[1].del);
	assert_string_equal(m.ev[1].key, "/warren/owners/abcdef012345");
	catalog_msg_clear(&m);
	assert_int_equal(watch("{\"result\":{\"header\":{},\"canceled\":true,"
			       "\"compact_revision\":\"5\"}}",
			       &m),
			 0);
	assert_true(m.canceled);
	assert_int_equal(m.compact_revision, 5);
	catalog_msg_clear(&m);
	/* refused */
	assert_int_equal(watch("{\"error\":{\"grpc_code\":14}}", &m), -EPROTO);
	assert_int_equal(watch("[]", &m), -EBADMSG);
	assert_int_equal(watch("{\"result\":{\"header\":{\"revision\":\"-1\"}}}", &m), -EBADMSG);
	assert_int_equal(
		watch("{\"result\":{\"header\":{\"revision\":\"99999999999999999999\"}}}", &m),
		-EBADMSG);
	assert_int_equal(watch("{\"result\":{\"events\":[{\"type\":\"NOPE\",\"kv\":{\"key\":\"" K_H1
			       "\"}}]}}",
			       &m),
			 -EBADMSG);
	assert_int_equal(
		watch("{\"result\":{\"events\":[{\"kv\":{\"key\":\"not base64!\"}}]}}", &m),
		-EBADMSG);
	/* "a\0b" in base64: a NUL inside a key */
	assert_int_equal(watch("{\"result\":{\"events\":[{\"kv\":{\"key\":\"YQBi\"}}]}}", &m),
			 -EBADMSG);
	assert_int_equal(watch("{\"result\":{\"events\":{}}}", &m), -EBADMSG);
}

static void
test_bounds(void **state)
{
	struct catalog_msg m;
	(void)state;
	/* more events than one message may hold */
	size_t n = CATALOG_MAX_EVENTS + 1, cap = 64 + n * 3;
	char *s = malloc(cap), *p = s;
	p += sprintf(p, "{\"result\":{\"events\":[");
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s{}", i ? "," : "");
	sprintf(p, "]}}");
	assert_int_equal(catalog_parse_watch(s, strlen(s), &m), -E2BIG);
	assert_int_equal(catalog_parse_range(s, CATALOG_MSG_MAX + 1, &m), -E2BIG);
	free(s);
}

static void
test_range_and_table(void **state)
{
	struct catalog_msg m;
	struct catalog_table t;
	(void)state;
	const char *r =
		"{\"header\":{\"revision\":\"7\"},\"kvs\":[{\"key\":\"" K_H1 "\",\"value\":\"" V_H1
		"\"},{\"key\":\"" K_O "\",\"value\":\"" V_O "\"}],\"count\":\"2\"}";
	assert_int_equal(catalog_parse_range(r, strlen(r), &m), 0);
	assert_int_equal(m.revision, 7);
	assert_int_equal(m.n, 2);
	assert_int_equal(catalog_table_init(&t), 0);
	assert_int_equal(catalog_table_apply(&t, "/warren", &m), 1);
	assert_string_equal(json_string_value(json_object_get(t.owners, "abcdef012345")), "h1");
	assert_string_equal(json_string_value(json_object_get(t.hosts, "h1")), "http://1.2.3.4:5");
	/* the same again changes nothing */
	assert_int_equal(catalog_table_apply(&t, "/warren", &m), 0);
	/* another prefix: nothing of it is ours */
	assert_int_equal(catalog_table_apply(&t, "/other", &m), 0);
	catalog_msg_clear(&m);
	/* an empty range; a range with more to come is refused (clusterd never asks a limit) */
	const char *empty = "{\"header\":{\"revision\":\"9\"}}";
	assert_int_equal(catalog_parse_range(empty, strlen(empty), &m), 0);
	assert_int_equal(m.n, 0);
	catalog_msg_clear(&m);
	const char *more = "{\"header\":{\"revision\":\"9\"},\"more\":true}";
	assert_int_equal(catalog_parse_range(more, strlen(more), &m), -EBADMSG);
	/* events: a foreign key, a bad id, a record naming a bad host (the route goes), a
	 * host's delete */
	struct catalog_event ev[] = {
		{false, "/warren/requests/x", "{\"host\":\"h2\"}"},
		{false, "/warren/owners/NOTANID", "{\"host\":\"h2\"}"},
		{false, "/warren/owners/abcdef012345", "{\"host\":\"../../h2\"}"},
		{true, "/warren/hosts/h1", ""},
		{false, "/warren/hostsh1", "{}"},
		{false, "/warren/owners/0123456789ab", "not json"},
	};
	struct catalog_msg e = {.ev = ev, .n = 6};
	assert_int_equal(catalog_table_apply(&t, "/warren", &e), 1);
	assert_int_equal(json_object_size(t.owners), 0);
	assert_int_equal(json_object_size(t.hosts), 0);
	/* a host record without a usable gateway: in (not lost), with no URL */
	struct catalog_event h = {false, "/warren/hosts/h3", "{\"gateway\":7}"};
	struct catalog_msg hm = {.ev = &h, .n = 1};
	assert_int_equal(catalog_table_apply(&t, "/warren", &hm), 1);
	assert_string_equal(json_string_value(json_object_get(t.hosts, "h3")), "");
	catalog_table_clear(&t);
}

static void
test_owner_bound(void **state)
{
	struct catalog_table t;
	char key[64];
	(void)state;
	assert_int_equal(catalog_table_init(&t), 0);
	struct catalog_event ev = {false, key, "{\"host\":\"h2\"}"};
	struct catalog_msg m = {.ev = &ev, .n = 1};
	for (unsigned i = 0; i <= CATALOG_MAX_OWNERS; i++) {
		snprintf(key, sizeof key, "/warren/owners/%012x", i);
		catalog_table_apply(&t, "/warren", &m);
	}
	assert_int_equal(json_object_size(t.owners), CATALOG_MAX_OWNERS);
	assert_true(t.overflow);
	catalog_table_clear(&t);
}

/* POST /v1/forks and /v1/internal/fork bodies (cluster/cluster-input.c) */
static void
test_fork_input(void **state)
{
	char tag[CLUSTER_TAG_MAX + 1], rid[CLUSTER_RID_MAX + 1], host[CLUSTER_NAME_MAX + 1];
	unsigned count = 0;
	(void)state;
#define FORK(s) cluster_input_fork(s, strlen(s), tag, &count, rid, host)
	assert_int_equal(FORK("{\"tag\":\"t1\",\"count\":3,\"request_id\":\"r-1\"}"), 0);
	assert_string_equal(tag, "t1");
	assert_int_equal(count, 3);
	assert_string_equal(rid, "r-1");
	assert_string_equal(host, "");
	assert_int_equal(FORK("{\"tag\":\"t1\",\"count\":1,\"host\":\"h2\"}"), 0);
	assert_string_equal(rid, "");
	assert_string_equal(host, "h2");
	/* refused: counts out of 1-200, a warm template's image, a bad tag, host or id */
	assert_int_equal(FORK("{\"tag\":\"t1\",\"count\":0}"), -EINVAL);
	assert_int_equal(FORK("{\"tag\":\"t1\",\"count\":201}"), -EINVAL);
	assert_int_equal(FORK("{\"tag\":\"t1\",\"count\":\"1\"}"), -EINVAL);
	assert_int_equal(FORK("{\"tag\":\"t1\",\"count\":1.5}"), -EINVAL);
	assert_int_equal(FORK("{\"tag\":\"warm-web\",\"count\":1}"), -EINVAL);
	assert_int_equal(FORK("{\"tag\":\"../x\",\"count\":1}"), -EINVAL);
	assert_int_equal(FORK("{\"tag\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"count\":1}"),
			 -EINVAL);
	assert_int_equal(FORK("{\"tag\":\"t1\",\"count\":1,\"host\":\"H/2\"}"), -EINVAL);
	assert_int_equal(FORK("{\"tag\":\"t1\",\"count\":1,\"request_id\":\"a b\"}"), -EINVAL);
	assert_int_equal(FORK("{\"tag\":\"t1\",\"tag\":\"t2\",\"count\":1}"), -EINVAL);
	assert_int_equal(FORK("[]"), -EINVAL);
#undef FORK
	assert_true(cluster_input_tag_ok("snap_1-a"));
	assert_false(cluster_input_tag_ok("warm-app"));
	assert_false(cluster_input_tag_ok(""));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_watch),	cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_range_and_table), cmocka_unit_test(test_owner_bound),
		cmocka_unit_test(test_fork_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
