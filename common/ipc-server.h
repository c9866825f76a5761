/* The server half of Warren IPC on libevent: accept with SO_PEERCRED, one dispatch table per
 * daemon (request -> handler, flags), deferred replies, events broadcast to every peer. */
#pragma once
#include <event2/event.h>
#include <stdbool.h>

#include "ipc.h"

enum {
	IPC_NEEDS_READY = 1 << 0, /* refused (-EAGAIN) until the daemon says it is ready */
	IPC_ONCE = 1 << 1,	  /* at most once per connection */
};
#define IPC_DEFER 1 /* handler return: it keeps the call and replies later */

struct ipc_server;
struct ipc_call {
	struct ipc_server *server;
	uint64_t peer_serial;
	uint64_t id;
	uid_t uid;
	const IpcRequest *req;
	int fds[IPC_MAX_FDS]; /* owned by the server after the handler returns unless set to -1 */
	size_t n_fds;
};

struct ipc_handler {
	int body_case;
	unsigned n_fds; /* exactly this many fds must come with the request */
	unsigned flags;
	int (*fn)(struct ipc_call *call, void *userdata);
};

struct ipc_server_config {
	const char *name;
	const struct ipc_handler *table;
	size_t n_table;
	const uid_t *allowed_uids; /* besides root */
	size_t n_allowed_uids;
	bool drop_on_violation; /* privileged helpers: a bad datagram closes the peer */
	void *userdata;
	/* A peer hung up (the spawner uses it to notice netnsd is gone; netnsd to take back what
	 * that peer claimed and never used): its serial, as in ipc_call.peer_serial. */
	void (*on_peer_gone)(void *userdata, uint64_t peer_serial);
};

struct ipc_server *ipc_server_new(struct event_base *base, int listen_fd,
				  const struct ipc_server_config *cfg);
void ipc_server_free(struct ipc_server *s);
void ipc_server_set_ready(struct ipc_server *s, bool ready);
bool ipc_server_ready(struct ipc_server *s);
/* Adopt an already-connected socket as a peer (the netnsd spawner link, tests). */
int ipc_server_adopt(struct ipc_server *s, int fd);

/* Reply to a call. The fds are sent and stay owned by the caller. */
int ipc_call_reply(struct ipc_call *call, IpcResponse *resp, const int *fds, size_t n_fds);
int ipc_call_error(struct ipc_call *call, int error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A heap copy of a call a handler wants to answer later (returns IPC_DEFER after this). The copy
 * takes the fds; the request pointer is not kept. */
struct ipc_call *ipc_call_defer(struct ipc_call *call);
void ipc_call_free(struct ipc_call *call);
/* Send an event (response with id 0) to every connected peer. */
void ipc_server_broadcast(struct ipc_server *s, IpcResponse *event);
/* Fill the common status fields. */
void ipc_status_init(Warren__V1__StatusResponse *st, const char *daemon, bool ready);
/* Answer a Status request with st (filled by ipc_status_init and the daemon's own counts). */
int ipc_call_reply_status(struct ipc_call *call, Warren__V1__StatusResponse *st);
/* A handler found a request that breaks the protocol (a field no honest peer sends): treated
 * like a malformed datagram (logged; a privileged helper closes the peer, others answer error).
 * The handler returns 0 after it; the call must not be used again. */
int ipc_call_violation(struct ipc_call *call, int error, const char *what);
