/* Events from the gateway to the supervisor, broadcast to its IPC peers: RouteReady (a probe
 * saw the sandbox answer), RouteIdle (no request for idle_ms), ThawNeeded (a request waits for a
 * frozen sandbox). Below the prober and the proxy, which send them (gateway/LAYERS). Runs in
 * warren-gateway. */
#include "gateway.h"

void
gateway_emit(struct gateway *g, int kind, const char *id)
{
	IpcResponse ev = WARREN__V1__RESPONSE__INIT;
	Warren__V1__RouteReadyEvent ready = WARREN__V1__ROUTE_READY_EVENT__INIT;
	Warren__V1__RouteIdleEvent idle = WARREN__V1__ROUTE_IDLE_EVENT__INIT;
	Warren__V1__ThawNeededEvent thaw = WARREN__V1__THAW_NEEDED_EVENT__INIT;
	ev.body_case = kind;
	switch (kind) {
	case WARREN__V1__RESPONSE__BODY_ROUTE_READY:
		ready.id = (char *)id;
		ev.route_ready = &ready;
		break;
	case WARREN__V1__RESPONSE__BODY_ROUTE_IDLE:
		idle.id = (char *)id;
		ev.route_idle = &idle;
		break;
	case WARREN__V1__RESPONSE__BODY_THAW_NEEDED:
		thaw.id = (char *)id;
		ev.thaw_needed = &thaw;
		break;
	default:
		return;
	}
	ipc_server_broadcast(g->server, &ev);
}
