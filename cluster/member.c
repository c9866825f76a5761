/* warren-clusterd: this host in the cluster. Every tick (one second) it keeps its lease alive
 * (or takes a new one and registers again once the old one lapsed), publishes its capacity under
 * the lease, and writes the catalog records of its sandboxes from the supervisor's list. The
 * capacity it publishes already counts its pending creates (accepted, not yet answered by the
 * supervisor), so a record read from the supervisor before those creates claimed their slots
 * can never show a slot that is promised away (docs/MULTIHOST.md, "the placement race"). */
#include "clusterd.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t
cluster_now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

char *
cluster_key(struct cluster *c, const char *kind, const char *name)
{
	char *k = NULL;
	return asprintf(&k, "%s/%s/%s", c->prefix, kind, name ? name : "") < 0 ? NULL : k;
}

/* Creates are taken only while the lease is surely alive: etcd answered a keepalive within
 * half the lease's time. A host cut off from etcd stops accepting creates (its lease, and so its
 * capacity record, lapse soon after) and keeps serving the sandboxes it runs. */
bool
cluster_connected(struct cluster *c)
{
	return c->registered &&
	       cluster_now_usec() - c->last_keepalive_usec < (uint64_t)c->lease_ttl * 500000;
}

/* free slots = the pool's free slots, and never more than its size less the sandboxes listed
 * (a create waiting for a slot is listed before it holds one), less the creates accepted here
 * and not sent yet. The list is read after every create sent on this connection (the
 * supervisor handles one connection's calls in order), so those are in it. */
int
member_free_slots(struct cluster *c, uint32_t *free_slots, uint32_t *pool_size)
{
	uint32_t size = 0, pool_free = 0;
	struct local_sandbox *list = NULL;
	size_t n = 0;
	int r = cluster_bus_pool(c, &size, &pool_free);
	if (r >= 0)
		r = cluster_bus_list(c, &list, &n);
	if (r < 0)
		return r;
	free(c->local);
	c->local = list;
	c->n_local = n;
	int64_t f = pool_free;
	if ((int64_t)size - (int64_t)n < f)
		f = (int64_t)size - (int64_t)n;
	f -= c->pending;
	*free_slots = f > 0 ? (uint32_t)f : 0;
	*pool_size = size;
	return 0;
}

static void
read_host_load(uint64_t *mem_avail, double *load1)
{
	char line[256];
	*mem_avail = 0;
	*load1 = 0;
	FILE *f = fopen("/proc/meminfo", "re");
	if (f) {
		unsigned long long kb;
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
				*mem_avail = kb * 1024;
		fclose(f);
	}
	f = fopen("/proc/loadavg", "re");
	if (f) {
		if (fscanf(f, "%lf", load1) != 1)
			*load1 = 0;
		fclose(f);
	}
}

int
member_publish(struct cluster *c)
{
	uint32_t free_slots = 0, size = 0;
	uint64_t mem;
	double load1;
	if (!c->registered)
		return -ENOTCONN;
	int r = member_free_slots(c, &free_slots, &size);
	if (r < 0)
		return log_warning_errno(r, "Cannot read the supervisor's pool: %m");
	read_host_load(&mem, &load1);
	json_t *j =
		json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:f, s:o, s:b}", "name", c->name,
			  "clusterd", c->advertise, "gateway", c->gateway_url, "pool_size",
			  (int)size, "free_slots", (int)free_slots, "pending",
			  (int)(c->pending + c->inflight), "mem_avail", (json_int_t)mem, "load1",
			  load1, "warm", cluster_bus_warm(c), "accepting", cluster_connected(c));
	/* the E2B control plane, for the other hosts' (docs/MULTIHOST.md, "The E2B front door") */
	if (j && c->e2b_url)
		json_object_set_new(j, "e2b", json_string(c->e2b_url));
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	_cleanup_free_ char *key = cluster_key(c, "hosts", c->name);
	json_decref(j);
	if (!text || !key)
		return -ENOMEM;
	return etcd_put(&c->etcd, key, text, c->lease);
}

/* is this owner record (id -> host) in the catalog? From the watched table once it is read
 * (no range read each tick), else from the range read */
static const char *
owner_host(const struct catalog_table *t, const struct etcd_kv *owners, size_t n_owners,
	   const char *op, const char *id)
{
	if (t)
		return json_string_value(json_object_get(t->owners, id));
	for (size_t j = 0; j < n_owners; j++)
		if (!strcmp(owners[j].key + strlen(op), id))
			return "";
	return NULL;
}

/* the catalog: a leased record per local sandbox (its state; it lapses with the host), and a
 * lasting owner record (so a lapsed host's sandboxes are reported lost, not forgotten). The
 * owner records come from the watched catalog (catalog-watch.c) once it is read. */
static void
catalog_sync(struct cluster *c, bool fresh_lease)
{
	struct etcd_kv *owners = NULL, *recs = NULL;
	size_t n_owners = 0, n_recs = 0;
	const struct catalog_table *t = catalog_watch_table(c);
	_cleanup_free_ char *op = cluster_key(c, "owners", NULL);
	_cleanup_free_ char *sp = cluster_key(c, "sandboxes", NULL);
	if (!op || !sp || (!t && etcd_range_prefix(&c->etcd, op, &owners, &n_owners) < 0) ||
	    etcd_range_prefix(&c->etcd, sp, &recs, &n_recs) < 0)
		goto out;
	for (size_t i = 0; i < c->n_local; i++) {
		struct local_sandbox *s = &c->local[i];
		json_t *rec = json_pack("{s:s, s:s, s:s, s:s}", "id", s->id, "host", c->name,
					"state", s->state, "template", s->template);
		_cleanup_free_ char *text =
			rec ? json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		json_decref(rec);
		_cleanup_free_ char *k = cluster_key(c, "sandboxes", s->id);
		_cleanup_free_ char *ok = cluster_key(c, "owners", s->id);
		if (!text || !k || !ok)
			continue;
		bool same = false;
		for (size_t j = 0; j < n_recs; j++)
			if (!strcmp(recs[j].key, k) && !strcmp(recs[j].value, text))
				same = true;
		if (!same || fresh_lease)
			etcd_put(&c->etcd, k, text, c->lease);
		if (!owner_host(t, owners, n_owners, op, s->id)) {
			json_t *o =
				json_pack("{s:s, s:s}", "host", c->name, "template", s->template);
			_cleanup_free_ char *ot = o ? json_dumps(o, JSON_COMPACT) : NULL;
			json_decref(o);
			if (ot)
				etcd_put(&c->etcd, ok, ot, 0);
		}
	}
	/* owner records of this host whose sandbox is gone: the sandbox was destroyed */
	json_t *stale = json_array();
	if (t) {
		const char *id;
		json_t *h;
		json_object_foreach(t->owners, id, h)
		{
			if (!strcmp(json_string_value(h), c->name))
				json_array_append_new(stale, json_string(id));
		}
	}
	for (size_t j = 0; !t && j < n_owners; j++) {
		json_error_t err;
		json_t *o = json_loads(owners[j].value, 0, &err);
		const char *host = json_string_value(json_object_get(o, "host"));
		if (host && !strcmp(host, c->name))
			json_array_append_new(stale, json_string(owners[j].key + strlen(op)));
		json_decref(o);
	}
	size_t j;
	json_t *idj;
	json_array_foreach(stale, j, idj)
	{
		const char *id = json_string_value(idj);
		bool here = false;
		for (size_t i = 0; i < c->n_local; i++)
			here |= !strcmp(c->local[i].id, id);
		if (!here) {
			_cleanup_free_ char *k = cluster_key(c, "sandboxes", id);
			_cleanup_free_ char *ok = cluster_key(c, "owners", id);
			if (k)
				etcd_delete(&c->etcd, k);
			if (ok)
				etcd_delete(&c->etcd, ok);
		}
	}
	json_decref(stale);
out:
	etcd_kvs_free(owners, n_owners);
	etcd_kvs_free(recs, n_recs);
}

void
member_tick(evutil_socket_t fd, short what, void *arg)
{
	struct cluster *c = arg;
	bool fresh = false;
	(void)fd;
	(void)what;
	if (c->registered) {
		int64_t ttl = 0;
		int r = etcd_lease_keepalive(&c->etcd, c->lease, &ttl);
		if (r >= 0 && ttl > 0) {
			c->last_keepalive_usec = cluster_now_usec();
		} else if (r >= 0) {
			log_warning("The lease lapsed: registering again");
			c->registered = false;
		} else if (cluster_connected(c)) {
			log_debug("etcd keepalive failed: %s", strerror(-r));
		}
		if (!cluster_connected(c) && c->registered && r < 0)
			log_debug("Cut off from etcd: not accepting creates");
	}
	if (!c->registered) {
		int r = etcd_lease_grant(&c->etcd, c->lease_ttl, &c->lease);
		if (r < 0) {
			log_debug("Cannot reach etcd to register: %s", strerror(-r));
			return;
		}
		c->registered = true;
		c->last_keepalive_usec = cluster_now_usec();
		fresh = true;
		/* the old lease took this host's tag records: all of them are written again, until
		 * a sync writes them all (a failed publish skips this tick's) */
		free(c->tags_published);
		c->tags_published = NULL;
		log_info("Registered as %s (lease %llx, %d s)", c->name,
			 (unsigned long long)c->lease, c->lease_ttl);
	}
	if (member_publish(c) >= 0) {
		catalog_sync(c, fresh);
		cluster_fork_tags_sync(c, fresh);
	}
	/* the gateway came back (or a push failed): push the table again */
	if (!c->routes_pushed)
		gateway_routes_refresh(c);
}
