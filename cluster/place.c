/* warren-clusterd: the placement policy, best of K. Sampling K hosts at random rather than
 * taking the best of all spreads concurrent creates from many front doors (they do not all pile
 * onto the one host that looked best), while ranking the sample by standby, warm and free memory
 * keeps the choice good. Pure: the caller reads the hosts from etcd and supplies randomness. */
#include "place.h"

#include <string.h>

static unsigned
reserved(const struct place_reservation *res, size_t n_res, const char *name)
{
	for (size_t i = 0; i < n_res; i++)
		if (!strcmp(res[i].name, name))
			return res[i].count;
	return 0;
}

/* <0 if a is better than b */
static int
compare(const struct place_host *a, const struct place_host *b)
{
	if ((a->standby > 0) != (b->standby > 0))
		return a->standby > 0 ? -1 : 1;
	if (a->warm != b->warm)
		return a->warm ? -1 : 1;
	if (a->mem_avail != b->mem_avail)
		return a->mem_avail > b->mem_avail ? -1 : 1;
	if (a->free_slots != b->free_slots)
		return a->free_slots > b->free_slots ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void
sort(const struct place_host *hosts, size_t *idx, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && compare(&hosts[idx[j]], &hosts[idx[j - 1]]) < 0; j--) {
			size_t t = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
}

size_t
place_order(const struct place_host *hosts, size_t n, const struct place_reservation *res,
	    size_t n_res, unsigned k, uint32_t (*rnd)(void *), void *rnd_arg, size_t *order)
{
	size_t m = 0, last = 0;
	if (n > PLACE_MAX_HOSTS)
		n = PLACE_MAX_HOSTS;
	/* hosts with a slot left once this placer's reservations are taken off come first; hosts
	 * whose free slots this placer has all reserved come last, as a last resort: a host's
	 * record may already count those creates, and it refuses at once if it is full */
	for (size_t i = 0; i < n; i++)
		if (hosts[i].accepting && hosts[i].free_slots > reserved(res, n_res, hosts[i].name))
			order[m++] = i;
	last = m;
	for (size_t i = 0; i < n; i++)
		if (hosts[i].accepting && hosts[i].free_slots > 0 &&
		    hosts[i].free_slots <= reserved(res, n_res, hosts[i].name))
			order[last++] = i;
	if (k == 0)
		k = 1;
	/* a partial Fisher-Yates shuffle picks the sample into order[0..k) */
	size_t s = k < m ? k : m;
	for (size_t i = 0; i < s && m > 1; i++) {
		size_t j = i + rnd(rnd_arg) % (m - i);
		size_t t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	sort(hosts, order, s);
	sort(hosts, order + s, m - s);
	sort(hosts, order + m, last - m);
	return last;
}

void
place_reserve(struct place_reservation *res, size_t *n_res, const char *name, int delta)
{
	size_t i;
	for (i = 0; i < *n_res; i++)
		if (!strcmp(res[i].name, name))
			break;
	if (i == *n_res) {
		if (delta <= 0 || *n_res == PLACE_MAX_HOSTS)
			return;
		memset(&res[i], 0, sizeof res[i]);
		strncpy(res[i].name, name, sizeof res[i].name - 1);
		(*n_res)++;
	}
	if (delta < 0 && res[i].count < (unsigned)-delta)
		res[i].count = 0;
	else
		res[i].count += delta;
}
