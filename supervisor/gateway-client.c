/* The supervisor's typed client of warren-gateway: one function per request the gateway serves
 * (docs/PROTOCOL.md). Each builds the envelope and sends it on the gateway's link
 * (helper-client.c); the caller fills the request body and gets the reply in cb. -ENOTCONN while
 * the gateway is down. */
#include "gateway-client.h"
#include "helper-client.h"

int
gateway_client_push_metrics(Warren__V1__PushMetricsRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			    void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_PUSH_METRICS;
	req.push_metrics = q;
	return helper_call(HELPER_GATEWAY, &req, NULL, 0, timeout_ms, cb, ud);
}

int
gateway_client_set_route(Warren__V1__SetRouteRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			 void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_SET_ROUTE;
	req.set_route = q;
	return helper_call(HELPER_GATEWAY, &req, NULL, 0, timeout_ms, cb, ud);
}

int
gateway_client_remove_route(Warren__V1__RemoveRouteRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			    void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_REMOVE_ROUTE;
	req.remove_route = q;
	return helper_call(HELPER_GATEWAY, &req, NULL, 0, timeout_ms, cb, ud);
}
