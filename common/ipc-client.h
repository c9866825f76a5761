/* The client half of Warren IPC on libevent: calls completed by request id, per-call timeouts,
 * events (id 0) handed to one callback, reconnect left to the owner. */
#pragma once
#include <event2/event.h>
#include <stdbool.h>

#include "ipc.h"

struct ipc_client;
/* resp is NULL when r < 0 (timeout, disconnect); otherwise r = resp->error. fds are owned by
 * the callback (close what you do not keep). */
typedef void (*ipc_reply_fn)(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud);
/* A reply that arrived after its call's timeout (see ipc_client_call_late); owns the fds. */
typedef void (*ipc_late_fn)(const IpcResponse *resp, int *fds, size_t n_fds);
typedef void (*ipc_event_fn)(const IpcResponse *event, void *ud);
typedef void (*ipc_disconnect_fn)(struct ipc_client *c, void *ud);

struct ipc_client *ipc_client_new(struct event_base *base, const char *name, ipc_event_fn on_event,
				  ipc_disconnect_fn on_disconnect, void *ud);
void ipc_client_free(struct ipc_client *c);
/* Connect to path; expected_uid (or (uid_t)-1) is checked with SO_PEERCRED. */
int ipc_client_connect(struct ipc_client *c, const char *path, uid_t expected_uid);
/* Use an already-connected socket (a socketpair to a child). */
int ipc_client_attach_fd(struct ipc_client *c, int fd);
bool ipc_client_connected(struct ipc_client *c);
/* Send req (id, version, n_fds filled in here); cb runs exactly once. */
int ipc_client_call(struct ipc_client *c, IpcRequest *req, const int *fds, size_t n_fds,
		    unsigned timeout_ms, ipc_reply_fn cb, void *ud);
/* The same, for a request a helper may grant after the caller gave up waiting (a slot claim):
 * cb hears -ETIMEDOUT at the timeout as before, and a reply that still comes within
 * IPC_LATE_KEEP_S goes to late (which gives back what was granted) instead of being dropped. */
#define IPC_LATE_KEEP_S 600
int ipc_client_call_late(struct ipc_client *c, IpcRequest *req, const int *fds, size_t n_fds,
			 unsigned timeout_ms, ipc_reply_fn cb, void *ud, ipc_late_fn late);
