/* The gateway's request tables: routes from the supervisor on its socket, remote routes from
 * warren-clusterd on the cluster socket (each socket has its own table, so neither peer can send
 * the other's requests). The gateway holds no privilege, so a bad request is answered with an
 * error rather than dropping the peer. */
#include "gateway.h"
#include "log.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

static int
handle_status(struct ipc_call *call, void *ud)
{
	struct gateway *g = ud;
	if (g->status_seen < 2)
		g->status_seen++;
	Warren__V1__StatusResponse st;
	ipc_status_init(&st, "gateway", true);
	st.routes = route_count(g);
	return ipc_call_reply_status(call, &st);
}

static int
handle_set_route(struct ipc_call *call, void *ud)
{
	struct gateway *g = ud;
	const Warren__V1__SetRouteRequest *q = call->req->set_route;
	struct in_addr a;
	if (!sandbox_id_valid(q->id))
		return ipc_call_error(call, -EINVAL, "bad sandbox id");
	if (inet_pton(AF_INET, q->address, &a) != 1 || !port_valid(q->port))
		return ipc_call_error(call, -EINVAL, "bad address or port");
	if (q->state > WARREN__V1__ROUTE_STATE__ROUTE_FAILED || q->start_timeout_ms > 600000)
		return ipc_call_error(call, -EINVAL, "bad state or timeout");
	if (route_agent_token_valid(q->agent_token) < 0)
		return ipc_call_error(call, -EINVAL, "bad agent token (32-64 characters 0-9a-f)");
	struct route *r = route_set(g, q->id);
	if (!r)
		return -ENOMEM;
	/* a local route always wins: the sandbox runs here, whatever the catalog said */
	r->remote = r->lost = false;
	r->host[0] = 0;
	r->sa = (struct sockaddr_in){
		.sin_family = AF_INET, .sin_port = htons((uint16_t)q->port), .sin_addr = a};
	r->state = (int)q->state;
	route_set_reason(r, q->reason);
	r->start_timeout_ms = q->start_timeout_ms;
	r->idle_ms = q->idle_ms;
	r->probe_http = q->probe_http;
	r->runtime_up = q->runtime_up; /* coming up: the prober probes afresh */
	r->agent_api = q->agent_api;
	snprintf(r->agent_token, sizeof r->agent_token, "%s", q->agent_token);
	route_mark_active(r);
	route_changed(g, r);
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	return ipc_call_reply(call, &resp, NULL, 0);
}

static int
handle_remove_route(struct ipc_call *call, void *ud)
{
	struct gateway *g = ud;
	struct route *r = route_find(g, call->req->remove_route->id);
	if (!r || r->remote) /* the supervisor's own routes only */
		return ipc_call_error(call, -ENOENT, "no route %s", call->req->remove_route->id);
	route_remove(g, r);
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	return ipc_call_reply(call, &resp, NULL, 0);
}

const struct ipc_handler gateway_handlers[] = {
	{WARREN__V1__REQUEST__BODY_STATUS, 0, 0, handle_status},
	{WARREN__V1__REQUEST__BODY_SET_ROUTE, 0, 0, handle_set_route},
	{WARREN__V1__REQUEST__BODY_REMOVE_ROUTE, 0, 0, handle_remove_route},
	{WARREN__V1__REQUEST__BODY_PUSH_METRICS, 0, 0, metrics_handle_push},
};
const unsigned gateway_n_handlers = sizeof gateway_handlers / sizeof gateway_handlers[0];

static bool
host_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

/* From clusterd, on the cluster socket: a piece of the remote routes' table. A malformed id or
 * host name refuses the whole piece (the table it belongs to is never applied: the next push
 * has a new generation): clusterd checks both before it sends, so it is compromised. A target that
 * is not a cluster gateway is what a forged etcd record looks like: that route alone is left out
 * (remote-routes.c), the others still route. */
static int
handle_set_remote_routes(struct ipc_call *call, void *ud)
{
	struct gateway *g = ud;
	const Warren__V1__SetRemoteRoutesRequest *q = call->req->set_remote_routes;
	if (q->n_routes > GATEWAY_REMOTE_PER_PIECE)
		return ipc_call_error(call, -E2BIG, "at most %d routes a piece",
				      GATEWAY_REMOTE_PER_PIECE);
	if (strlen(q->hop_token) != 64 || route_agent_token_valid(q->hop_token) < 0)
		return ipc_call_error(call, -EINVAL, "bad hop token (64 characters 0-9a-f)");
	for (size_t i = 0; i < q->n_routes; i++) {
		const Warren__V1__RemoteRoute *rr = q->routes[i];
		if (!sandbox_id_valid(rr->id) || !host_name_ok(rr->host))
			return ipc_call_error(call, -EINVAL, "bad sandbox id or host name");
	}
	int r = remote_routes_piece(g, q->generation, q->hop_token,
				    (const Warren__V1__RemoteRoute *const *)q->routes, q->n_routes,
				    q->last);
	if (r < 0)
		return ipc_call_error(call, r, "remote routes not applied (at most %d)",
				      GATEWAY_REMOTE_MAX);
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	return ipc_call_reply(call, &resp, NULL, 0);
}

static int
handle_cluster_status(struct ipc_call *call, void *ud)
{
	struct gateway *g = ud;
	Warren__V1__StatusResponse st;
	ipc_status_init(&st, "gateway", true);
	st.routes = remote_count(g);
	return ipc_call_reply_status(call, &st);
}

const struct ipc_handler gateway_cluster_handlers[] = {
	{WARREN__V1__REQUEST__BODY_STATUS, 0, 0, handle_cluster_status},
	{WARREN__V1__REQUEST__BODY_SET_REMOTE_ROUTES, 0, 0, handle_set_remote_routes},
};
const unsigned gateway_n_cluster_handlers =
	sizeof gateway_cluster_handlers / sizeof gateway_cluster_handlers[0];
