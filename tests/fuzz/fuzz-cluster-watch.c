/* libFuzzer harness: what etcd's JSON gateway sends warren-clusterd for its watched catalog
 * (cluster/catalog-table.c): one line of a POST /v3/watch stream and a POST /v3/kv/range
 * answer, parsed and applied to a table. Beyond "no crash": whatever is accepted leaves a table
 * within its bounds whose every entry passes the checks a route's id and host must pass. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "clusterd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const struct catalog_table *t)
{
	const char *k;
	json_t *v;
	if (json_object_size(t->owners) > CATALOG_MAX_OWNERS ||
	    json_object_size(t->hosts) > CATALOG_MAX_HOSTS)
		abort();
	json_object_foreach(t->owners, k, v)
	{
		if (!cluster_input_id_ok(k) || !cluster_input_name_ok(json_string_value(v)))
			abort();
	}
	json_object_foreach(t->hosts, k, v)
	{
		if (!cluster_input_name_ok(k) || !json_is_string(v) ||
		    strlen(json_string_value(v)) > CATALOG_URL_MAX)
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct catalog_msg m;
	struct catalog_table t;
	if (size > 65536 || catalog_table_init(&t) < 0)
		return 0;
	if (catalog_parse_watch((const char *)data, size, &m) == 0) {
		if (m.n > CATALOG_MAX_EVENTS)
			abort();
		catalog_table_apply(&t, "/warren", &m);
		catalog_msg_clear(&m);
	}
	if (catalog_parse_range((const char *)data, size, &m) == 0) {
		if (m.revision <= 0)
			abort();
		catalog_table_apply(&t, "/warren", &m);
		catalog_msg_clear(&m);
	}
	check(&t);
	catalog_table_clear(&t);
	return 0;
}
