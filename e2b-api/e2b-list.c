/* warren-e2b-api: a list's entries put in order (start time, then id) with each sandbox once,
 * whichever hosts answered for it (pure: unit-tested). O(n log n): two sorts, neighbours
 * compared; an entry of this host's records wins over a peer's for the same id. */
#include "e2b-api.h"

#include <stdlib.h>
#include <string.h>

static int
cmp_id(const void *x, const void *y)
{
	const struct e2b_list_entry *a = x, *b = y;
	int r = strcmp(a->id, b->id);
	if (r)
		return r;
	if (a->origin != b->origin)
		return a->origin < b->origin ? -1 : 1;
	return 0;
}

static int
cmp_entry(const void *x, const void *y)
{
	const struct e2b_list_entry *a = x, *b = y;
	if (a->started_usec != b->started_usec)
		return a->started_usec < b->started_usec ? -1 : 1;
	return strcmp(a->id, b->id);
}

size_t
e2b_list_sort(struct e2b_list_entry *v, size_t n)
{
	if (n < 2)
		return n;
	qsort(v, n, sizeof *v, cmp_id);
	size_t k = 1;
	for (size_t i = 1; i < n; i++) {
		if (!strcmp(v[i].id, v[k - 1].id)) {
			json_decref(v[i].j);
			continue;
		}
		v[k++] = v[i];
	}
	qsort(v, k, sizeof *v, cmp_entry);
	return k;
}
