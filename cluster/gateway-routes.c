/* warren-clusterd: routing across hosts (docs/MULTIHOST.md). The remote part of the catalog
 * (every sandbox whose owner record names another host, with that host's gateway, or lost when
 * the host's lease lapsed) is pushed to the local gateway over its cluster socket, whole, each
 * time it changes: the gateway then proxies a request for such a sandbox to its host's gateway
 * without asking anyone (never an etcd read per request). The catalog is the one
 * catalog-watch.c keeps current with an etcd watch: a sandbox created or destroyed elsewhere is
 * routed, or no longer, as soon as its owner record's event arrives. The gateway checks every
 * target against its own configuration: what is sent here is a claim, not an order. */
#include "clusterd.h"
#include "ipc-client.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIECE 256 /* the gateway's GATEWAY_REMOTE_PER_PIECE */
#define MAX_ROUTES 16384
#define CALL_TIMEOUT_MS 5000

struct remote {
	char id[16], address[16], host[64];
	unsigned port;
	bool lost;
};

/* The hop token: what a gateway of this cluster marks a proxied request with, so the next one
 * knows it was proxied (and serves it only from local routes). Derived from the cluster key
 * (every host has it; the gateway cannot read it) and not the key itself: a gateway or a
 * sandbox's neighbour that learns the token learns nothing that opens clusterd's API. */
static void
hop_token(const char *key, char out[65])
{
	unsigned char md[32];
	unsigned len = 0;
	char *text = NULL;
	out[0] = 0;
	if (asprintf(&text, "warren-gateway-hop\n%s", key) < 0)
		return;
	if (EVP_Digest(text, strlen(text), md, &len, EVP_sha256(), NULL) && len == 32)
		for (unsigned i = 0; i < 32; i++)
			snprintf(out + 2 * i, 3, "%02x", md[i]);
	free(text);
}

static void
gateway_gone(struct ipc_client *client, void *ud)
{
	struct cluster *c = ud;
	(void)client;
	/* a gateway that restarts has no remote route: push the whole table again */
	free(c->routes_pushed);
	c->routes_pushed = NULL;
	log_info("The gateway's cluster socket closed: remote routes are pushed again on "
		 "reconnect");
}

int
gateway_routes_init(struct cluster *c)
{
	if (!c->gateway_socket)
		return 0;
	hop_token(c->key, c->hop_token);
	if (strlen(c->hop_token) != 64)
		return -EIO;
	c->gw = ipc_client_new(c->base, "gateway", NULL, gateway_gone, c);
	return c->gw ? 0 : -ENOMEM;
}

/* "http://A.B.C.D:PORT" (a trailing slash allowed), as --gateway-url publishes it */
static bool
parse_gateway_url(const char *url, struct remote *r)
{
	char addr[32];
	if (!url || strncmp(url, "http://", 7))
		return false;
	url += 7;
	size_t n = strcspn(url, "/");
	if (n >= sizeof addr || (url[n] && strcmp(url + n, "/")))
		return false;
	memcpy(addr, url, n);
	addr[n] = 0;
	if (!cluster_input_addr_ok(addr))
		return false;
	char *colon = strrchr(addr, ':');
	*colon = 0; /* cluster_input_addr_ok: at most 15 characters before it */
	if ((size_t)(colon - addr) >= sizeof r->address)
		return false;
	memcpy(r->address, addr, (size_t)(colon - addr) + 1);
	r->port = (unsigned)atoi(colon + 1);
	return true;
}

static int
by_id(const void *a, const void *b)
{
	return strcmp(((const struct remote *)a)->id, ((const struct remote *)b)->id);
}

/* The remote routes from the watched owner and host records, sorted by id: the same catalog
 * gives the same table, and no push. */
static int
build(struct cluster *c, const struct catalog_table *t, struct remote **out, size_t *n)
{
	size_t n_owners = json_object_size(t->owners);
	const char *id;
	json_t *host_j;
	*out = calloc(n_owners ? n_owners : 1, sizeof **out);
	*n = 0;
	if (!*out)
		return -ENOMEM;
	json_object_foreach(t->owners, id, host_j)
	{
		const char *host = json_string_value(host_j);
		struct remote *r = &(*out)[*n];
		if (*n == n_owners || !host || !strcmp(host, c->name))
			continue;
		memset(r, 0, sizeof *r);
		json_t *h = json_object_get(t->hosts, host);
		snprintf(r->id, sizeof r->id, "%s", id);
		snprintf(r->host, sizeof r->host, "%s", host);
		r->lost = !h; /* its lease lapsed: 503 at once, not a connect to nobody */
		if (r->lost || parse_gateway_url(json_string_value(h), r))
			(*n)++;
		else
			log_debug("Host %s publishes no usable gateway URL: %s not routed", host,
				  id);
	}
	qsort(*out, *n, sizeof **out, by_id);
	if (*n > MAX_ROUTES) {
		log_warning("%zu remote routes: the gateway takes the first %d", *n, MAX_ROUTES);
		*n = MAX_ROUTES;
	}
	return 0;
}

static char *
serialize(const struct remote *r, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s %s %s:%u %d\n", r[i].id, r[i].host, r[i].address, r[i].port,
			r[i].lost);
	fputc(0, f);
	return fclose(f) == 0 ? text : (free(text), NULL);
}

struct push {
	struct cluster *c;
	char *table;
	unsigned left;
	int error;
};

static void
pushed(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct push *p = ud;
	(void)fds;
	(void)n_fds;
	if (r < 0 && !p->error) {
		p->error = r;
		log_warning_errno(r, "The gateway did not take the remote routes: %s",
				  resp && resp->message ? resp->message : strerror(-r));
	}
	if (--p->left)
		return;
	p->c->routes_busy = false;
	free(p->c->routes_pushed);
	/* a push the gateway refused leaves nothing pushed: the next tick pushes again */
	p->c->routes_pushed = p->error ? NULL : p->table;
	if (!p->error)
		p->table = NULL;
	free(p->table);
	struct cluster *c = p->c;
	free(p);
	if (c->routes_dirty)
		gateway_routes_refresh(c);
}

static int
push(struct cluster *c, const struct remote *routes, size_t n, char *table)
{
	struct push *p = calloc(1, sizeof *p);
	if (!p)
		return -ENOMEM;
	*p = (struct push){.c = c, .table = table};
	c->routes_generation++;
	size_t at = 0;
	do {
		size_t k = n - at < PIECE ? n - at : PIECE;
		Warren__V1__RemoteRoute rr[PIECE], *ptrs[PIECE];
		for (size_t i = 0; i < k; i++) {
			warren__v1__remote_route__init(&rr[i]);
			rr[i].id = (char *)routes[at + i].id;
			rr[i].address = (char *)routes[at + i].address;
			rr[i].port = routes[at + i].port;
			rr[i].host = (char *)routes[at + i].host;
			rr[i].lost = routes[at + i].lost;
			ptrs[i] = &rr[i];
		}
		Warren__V1__SetRemoteRoutesRequest q = WARREN__V1__SET_REMOTE_ROUTES_REQUEST__INIT;
		q.generation = c->routes_generation;
		q.hop_token = c->hop_token;
		q.routes = ptrs;
		q.n_routes = k;
		q.last = at + k == n;
		IpcRequest req = WARREN__V1__REQUEST__INIT;
		req.body_case = WARREN__V1__REQUEST__BODY_SET_REMOTE_ROUTES;
		req.set_remote_routes = &q;
		p->left++;
		int r = ipc_client_call(c->gw, &req, NULL, 0, CALL_TIMEOUT_MS, pushed, p);
		if (r < 0) {
			/* the calls already sent answer (or time out) and free p */
			p->error = r;
			if (--p->left == 0) {
				free(p->table);
				free(p);
				return r;
			}
			c->routes_busy = true;
			return r;
		}
		at += k;
	} while (at < n);
	c->routes_busy = true;
	return 0;
}

void
gateway_routes_refresh(struct cluster *c)
{
	const struct catalog_table *t = catalog_watch_table(c);
	if (!c->gw || !t)
		return; /* off, or not read yet: the gateway keeps what it has */
	if (c->routes_busy) {
		c->routes_dirty = true;
		return;
	}
	c->routes_dirty = false;
	if (!ipc_client_connected(c->gw)) {
		int r = ipc_client_connect(c->gw, c->gateway_socket, (uid_t)-1);
		if (r < 0) {
			log_debug("Cannot reach the gateway at %s: %s", c->gateway_socket,
				  strerror(-r));
			return;
		}
		log_info("Connected to the gateway's cluster socket %s", c->gateway_socket);
	}
	struct remote *routes = NULL;
	size_t n = 0;
	char *table = NULL;
	if (build(c, t, &routes, &n) >= 0)
		table = serialize(routes, n);
	if (table && (!c->routes_pushed || strcmp(table, c->routes_pushed))) {
		log_debug("Pushing %zu remote routes to the gateway", n);
		push(c, routes, n, table); /* takes table */
		table = NULL;
	}
	free(table);
	free(routes);
}
