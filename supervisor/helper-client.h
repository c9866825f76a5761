/* The supervisor's links to its three helpers (helper-client.c): who serves each socket, the
 * link's state and last status, and the one send primitive the typed clients
 * (netnsd-client.c, snapshotd-client.c, gateway-client.c) build on. A lower layer: what happens
 * when a helper sends an event or comes back is decided above, through helper_hooks. */
#pragma once
#include <event2/event.h>
#include <stdbool.h>
#include <sys/types.h>

#include "ipc-client.h"

struct helper {
	const char *name;
	char *socket;
	uid_t uid; /* expected server uid */
	struct ipc_client *client;
	struct event *reconnect, *poll;
	bool up, warned;
	Warren__V1__StatusResponse *status;
};

enum { HELPER_NETNSD, HELPER_SNAPSHOTD, HELPER_GATEWAY, HELPER_MAX };

/* Registered by the layer above (main.c): an event a helper sent, and a helper (re)connected. */
struct helper_hooks {
	void (*event)(const IpcResponse *ev);
	void (*connected)(int which);
};

/* Connects to helpers[0..HELPER_MAX) and keeps the links up: 0, or -ENOMEM. */
int helpers_init(struct event_base *base, struct helper *helpers, const struct helper_hooks *hooks);
struct ipc_client *helper(int which); /* NULL when not connected */
int helper_call(int which, IpcRequest *req, const int *fds, size_t n_fds, unsigned timeout_ms,
		ipc_reply_fn cb, void *ud);
/* The same with a handler for a reply after the timeout (ipc_client_call_late). */
int helper_call_late(int which, IpcRequest *req, const int *fds, size_t n_fds, unsigned timeout_ms,
		     ipc_reply_fn cb, void *ud, ipc_late_fn late);
/* A helper's reply's message when it gave one, else fallback. */
const char *helper_message(const IpcResponse *resp, const char *fallback);
