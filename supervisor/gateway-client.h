/* The supervisor's typed client of warren-gateway: one function per request the gateway serves
 * (docs/PROTOCOL.md). Each builds the envelope and sends it on the gateway's link
 * (helper-client.c); the caller fills the request body and gets the reply in cb. -ENOTCONN while
 * the gateway is down. */
#pragma once
#include "ipc-client.h"

int gateway_client_push_metrics(Warren__V1__PushMetricsRequest *q, unsigned timeout_ms,
				ipc_reply_fn cb, void *ud);
int gateway_client_set_route(Warren__V1__SetRouteRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			     void *ud);
int gateway_client_remove_route(Warren__V1__RemoveRouteRequest *q, unsigned timeout_ms,
				ipc_reply_fn cb, void *ud);
