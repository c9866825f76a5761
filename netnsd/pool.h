/* The namespace pool: network namespaces built ahead of time, each with a veth pair, addresses
 * and a default route, held by fd; claimed by a create, scrubbed and reused on release. */
#pragma once
#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "pool-policy.h"

struct slot {
	unsigned index;
	int nsfd;
	ino_t ns_ino;
	bool built, claimed;
	bool build_failed; /* an owed slot that could not be rebuilt: never tried again */
	bool quarantined;  /* claimed before a restart, or by a peer that hung up, no runtime: until
			    * the supervisor releases it or uses it, or a re-sync is over
			    * (netnsd-dispatch.c) */
	bool resynced;	   /* quarantined before a re-sync (ListSandboxes): freed when it is over */
	uint64_t claimant; /* the peer (ipc_call.peer_serial) whose claim it answers; 0: none */
	uint64_t free_since_us; /* built or released then: a dynamic pool takes idle ones down */
	/* the slot may have an egress allow-list chain (egress.h): set before the spawner is asked
	 * to write one, cleared once it removed it; a slot with it is never released without */
	bool egress_list;
	uint32_t host_addr, sandbox_addr; /* network order */
	char host_ifname[16];
	int host_ifindex;
};

struct adoption;
struct pool_config {
	unsigned size; /* the slot table: policy.max, or more to hold adopted slots */
	struct pool_policy policy;
	uint32_t subnet; /* network order, a /16 or larger is plenty */
	const char *ifname_prefix;
	/* restart without loss (adopt.h): slots whose runtime lives on are taken over as they
	 * are (claimed), slots the supervisor still holds are rebuilt but stay claimed */
	const struct adoption *adopt;
	int slots_fd; /* the claimed-slot file, -1 for none */
};

/* Claims that wait for a slot (timeout_ms > 0) beyond this many are answered at once with
 * -EAGAIN: each waiter holds a deferred call and a timer, and the supervisor is not trusted to
 * bound them. */
#define POOL_MAX_WAITERS 256

struct pool;
typedef void (*pool_available_fn)(struct pool *p, void *ud);

int pool_new(struct event_base *base, const struct pool_config *cfg, pool_available_fn cb, void *ud,
	     struct pool **out);
/* Frees the pool; free slots' veths are deleted, claimed ones (a runtime or the supervisor
 * holds them) stay for the next netnsd. */
void pool_free(struct pool *p);
/* First built, free slot; -EAGAIN when none. allow_outbound sets the veth's link group that the
 * nftables rules let out. */
int pool_claim(struct pool *p, bool allow_outbound, struct slot **out);
/* count creates are coming (a fork): slots for them are built now, in the background batches,
 * up to pool_policy_reserve's bound (mem_available: MemAvailable). Advisory: claims are
 * unchanged, each takes one off the reservation; one no claim took lapses (see pool.c). Returns
 * the reservation held now, *target the slots built up to. */
unsigned pool_reserve(struct pool *p, uint32_t count, uint64_t mem_available, unsigned *target);
int pool_release(struct pool *p, unsigned index);
/* Put a claimed slot's host veth in the outbound link group, or take it out (SetEgress). */
int pool_slot_outbound(struct pool *p, unsigned index, bool outbound);
/* In a slot's namespace (nl: its rtnetlink socket): lo up, eth0 alone with the sandbox address
 * (a /30, network order) and a default route through the host's end. The spawner calls it too,
 * before it restores a checkpointed gVisor sandbox in place. 0 or -errno. */
int slot_net_configure(int nl, uint32_t sandbox_addr, uint32_t host_addr);
/* Set the slot's address and route again (gVisor took them when a previous runtime started):
 * before a checkpointed sandbox is restored into its own slot. */
int pool_slot_refresh(struct pool *p, unsigned index);
struct slot *pool_slot(struct pool *p, unsigned index);
unsigned pool_size(struct pool *p);
const struct pool_policy *pool_policy(struct pool *p);
unsigned pool_free_count(struct pool *p);
/* Default size: one slot per 128 MiB of RAM, at least 32. */
unsigned pool_default_size(void);
