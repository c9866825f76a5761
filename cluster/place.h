/* warren-clusterd's placement policy (pure: no I/O, unit-tested). docs/MULTIHOST.md. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PLACE_MAX_HOSTS 256

struct place_host {
	char name[64];
	uint32_t free_slots;  /* as the host published: its pending creates already taken off */
	uint64_t mem_avail;   /* bytes */
	uint32_t standby;     /* standby sandboxes ready for the asked template */
	bool warm, accepting; /* the asked template is warm there; the host takes creates */
};
/* a create this placer forwarded to a host and whose answer it has not had yet */
struct place_reservation {
	char name[64];
	unsigned count;
};

/* Orders the hosts a create should be tried on into order[] (indexes into hosts), best first;
 * returns how many (0: the cluster is full). Hosts that do not accept or publish no free slot
 * are left out. The first K are a random sample (rnd: a random number per call) of the hosts
 * with a slot left once this placer's reservations are taken off, ranked by: a standby ready,
 * then the template warm, then free memory, then free slots; the other such hosts follow ranked
 * the same way, then the hosts whose slots this placer has all reserved. */
size_t place_order(const struct place_host *hosts, size_t n, const struct place_reservation *res,
		   size_t n_res, unsigned k, uint32_t (*rnd)(void *), void *rnd_arg, size_t *order);
void place_reserve(struct place_reservation *res, size_t *n_res, const char *name, int delta);
