/* The gateway's route table: sandbox id -> address, port and state, set by the supervisor. The
 * bottom layer of the gateway (gateway/LAYERS): it owns the routes' data and tells whoever
 * listens (the prober, the proxy) what changed; it calls nothing above it. */
#include "clock.h"
#include "gateway.h"
#include "macro.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct route *
route_find(struct gateway *g, const char *id)
{
	for (struct route *r = g->routes; r; r = r->next)
		if (!strcmp(r->id, id))
			return r;
	return NULL;
}

struct route *
route_set(struct gateway *g, const char *id)
{
	struct route *r = route_find(g, id);
	if (r)
		return r;
	r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	snprintf(r->id, sizeof r->id, "%s", id);
	r->last_active_us = now_usec();
	r->next = g->routes;
	g->routes = r;
	return r;
}

void
route_remove(struct gateway *g, struct route *r)
{
	for (struct route **pp = &g->routes; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	r->state = -1; /* listeners see it gone: the prober drops its probe, held requests fail */
	route_changed(g, r);
	free(r);
}

unsigned
route_count(struct gateway *g)
{
	unsigned n = 0;
	for (struct route *r = g->routes; r; r = r->next)
		n += !r->remote; /* the supervisor's: what it counts on its Status poll */
	return n;
}

void
route_mark_active(struct route *r)
{
	r->last_active_us = now_usec();
	r->idle_reported = false;
}

int
route_listen(struct gateway *g, route_listener_fn fn)
{
	if (g->n_route_listeners >= ROUTE_MAX_LISTENERS)
		return -ENOSPC;
	g->route_listeners[g->n_route_listeners++] = fn;
	return 0;
}

void
route_changed(struct gateway *g, struct route *r)
{
	for (unsigned i = 0; i < g->n_route_listeners; i++)
		g->route_listeners[i](g, r);
}

/* A failed sandbox's reason, as a 502 will say it: any length is taken (a route refused for a
 * long reason would leave the sandbox "starting" and its clients waiting for a 504), cut at a
 * character boundary to what the route holds, control characters made spaces. */
void
route_set_reason(struct route *r, const char *reason)
{
	size_t n = strlen(reason);
	if (n >= sizeof r->reason) {
		n = sizeof r->reason - 1;
		while (n > 0 && ((unsigned char)reason[n] & 0xc0) == 0x80)
			n--; /* reason[n] would start the cut: keep whole UTF-8 sequences */
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)reason[i];
		r->reason[i] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
	}
	r->reason[n] = 0;
}

int
route_agent_token_valid(const char *t)
{
	size_t n = strlen(t);
	if (n != 0 && (n < 32 || n >= sizeof((struct route *)0)->agent_token))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!((t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f')))
			return -EINVAL;
	return 0;
}

/* Every byte compared whatever differs: the time says nothing about how much of a guess was
 * right. The length is not secret (the supervisor's tokens all have one). */
bool
route_agent_token_matches(const struct route *r, const char *value, size_t len)
{
	size_t n = strlen(r->agent_token);
	if (n == 0 || len != n)
		return false;
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(r->agent_token[i] ^ value[i]);
	return d == 0;
}
