/* The gateway's remote routes (gateway/remote-routes.c over the real route table, routes.c):
 * which targets --cluster-net and --cluster-port let through, a table applied whole (routes
 * added, changed, removed), a local route never replaced, a forged target left out alone, the
 * bound, and the hop token compared exactly. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"

static struct gateway g;
static const char token[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static void
reset(void)
{
	while (g.routes)
		route_remove(&g, g.routes);
	remote_routes_peer_gone(&g, 1);
	memset(&g, 0, sizeof g);
	g.cluster_port = 8300;
	assert_int_equal(remote_nets_parse(&g, "10.1.0.0/16,192.168.7.5/32"), 0);
}

/* push "id=host@addr:port" / "id=host@lost" strings as one table */
static int
push(size_t n, const char *const *spec)
{
	Warren__V1__RemoteRoute rr[16], *p[16];
	char buf[16][96];
	for (size_t i = 0; i < n; i++) {
		warren__v1__remote_route__init(&rr[i]);
		snprintf(buf[i], sizeof buf[i], "%s", spec[i]);
		char *eq = strchr(buf[i], '='), *at = strchr(buf[i], '@'), *colon;
		*eq = *at = 0;
		rr[i].id = buf[i];
		rr[i].host = eq + 1;
		rr[i].lost = !strcmp(at + 1, "lost");
		rr[i].address = rr[i].lost ? "" : at + 1;
		if (!rr[i].lost && (colon = strrchr(at + 1, ':'))) {
			*colon = 0;
			rr[i].port = (uint32_t)atoi(colon + 1);
		}
		p[i] = &rr[i];
	}
	static uint64_t gen;
	return remote_routes_piece(&g, ++gen, token, (const Warren__V1__RemoteRoute *const *)p, n,
				   true);
}

static void
test_nets(void **state)
{
	(void)state;
	struct gateway h = {0};
	assert_int_equal(remote_nets_parse(&h, "10.0.0.0/8"), 0);
	assert_int_equal(h.n_cluster_nets, 1);
	/* a /0 (or anything wider than /8) would let a forged catalog name any address */
	const char *bad[] = {
		"0.0.0.0/0",
		"10.0.0.0/7",
		"10.0.0.0",
		"10.0.0.0/33",
		"10.0.0/8",
		"10.0.0.0/8x",
		"",
		"10.0.0.0/",
		"1.0.0.0/8,2.0.0.0/8,3.0.0.0/8,4.0.0.0/8,5.0.0.0/8,6.0.0.0/8,7.0.0.0/8,"
		"8.0.0.0/8,9.0.0.0/8"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_true(remote_nets_parse(&h, bad[i]) < 0);
}

static void
test_targets(void **state)
{
	(void)state;
	struct sockaddr_in sa;
	reset();
	assert_true(remote_target_ok(&g, "10.1.2.3", 8300, &sa));
	assert_int_equal(ntohs(sa.sin_port), 8300);
	assert_true(remote_target_ok(&g, "192.168.7.5", 8300, &sa));
	assert_false(remote_target_ok(&g, "192.168.7.6", 8300, &sa));
	assert_false(remote_target_ok(&g, "10.2.0.1", 8300, &sa));
	assert_false(remote_target_ok(&g, "10.1.2.3", 2379, &sa)); /* etcd's port */
	assert_false(remote_target_ok(&g, "10.1.2.3", 0, &sa));
	assert_false(remote_target_ok(&g, "host.example", 8300, &sa)); /* no names */
	assert_false(remote_target_ok(&g, "10.1.2.3 ", 8300, &sa));
	g.cluster_port = 0; /* routing off */
	assert_false(remote_target_ok(&g, "10.1.2.3", 8300, &sa));
}

static void
test_apply(void **state)
{
	(void)state;
	reset();
	const char *t1[] = {"aaaaaaaaaaa1=h2@10.1.0.2:8300", "aaaaaaaaaaa2=h3@lost",
			    "aaaaaaaaaaa3=h9@10.1.0.9:2379", "aaaaaaaaaaa4=h2@10.1.0.2:8300"};
	/* a local route of aaaaaaaaaaa4: the table never replaces it */
	struct route *local = route_set(&g, "aaaaaaaaaaa4");
	local->sa.sin_port = htons(8080);
	assert_int_equal(push(4, t1), 0);
	struct route *r = route_find(&g, "aaaaaaaaaaa1");
	assert_non_null(r);
	assert_true(r->remote && !r->lost);
	assert_int_equal(r->state, WARREN__V1__ROUTE_STATE__ROUTE_RUNNING);
	assert_string_equal(r->host, "h2");
	assert_true(route_find(&g, "aaaaaaaaaaa2")->lost);
	assert_null(route_find(&g, "aaaaaaaaaaa3")); /* its target is etcd's port: left out */
	assert_false(route_find(&g, "aaaaaaaaaaa4")->remote);
	assert_int_equal(ntohs(route_find(&g, "aaaaaaaaaaa4")->sa.sin_port), 8080);
	assert_int_equal(remote_count(&g), 2);
	assert_int_equal(route_count(&g), 1); /* the supervisor's count: local only */
	assert_string_equal(g.hop_token, token);
	/* the next table: aaaaaaaaaaa2's host is back, aaaaaaaaaaa1 is gone */
	const char *t2[] = {"aaaaaaaaaaa2=h3@10.1.0.3:8300"};
	assert_int_equal(push(1, t2), 0);
	assert_null(route_find(&g, "aaaaaaaaaaa1"));
	assert_false(route_find(&g, "aaaaaaaaaaa2")->lost);
	assert_non_null(route_find(&g, "aaaaaaaaaaa4"));
	assert_int_equal(push(0, NULL), 0);
	assert_int_equal(remote_count(&g), 0);
	assert_int_equal(route_count(&g), 1);
	reset();
}

static void
test_bound(void **state)
{
	(void)state;
	reset();
	Warren__V1__RemoteRoute rr[GATEWAY_REMOTE_PER_PIECE], *p[GATEWAY_REMOTE_PER_PIECE];
	static char ids[GATEWAY_REMOTE_PER_PIECE][13];
	int r = 0;
	for (unsigned piece = 0; r == 0 && piece <= GATEWAY_REMOTE_MAX / GATEWAY_REMOTE_PER_PIECE;
	     piece++) {
		for (unsigned i = 0; i < GATEWAY_REMOTE_PER_PIECE; i++) {
			warren__v1__remote_route__init(&rr[i]);
			snprintf(ids[i], sizeof ids[i], "%06x%06x", piece, i);
			rr[i].id = ids[i];
			rr[i].host = "h2";
			rr[i].lost = true;
			p[i] = &rr[i];
		}
		r = remote_routes_piece(&g, 77, token, (const Warren__V1__RemoteRoute *const *)p,
					GATEWAY_REMOTE_PER_PIECE, false);
	}
	assert_int_equal(r, -E2BIG);
	assert_int_equal(remote_count(&g), 0); /* nothing applied */
	reset();
}

static void
test_hop(void **state)
{
	(void)state;
	struct gateway h = {0};
	assert_false(remote_hop_matches(&h, "", 0)); /* no token given: nothing is a hop */
	snprintf(h.hop_token, sizeof h.hop_token, "%s", token);
	assert_true(remote_hop_matches(&h, token, 64));
	assert_false(remote_hop_matches(&h, token, 63));
	char wrong[65];
	memcpy(wrong, token, 65);
	wrong[63] = wrong[63] == '0' ? '1' : '0';
	assert_false(remote_hop_matches(&h, wrong, 64));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nets),  cmocka_unit_test(test_targets),
		cmocka_unit_test(test_apply), cmocka_unit_test(test_bound),
		cmocka_unit_test(test_hop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
