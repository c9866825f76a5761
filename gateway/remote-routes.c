/* The gateway's remote routes: sandboxes of other hosts of the cluster, each routed to its
 * owning host's gateway (docs/MULTIHOST.md, "Routing across hosts"). warren-clusterd reads the
 * catalog from etcd and pushes the whole table here when it changes; this file keeps the part of
 * the gateway's trust decisions that do not depend on clusterd: a target is only ever an address
 * of the operator's --cluster-net on the --cluster-port, a local route (the supervisor's) always
 * wins, and the table is bounded. So a compromised clusterd or a forged etcd record can at worst
 * send a client to another host's gateway, never to an arbitrary address. Layer 2 (LAYERS): it
 * changes the table through routes.c and its listeners hear of it as of any route. */
#include "gateway.h"
#include "log.h"
#include "macro.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct remote_entry {
	char id[SANDBOX_ID_LEN + 1];
	struct sockaddr_in sa;
	char host[64];
	bool lost;
};

/* the pieces of one table as they arrive: applied at its last piece */
struct remote_staging {
	uint64_t generation;
	struct remote_entry *e;
	size_t n, cap;
};

int
remote_nets_parse(struct gateway *g, const char *list)
{
	_cleanup_free_ char *copy = strdup(list);
	char *save = NULL;
	if (!copy)
		return -ENOMEM;
	g->n_cluster_nets = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *slash = strchr(t, '/'), *end;
		struct in_addr a;
		if (!slash || g->n_cluster_nets == GATEWAY_CLUSTER_NETS)
			return -EINVAL;
		*slash = 0;
		long bits = strtol(slash + 1, &end, 10);
		/* a /0 would let a forged catalog name any address: the point of this check */
		if (inet_pton(AF_INET, t, &a) != 1 || *end || end == slash + 1 || bits < 8 ||
		    bits > 32)
			return -EINVAL;
		uint32_t mask = htonl(bits == 32 ? 0xffffffffu : ~(0xffffffffu >> bits));
		g->cluster_nets[g->n_cluster_nets].net = a.s_addr & mask;
		g->cluster_nets[g->n_cluster_nets++].mask = mask;
	}
	return g->n_cluster_nets ? 0 : -EINVAL;
}

bool
remote_target_ok(const struct gateway *g, const char *address, uint32_t port,
		 struct sockaddr_in *sa)
{
	struct in_addr a;
	if (!g->cluster_port || port != g->cluster_port || inet_pton(AF_INET, address, &a) != 1)
		return false;
	for (unsigned i = 0; i < g->n_cluster_nets; i++)
		if ((a.s_addr & g->cluster_nets[i].mask) == g->cluster_nets[i].net) {
			*sa = (struct sockaddr_in){.sin_family = AF_INET,
						   .sin_port = htons((uint16_t)port),
						   .sin_addr = a};
			return true;
		}
	return false;
}

bool
remote_hop_matches(const struct gateway *g, const char *value, size_t len)
{
	size_t n = strlen(g->hop_token);
	if (n == 0 || len != n)
		return false;
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(g->hop_token[i] ^ value[i]);
	return d == 0;
}

unsigned
remote_count(struct gateway *g)
{
	unsigned n = 0;
	for (struct route *r = g->routes; r; r = r->next)
		n += r->remote;
	return n;
}

static void
staging_free(struct gateway *g)
{
	if (g->staging)
		free(g->staging->e);
	free(g->staging);
	g->staging = NULL;
}

void
remote_routes_peer_gone(void *ud, uint64_t peer_serial)
{
	/* a table half sent is dropped; the routes applied stay (the sandboxes still run) and
	 * clusterd pushes the whole table again when it reconnects */
	staging_free(ud);
}

/* Replace the remote routes by the staged table. A route whose target or lost flag changed is
 * announced (held requests and idle upstream connections to the old target go); one that did
 * not change is left alone, so its pooled connections stay. */
static void
apply(struct gateway *g, const struct remote_entry *e, size_t n)
{
	for (struct route *r = g->routes; r; r = r->next)
		r->remote_seen = false;
	for (size_t i = 0; i < n; i++) {
		struct route *r = route_find(g, e[i].id);
		if (r && !r->remote)
			continue; /* the supervisor's: it runs here (a stale catalog says not) */
		bool fresh = !r;
		if (fresh && !(r = route_set(g, e[i].id))) {
			log_warning("Out of memory for the remote route of %s", e[i].id);
			continue;
		}
		bool changed = fresh || r->lost != e[i].lost ||
			       r->sa.sin_addr.s_addr != e[i].sa.sin_addr.s_addr ||
			       r->sa.sin_port != e[i].sa.sin_port;
		r->remote = true;
		r->remote_seen = true;
		r->lost = e[i].lost;
		r->sa = e[i].sa;
		r->state = WARREN__V1__ROUTE_STATE__ROUTE_RUNNING;
		snprintf(r->host, sizeof r->host, "%s", e[i].host);
		if (changed)
			route_changed(g, r);
	}
	for (struct route *r = g->routes, *next; r; r = next) {
		next = r->next;
		if (r->remote && !r->remote_seen)
			route_remove(g, r); /* destroyed, or its owner record gone */
	}
}

int
remote_routes_piece(struct gateway *g, uint64_t generation, const char *hop_token,
		    const Warren__V1__RemoteRoute *const *routes, size_t n, bool last)
{
	if (g->staging && g->staging->generation != generation)
		staging_free(g); /* a table that never got its last piece: its sender restarted */
	if (!g->staging) {
		g->staging = calloc(1, sizeof *g->staging);
		if (!g->staging)
			return -ENOMEM;
		g->staging->generation = generation;
	}
	struct remote_staging *s = g->staging;
	if (s->n + n > GATEWAY_REMOTE_MAX) {
		staging_free(g);
		return -E2BIG;
	}
	if (s->n + n > s->cap) {
		size_t cap = s->cap ? s->cap : 64;
		while (cap < s->n + n)
			cap *= 2;
		struct remote_entry *bigger = realloc(s->e, cap * sizeof *bigger);
		if (!bigger) {
			staging_free(g);
			return -ENOMEM;
		}
		s->e = bigger;
		s->cap = cap;
	}
	for (size_t i = 0; i < n; i++) {
		struct remote_entry *e = &s->e[s->n];
		memset(e, 0, sizeof *e);
		if (!routes[i]->lost &&
		    !remote_target_ok(g, routes[i]->address, routes[i]->port, &e->sa)) {
			/* logged once per push, and clusterd pushes only when the catalog changed
			 */
			log_warning("Refused the remote route of sandbox %s: host %s's gateway "
				    "%.64s:%u is not in --cluster-net on --cluster-port",
				    routes[i]->id, routes[i]->host, routes[i]->address,
				    routes[i]->port);
			continue;
		}
		snprintf(e->id, sizeof e->id, "%s", routes[i]->id);
		snprintf(e->host, sizeof e->host, "%s", routes[i]->host);
		e->lost = routes[i]->lost;
		s->n++;
	}
	if (!last)
		return 0;
	snprintf(g->hop_token, sizeof g->hop_token, "%s", hop_token);
	apply(g, s->e, s->n);
	log_debug("Remote routes: %zu (generation %llu)", s->n, (unsigned long long)generation);
	staging_free(g);
	return 0;
}
