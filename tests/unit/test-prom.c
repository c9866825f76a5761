/* Unit tests of the Prometheus text helpers (common/prom.c): label values escaped as the format
 * wants, histograms cumulative with +Inf equal to the count, a bounded buffer failing instead
 * of growing, and the gateway's reason cut (gateway/routes.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

static void
test_escape(void **state)
{
	struct prom_buf b = {0};
	prom_escape(&b, "a\"b\\c\nd\te\x7f"
			"f");
	assert_string_equal(b.data, "a\\\"b\\\\c\\nd?e?f");
	prom_buf_free(&b);
	/* a hostile value cannot close the label and add one of its own */
	prom_append(&b, "x{id=\"", 6);
	prom_escape(&b, "\"} 1\nfake_metric 2");
	prom_append(&b, "\"}", 2);
	assert_null(strchr(b.data, '\n'));
	assert_string_equal(b.data, "x{id=\"\\\"} 1\\nfake_metric 2\"}");
	prom_buf_free(&b);
}

static void
test_histogram(void **state)
{
	struct prom_hist h = {0};
	prom_hist_observe(&h, 3000);	  /* 0.003 s: first bucket */
	prom_hist_observe(&h, 10000);	  /* 0.01 s: le="0.01" (inclusive) */
	prom_hist_observe(&h, 200000000); /* 200 s: above every bucket */
	struct prom_buf b = {0};
	prom_hist_write(&b, "t_seconds", "backend=\"gvisor\"", &h);
	assert_non_null(strstr(b.data, "t_seconds_bucket{backend=\"gvisor\",le=\"0.005\"} 1\n"));
	assert_non_null(strstr(b.data, "t_seconds_bucket{backend=\"gvisor\",le=\"0.01\"} 2\n"));
	assert_non_null(strstr(b.data, "t_seconds_bucket{backend=\"gvisor\",le=\"120\"} 2\n"));
	assert_non_null(strstr(b.data, "t_seconds_bucket{backend=\"gvisor\",le=\"+Inf\"} 3\n"));
	assert_non_null(strstr(b.data, "t_seconds_count{backend=\"gvisor\"} 3\n"));
	assert_non_null(strstr(b.data, "t_seconds_sum{backend=\"gvisor\"} 200.013000\n"));
	prom_buf_free(&b);
	prom_hist_write(&b, "u", "", &h);
	assert_non_null(strstr(b.data, "u_bucket{le=\"+Inf\"} 3\nu_sum 200.013000\nu_count 3\n"));
	prom_buf_free(&b);
}

static void
test_bounded(void **state)
{
	struct prom_buf b = {.max = 100};
	for (int i = 0; i < 50; i++)
		prom_printf(&b, "line %d\n", i);
	assert_true(b.failed);
	assert_true(b.len <= 100);
	prom_buf_free(&b);
	struct prom_buf big = {0};
	char line[2000];
	memset(line, 'x', sizeof line - 1);
	line[sizeof line - 1] = 0;
	prom_printf(&big, "%s", line); /* longer than prom_printf's stack buffer */
	assert_int_equal(big.len, sizeof line - 1);
	assert_false(big.failed);
	prom_buf_free(&big);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
