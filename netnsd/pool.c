/* netnsd's namespace pool (see pool.h). Slots are built in the background a few at a time so a
 * claim never waits behind the whole pool; release scrubs the slot in place. How many are built
 * follows pool-policy.c: claimed + spare, between min and max; a free slot idle past idle_ms
 * beyond that is taken down (a fixed pool has min == max and never shrinks). */
#include "pool.h"
#include "adopt.h"
#include "conntrack.h"
#include "fileio.h"
#include "isolation.h"
#include "log.h"
#include "macro.h"
#include "microvm-net.h"
#include "netlink.h"
#include "clock.h"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define BUILD_BATCH 4
/* A reservation no claim took within this long (or the pool's idle time, if longer) is
 * forgotten: its free slots then age out by the idle policy. Long enough for a big image's
 * verification, which runs between a fork's reservation and its first claim. */
#define RESERVE_MIN_MS 10000

struct pool {
	struct event_base *base;
	struct pool_config cfg;
	struct slot *slots;
	unsigned built; /* slots built now, anywhere in the table */
	/* creates announced by pool_reserve and not claimed yet: built for ahead, until
	 * reserve_until_us (monotonic) */
	unsigned reserved;
	uint64_t reserve_until_us;
	bool ready_logged;
	int host_ns;
	int host_nl;
	struct event *build_ev;
	struct event *shrink_ev; /* dynamic pools only */
	pool_available_fn available;
	void *ud;
};

unsigned
pool_default_size(void)
{
	uint64_t mem = 0;
	meminfo_bytes("MemTotal", &mem);
	/* a web sandbox holds ~20-30 MiB: one slot per 128 MiB leaves room for bigger ones and
	 * still fits a fork of 100 (bench/bench.py's) on a 24 GiB host (188 slots) */
	unsigned n = (unsigned)(mem / (128ull << 20));
	return n < 32 ? 32 : n > 1000 ? 1000 : n;
}

/* Enter a slot's namespace, run fn with a netlink socket there, come back. */
static int
in_slot(struct pool *p, struct slot *s, int (*fn)(struct pool *, struct slot *, int nl))
{
	if (setns(s->nsfd, CLONE_NEWNET) < 0)
		return -errno;
	int nl = nl_open(NETLINK_ROUTE);
	int r = nl < 0 ? nl : fn(p, s, nl);
	safe_close(nl);
	if (setns(p->host_ns, CLONE_NEWNET) < 0) {
		/* Stuck in a sandbox namespace is a broken invariant. */
		log_error_errno(-errno, "Cannot return to the host namespace: %m");
		abort();
	}
	return r;
}

int
slot_net_configure(int nl, uint32_t sandbox_addr, uint32_t host_addr)
{
	nl_links_delete_except(nl, (int)if_nametoindex("eth0"));
	int lo = (int)if_nametoindex("lo"), eth0 = (int)if_nametoindex("eth0");
	if (!lo || !eth0)
		return -ENODEV;
	int r = nl_link_set(nl, lo, true, -1);
	if (r == 0)
		r = nl_addr_flush(nl, eth0);
	if (r == 0)
		r = nl_addr_add(nl, eth0, sandbox_addr, 30);
	if (r == 0)
		r = nl_link_set(nl, eth0, true, -1);
	if (r == 0)
		r = nl_route_default(nl, eth0, host_addr);
	return r;
}

/* Inside the slot: what a new slot gets, and what a release re-does, since gVisor takes address
 * and route away when it starts. */
static int
slot_configure_inside(struct pool *p, struct slot *s, int nl)
{
	return slot_net_configure(nl, s->sandbox_addr, s->host_addr);
}

/* A released slot: what its sandbox left goes -- a microVM's tap with the other links, its NAT
 * table explicitly (a new slot has neither, a refreshed one keeps its sandbox's) -- and it is
 * configured again. */
static int
slot_scrub(struct pool *p, struct slot *s, int nl)
{
	int r = nl_nft_table_delete(NFPROTO_IPV4, MICROVM_NFT_TABLE);
	return r < 0 ? r : slot_configure_inside(p, s, nl);
}

/* Undo what a failed slot_build made: its namespace fd and its host veth (the peer goes with
 * it), so a failure leaks nothing however often it is tried. */
static void
slot_build_undo(struct pool *p, struct slot *s)
{
	int idx = (int)if_nametoindex(s->host_ifname);
	if (idx)
		nl_link_del(p->host_nl, idx);
	s->nsfd = safe_close(s->nsfd);
	s->host_ifindex = 0;
}

static int
slot_build_once(struct pool *p, struct slot *s)
{
	if (unshare(CLONE_NEWNET) < 0)
		return log_error_errno(-errno, "unshare(CLONE_NEWNET): %m");
	s->nsfd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int saved = -errno;
	if (setns(p->host_ns, CLONE_NEWNET) < 0)
		abort();
	if (s->nsfd < 0)
		return saved;
	struct stat st;
	fstat(s->nsfd, &st);
	s->ns_ino = st.st_ino;
	int old = (int)if_nametoindex(s->host_ifname);
	if (old)
		nl_link_del(p->host_nl, old); /* left by a netnsd that crashed */
	int r = nl_veth_create(p->host_nl, s->host_ifname, "eth0", s->nsfd);
	if (r < 0)
		return log_error_errno(r, "Slot %u: creating veth %s: %m", s->index,
				       s->host_ifname);
	s->host_ifindex = (int)if_nametoindex(s->host_ifname);
	r = nl_addr_add(p->host_nl, s->host_ifindex, s->host_addr, 30);
	if (r == 0)
		r = nl_link_set(p->host_nl, s->host_ifindex, true, 0);
	if (r == 0)
		r = in_slot(p, s, slot_configure_inside);
	if (r < 0)
		return log_error_errno(r, "Slot %u: configuring: %m", s->index);
	s->built = true;
	return 0;
}

static int
slot_build(struct pool *p, struct slot *s)
{
	int r = slot_build_once(p, s);
	if (r < 0)
		slot_build_undo(p, s);
	return r;
}

static unsigned
claimed_count(struct pool *p)
{
	unsigned n = 0;
	for (unsigned i = 0; i < p->cfg.size; i++)
		n += p->slots[i].built && p->slots[i].claimed;
	return n;
}

/* The creates still announced: a reservation past its time is dropped here, so its slots count
 * as spare again and the idle policy takes them down. */
static unsigned
reserved_now(struct pool *p)
{
	if (p->reserved && now_usec() >= p->reserve_until_us) {
		log_debug("Pool: reservation of %u creates lapsed unclaimed", p->reserved);
		p->reserved = 0;
	}
	return p->reserved;
}

/* Claimed before a restart and not adopted with a runtime: the supervisor still holds it, so
 * it is rebuilt whatever the target says. */
static bool
slot_owed(struct pool *p, struct slot *s)
{
	const struct adoption *a = p->cfg.adopt;
	return !s->built && !s->build_failed && a && s->index < a->n_claimed &&
	       a->claimed[s->index];
}

/* The next slot to build: one owed to the supervisor first, else the lowest unbuilt one while
 * the pool is below its target. */
static struct slot *
next_to_build(struct pool *p)
{
	for (unsigned i = 0; i < p->cfg.size; i++)
		if (slot_owed(p, &p->slots[i]))
			return &p->slots[i];
	if (p->built >= pool_policy_target(&p->cfg.policy, claimed_count(p) + reserved_now(p)))
		return NULL;
	for (unsigned i = 0; i < p->cfg.size; i++)
		if (!p->slots[i].built)
			return &p->slots[i];
	return NULL;
}

static void
build_some(evutil_socket_t fd, short what, void *arg)
{
	struct pool *p = arg;
	unsigned done = 0;
	struct slot *s;
	uint64_t t0 = now_usec();
	while (done < BUILD_BATCH && (s = next_to_build(p))) {
		bool owed = slot_owed(p, s);
		if (slot_build(p, s) < 0) {
			/* Leave the pool smaller rather than spin; the size is reported. */
			log_error("Pool stops at %u slots", p->built);
			p->cfg.policy.max = p->built;
			if (p->cfg.policy.min > p->built)
				p->cfg.policy.min = p->built;
			if (!owed)
				break;
			s->build_failed = true; /* stays unbuilt: next_to_build moves on */
			continue;
		}
		/* claimed before the restart: the supervisor still holds it and releases it */
		if (owed)
			s->claimed = s->quarantined = true;
		s->free_since_us = now_usec();
		p->built++;
		done++;
	}
	if (done)
		log_debug("Pool: built %u slots in %llu us (%u built, %u claimed)", done,
			  (unsigned long long)(now_usec() - t0), p->built, claimed_count(p));
	if (done && p->available)
		p->available(p, p->ud);
	if (next_to_build(p)) {
		struct timeval tv = {0, 1000};
		evtimer_add(p->build_ev, &tv);
	} else if (!p->ready_logged) {
		p->ready_logged = true;
		log_info("Namespace pool ready: %u slots (min %u, max %u, spare %u)", p->built,
			 p->cfg.policy.min, p->cfg.policy.max, p->cfg.policy.spare);
	}
}

/* More slots wanted (a claim took one): build in the background, never in the claim. */
static void
build_more(struct pool *p)
{
	if (!evtimer_pending(p->build_ev, NULL) && next_to_build(p)) {
		struct timeval tv = {0, 0};
		evtimer_add(p->build_ev, &tv);
	}
}

/* Take a free slot down: deleting the host end takes the pair, closing the fd the namespace. */
static void
slot_unbuild(struct pool *p, struct slot *s)
{
	if (s->host_ifindex)
		nl_link_del(p->host_nl, s->host_ifindex);
	s->nsfd = safe_close(s->nsfd);
	s->host_ifindex = 0;
	s->ns_ino = 0;
	s->built = false;
	p->built--;
}

static void
shrink_tick(evutil_socket_t fd, short what, void *arg)
{
	struct pool *p = arg;
	const struct pool_policy *pp = &p->cfg.policy;
	uint64_t now = now_usec(), idle_us = (uint64_t)pp->idle_ms * 1000;
	unsigned idle = 0;
	for (unsigned i = 0; i < p->cfg.size; i++) {
		struct slot *s = &p->slots[i];
		idle += s->built && !s->claimed && now - s->free_since_us >= idle_us;
	}
	unsigned k = pool_policy_shrink(pp, p->built, claimed_count(p) + reserved_now(p), idle);
	/* highest index first: claims take the lowest, so the table stays packed at the bottom */
	for (unsigned i = p->cfg.size; k && i-- > 0;) {
		struct slot *s = &p->slots[i];
		if (s->built && !s->claimed && now - s->free_since_us >= idle_us) {
			slot_unbuild(p, s);
			k--;
		}
	}
	build_more(p);
}

int
pool_new(struct event_base *base, const struct pool_config *cfg, pool_available_fn cb, void *ud,
	 struct pool **out)
{
	struct pool *p = calloc(1, sizeof *p);
	if (!p)
		return -ENOMEM;
	p->base = base;
	p->cfg = *cfg;
	p->available = cb;
	p->ud = ud;
	p->host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	p->host_nl = nl_open(NETLINK_ROUTE);
	p->slots = calloc(cfg->size, sizeof *p->slots);
	if (p->host_ns < 0 || p->host_nl < 0 || !p->slots) {
		pool_free(p);
		return -EIO;
	}
	uint32_t base_addr = ntohl(cfg->subnet);
	for (unsigned i = 0; i < cfg->size; i++) {
		struct slot *s = &p->slots[i];
		s->index = i;
		s->nsfd = -1;
		s->host_addr = htonl(base_addr + 4 * i + 1);
		s->sandbox_addr = htonl(base_addr + 4 * i + 2);
		snprintf(s->host_ifname, sizeof s->host_ifname, "%s%u", cfg->ifname_prefix, i);
	}
	/* adopt.c checked each: its namespace is its runtime's and the slot's veth its pair */
	for (size_t i = 0; cfg->adopt && i < cfg->adopt->n; i++) {
		const struct adopted *a = &cfg->adopt->items[i];
		if (a->slot >= cfg->size)
			continue;
		struct slot *s = &p->slots[a->slot];
		s->nsfd = fcntl(a->nsfd, F_DUPFD_CLOEXEC, 3);
		s->ns_ino = a->ns_ino;
		s->host_ifindex = (int)if_nametoindex(s->host_ifname);
		if (s->nsfd < 0 || !s->host_ifindex) {
			s->nsfd = safe_close(s->nsfd);
			continue;
		}
		s->built = s->claimed = true;
	}
	for (unsigned i = 0; i < cfg->size; i++)
		p->built += p->slots[i].built;
	p->build_ev = evtimer_new(base, build_some, p);
	struct timeval tv = {0, 0};
	evtimer_add(p->build_ev, &tv);
	if (cfg->policy.min < cfg->policy.max) {
		/* a quarter of the idle time between looks: a slot goes at most 25% late */
		unsigned ms = cfg->policy.idle_ms / 4;
		ms = ms < 100 ? 100 : ms > 5000 ? 5000 : ms;
		p->shrink_ev = event_new(base, -1, EV_PERSIST, shrink_tick, p);
		struct timeval st = {ms / 1000, (ms % 1000) * 1000};
		evtimer_add(p->shrink_ev, &st);
	}
	*out = p;
	return 0;
}

void
pool_free(struct pool *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->cfg.size; i++) {
		/* Deleting the host end takes the pair; closing the fd frees the namespace. A
		 * claimed slot stays: its runtime, or the supervisor, holds the namespace, and the
		 * next netnsd adopts or rebuilds it. */
		if (p->slots[i].built && p->slots[i].host_ifindex && !p->slots[i].claimed)
			nl_link_del(p->host_nl, p->slots[i].host_ifindex);
		safe_close(p->slots[i].nsfd);
	}
	if (p->build_ev)
		event_free(p->build_ev);
	if (p->shrink_ev)
		event_free(p->shrink_ev);
	safe_close(p->host_nl);
	safe_close(p->host_ns);
	free(p->slots);
	free(p);
}

int
pool_claim(struct pool *p, bool allow_outbound, struct slot **out)
{
	for (unsigned i = 0; i < p->cfg.size; i++) {
		struct slot *s = &p->slots[i];
		if (s->claimed || !s->built)
			continue;
		int r = nl_link_set(p->host_nl, s->host_ifindex, true,
				    allow_outbound ? ISOLATION_OUTBOUND_GROUP : 0);
		if (r < 0)
			return log_error_errno(r, "Slot %u: setting link group: %m", i);
		s->claimed = true;
		adopt_slots_set(p->cfg.slots_fd, i, true);
		if (p->reserved)
			p->reserved--; /* one of the announced creates came */
		*out = s;
		build_more(p);
		return 0;
	}
	build_more(p);
	return -EAGAIN;
}

unsigned
pool_reserve(struct pool *p, uint32_t count, uint64_t mem_available, unsigned *target)
{
	const struct pool_policy *pp = &p->cfg.policy;
	unsigned claimed = claimed_count(p);
	p->reserved = pool_policy_reserve(pp, claimed, reserved_now(p), count, mem_available);
	uint64_t ms = pp->idle_ms > RESERVE_MIN_MS ? pp->idle_ms : RESERVE_MIN_MS;
	p->reserve_until_us = now_usec() + ms * 1000;
	*target = pool_policy_target(pp, claimed + p->reserved);
	log_debug("Pool: %u creates announced, %u reserved, building up to %u (%u built)", count,
		  p->reserved, *target, p->built);
	build_more(p);
	return p->reserved;
}

int
pool_release(struct pool *p, unsigned index)
{
	if (index >= p->cfg.size || !p->slots[index].built || !p->slots[index].claimed)
		return -ENOENT;
	struct slot *s = &p->slots[index];
	int r = in_slot(p, s, slot_scrub);
	if (r < 0)
		return log_error_errno(r, "Slot %u: scrub failed, keeping it out of the pool: %m",
				       index);
	nl_link_set(p->host_nl, s->host_ifindex, true, 0);
	r = conntrack_flush_addr(s->sandbox_addr);
	if (r < 0)
		log_warning_errno(r, "Slot %u: conntrack flush: %m", index);
	s->claimed = s->quarantined = s->resynced = false;
	s->claimant = 0;
	s->free_since_us = now_usec();
	adopt_slots_set(p->cfg.slots_fd, index, false);
	if (p->available)
		p->available(p, p->ud);
	return 0;
}

int
pool_slot_outbound(struct pool *p, unsigned index, bool outbound)
{
	if (index >= p->cfg.size || !p->slots[index].built || !p->slots[index].claimed)
		return -ENOENT;
	return nl_link_set(p->host_nl, p->slots[index].host_ifindex, true,
			   outbound ? ISOLATION_OUTBOUND_GROUP : 0);
}

int
pool_slot_refresh(struct pool *p, unsigned index)
{
	if (index >= p->cfg.size || !p->slots[index].built || !p->slots[index].claimed)
		return -ENOENT;
	return in_slot(p, &p->slots[index], slot_configure_inside);
}

struct slot *
pool_slot(struct pool *p, unsigned index)
{
	return index < p->cfg.size && p->slots[index].built ? &p->slots[index] : NULL;
}

unsigned
pool_size(struct pool *p)
{
	return p->cfg.size;
}

const struct pool_policy *
pool_policy(struct pool *p)
{
	return &p->cfg.policy;
}

unsigned
pool_free_count(struct pool *p)
{
	unsigned n = 0;
	for (unsigned i = 0; i < p->cfg.size; i++)
		n += p->slots[i].built && !p->slots[i].claimed;
	return n;
}
