/* Server side of Warren IPC (every daemon): accept, credentials, dispatch table, replies. */
#include "ipc-server.h"
#include "ipc-queue.h"
#include "log.h"
#include "macro.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

struct ipc_peer {
	struct ipc_server *server;
	uint64_t serial;
	int fd;
	uid_t uid;
	pid_t pid;
	struct event *ev;
	struct event *wev;     /* armed while out holds datagrams the socket refused */
	struct ipc_queue out;  /* replies and events waiting for the peer to read */
	bool dropped;	       /* stopped reading or broke: freed from its read event */
	uint64_t once_seen[4]; /* bit per handler index (up to 256 handlers) */
	struct ipc_peer *next;
};

struct ipc_server {
	struct event_base *base;
	struct ipc_server_config cfg;
	int listen_fd;
	struct event *accept_ev;
	bool ready;
	uint64_t next_serial;
	struct ipc_peer *peers;
};

static void
peer_free(struct ipc_peer *p)
{
	struct ipc_server *s = p->server;
	for (struct ipc_peer **pp = &s->peers; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	if (p->ev)
		event_free(p->ev);
	if (p->wev)
		event_free(p->wev);
	ipc_queue_clear(&p->out);
	safe_close(p->fd);
	free(p);
}

/* Stop serving a peer without freeing it here: the caller may be deep in a handler or walking
 * the peer list. The read event, made active now, frees it from the loop (and tells
 * on_peer_gone) the way a hang-up would. */
static void
peer_drop_later(struct ipc_peer *p)
{
	if (p->dropped)
		return;
	p->dropped = true;
	ipc_queue_clear(&p->out);
	if (p->wev)
		event_del(p->wev);
	shutdown(p->fd, SHUT_RDWR);
	event_active(p->ev, EV_READ, 0);
}

static void
peer_writable(evutil_socket_t fd, short what, void *arg)
{
	struct ipc_peer *p = arg;
	int r = ipc_queue_flush(&p->out, p->fd);
	if (r == 0)
		event_del(p->wev);
	else if (r < 0) {
		log_debug("%s: pid %d went away with replies queued", p->server->cfg.name,
			  (int)p->pid);
		peer_drop_later(p);
	}
}

/* Every datagram to a peer goes through here: a full socket queues it (flushed on writable) and
 * a peer that leaves IPC_QUEUE_MAX_* unread is dropped, logged once. */
static int
peer_send(struct ipc_peer *p, const ProtobufCMessage *msg, const int *fds, size_t n_fds)
{
	if (p->dropped)
		return -ECONNRESET;
	int r = ipc_queue_send(&p->out, p->fd, msg, fds, n_fds);
	if (r == 1) {
		if (!p->wev)
			p->wev = event_new(p->server->base, p->fd, EV_WRITE | EV_PERSIST,
					   peer_writable, p);
		if (!p->wev || event_add(p->wev, NULL) < 0) {
			peer_drop_later(p);
			return -ENOMEM;
		}
		return 0;
	}
	if (r == -ENOBUFS) {
		log_warning("%s: pid %d uid %u does not read its replies (%zu queued, %zu bytes), "
			    "dropping it",
			    p->server->cfg.name, (int)p->pid, (unsigned)p->uid, p->out.n,
			    p->out.bytes);
		peer_drop_later(p);
	}
	return r;
}

static struct ipc_peer *
peer_find(struct ipc_server *s, uint64_t serial)
{
	for (struct ipc_peer *p = s->peers; p; p = p->next)
		if (p->serial == serial)
			return p;
	return NULL;
}

int
ipc_call_reply(struct ipc_call *call, IpcResponse *resp, const int *fds, size_t n_fds)
{
	struct ipc_peer *p = peer_find(call->server, call->peer_serial);
	if (!p)
		return -ENOTCONN;
	resp->version = IPC_VERSION;
	resp->id = call->id;
	resp->n_fds = (uint32_t)n_fds;
	int r = peer_send(p, &resp->base, fds, n_fds);
	if (r < 0 && r != -ENOBUFS && r != -ECONNRESET)
		log_warning_errno(r, "%s: failed to reply to pid %d: %m", call->server->cfg.name,
				  (int)p->pid);
	return r;
}

int
ipc_call_error(struct ipc_call *call, int error, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.error = error < 0 ? error : -error;
	resp.message = msg;
	ipc_call_reply(call, &resp, NULL, 0);
	return 0;
}

struct ipc_call *
ipc_call_defer(struct ipc_call *call)
{
	struct ipc_call *c = malloc(sizeof *c);
	if (!c)
		return NULL;
	*c = *call;
	c->req = NULL;
	for (size_t i = 0; i < call->n_fds; i++)
		call->fds[i] = -1;
	return c;
}

void
ipc_call_free(struct ipc_call *call)
{
	if (!call)
		return;
	ipc_close_fds(call->fds, call->n_fds);
	free(call);
}

/* A peer broke the protocol: privileged daemons hang up, the gateway answers an error. */
static bool
peer_violation(struct ipc_peer *p, uint64_t id, int r, const char *what)
{
	struct ipc_server *s = p->server;
	log_warning_errno(r, "%s: %s from pid %d uid %u: %m", s->cfg.name, what, (int)p->pid,
			  (unsigned)p->uid);
	if (s->cfg.drop_on_violation) {
		peer_free(p);
		return false;
	}
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.version = IPC_VERSION;
	resp.id = id;
	resp.error = r;
	resp.message = (char *)what;
	peer_send(p, &resp.base, NULL, 0);
	return true;
}

static void
peer_dispatch(struct ipc_peer *p, IpcRequest *req, int *fds, size_t n_fds)
{
	struct ipc_server *s = p->server;
	const struct ipc_handler *h = NULL;
	size_t idx = 0;
	for (; idx < s->cfg.n_table; idx++)
		if (s->cfg.table[idx].body_case == (int)req->body_case) {
			h = &s->cfg.table[idx];
			break;
		}
	if (!h) {
		ipc_close_fds(fds, n_fds);
		peer_violation(p, req->id, -EOPNOTSUPP, "request not served here");
		return;
	}
	if (h->n_fds != n_fds) {
		ipc_close_fds(fds, n_fds);
		peer_violation(p, req->id, -EPROTO, "wrong number of file descriptors");
		return;
	}
	struct ipc_call call = {.server = s,
				.peer_serial = p->serial,
				.id = req->id,
				.uid = p->uid,
				.req = req,
				.n_fds = n_fds};
	memcpy(call.fds, fds, sizeof(int) * n_fds);
	if ((h->flags & IPC_ONCE) && (p->once_seen[idx / 64] & (1ull << (idx % 64)))) {
		ipc_close_fds(call.fds, n_fds);
		peer_violation(p, req->id, -EALREADY, "request allowed once per connection");
		return;
	}
	p->once_seen[idx / 64] |= 1ull << (idx % 64);
	if ((h->flags & IPC_NEEDS_READY) && !s->ready) {
		ipc_call_error(&call, -EAGAIN, "%s is still starting", s->cfg.name);
		ipc_close_fds(call.fds, n_fds);
		return;
	}
	int r = h->fn(&call, s->cfg.userdata);
	if (r < 0)
		ipc_call_error(&call, r, "%s failed: %s", ipc_request_name(h->body_case),
			       strerror(-r));
	ipc_close_fds(call.fds, call.n_fds);
}

static void
peer_readable(evutil_socket_t fd, short what, void *arg)
{
	struct ipc_peer *p = arg;
	if (p->dropped) {
		struct ipc_server *s = p->server;
		uint64_t serial = p->serial;
		peer_free(p);
		if (s->cfg.on_peer_gone)
			s->cfg.on_peer_gone(s->cfg.userdata, serial);
		return;
	}
	for (int i = 0; i < 16; i++) {
		IpcRequest *req = NULL;
		int fds[IPC_MAX_FDS];
		size_t n_fds = 0;
		int r = ipc_recv_request(p->fd, &req, fds, &n_fds);
		if (r == -EAGAIN)
			return;
		if (r == -ECONNRESET) {
			struct ipc_server *s = p->server;
			uint64_t serial = p->serial;
			peer_free(p);
			if (s->cfg.on_peer_gone)
				s->cfg.on_peer_gone(s->cfg.userdata, serial);
			return;
		}
		if (r < 0) {
			const char *why = r == -EMSGSIZE  ? "oversized datagram"
					  : r == -EPROTO  ? "wrong version or fd count"
					  : r == -EBADMSG ? "undecodable datagram"
							  : "receive error";
			if (!peer_violation(p, 0, r, why))
				return;
			continue;
		}
		uint64_t serial = p->serial;
		struct ipc_server *s = p->server;
		peer_dispatch(p, req, fds, n_fds);
		protobuf_c_message_free_unpacked(&req->base, NULL);
		if (!peer_find(s, serial) || p->dropped)
			return;
	}
}

static bool
uid_allowed(struct ipc_server *s, uid_t uid)
{
	if (uid == 0)
		return true;
	for (size_t i = 0; i < s->cfg.n_allowed_uids; i++)
		if (s->cfg.allowed_uids[i] == uid)
			return true;
	return false;
}

int
ipc_server_adopt(struct ipc_server *s, int fd)
{
	struct ipc_peer *p = calloc(1, sizeof *p);
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	p->server = s;
	p->fd = fd;
	p->serial = ++s->next_serial;
	ipc_peer_cred(fd, &p->uid, &p->pid);
	p->ev = event_new(s->base, fd, EV_READ | EV_PERSIST, peer_readable, p);
	event_add(p->ev, NULL);
	p->next = s->peers;
	s->peers = p;
	return 0;
}

static void
server_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct ipc_server *s = arg;
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		uid_t uid;
		pid_t pid;
		if (ipc_peer_cred(fd, &uid, &pid) < 0 || !uid_allowed(s, uid)) {
			log_warning("%s: refused connection from uid %u pid %d", s->cfg.name,
				    (unsigned)uid, (int)pid);
			close(fd);
			continue;
		}
		log_debug("%s: peer pid %d uid %u connected", s->cfg.name, (int)pid, (unsigned)uid);
		ipc_server_adopt(s, fd);
	}
}

struct ipc_server *
ipc_server_new(struct event_base *base, int listen_fd, const struct ipc_server_config *cfg)
{
	struct ipc_server *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->base = base;
	s->cfg = *cfg;
	s->listen_fd = listen_fd;
	if (listen_fd >= 0) {
		s->accept_ev = event_new(base, listen_fd, EV_READ | EV_PERSIST, server_accept, s);
		event_add(s->accept_ev, NULL);
	}
	return s;
}

void
ipc_server_free(struct ipc_server *s)
{
	if (!s)
		return;
	while (s->peers)
		peer_free(s->peers);
	if (s->accept_ev)
		event_free(s->accept_ev);
	safe_close(s->listen_fd);
	free(s);
}

void
ipc_server_set_ready(struct ipc_server *s, bool ready)
{
	s->ready = ready;
}

bool
ipc_server_ready(struct ipc_server *s)
{
	return s->ready;
}

void
ipc_server_broadcast(struct ipc_server *s, IpcResponse *event)
{
	event->version = IPC_VERSION;
	event->id = 0;
	event->n_fds = 0;
	for (struct ipc_peer *p = s->peers; p; p = p->next)
		peer_send(p, &event->base, NULL, 0);
}

void
ipc_status_init(Warren__V1__StatusResponse *st, const char *daemon, bool ready)
{
	warren__v1__status_response__init(st);
	st->daemon = (char *)daemon;
	st->version = (char *)WARREN_VERSION;
	st->ready = ready;
}

int
ipc_call_reply_status(struct ipc_call *call, Warren__V1__StatusResponse *st)
{
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_STATUS;
	resp.status = st;
	return ipc_call_reply(call, &resp, NULL, 0);
}

int
ipc_call_violation(struct ipc_call *call, int error, const char *what)
{
	struct ipc_peer *p = peer_find(call->server, call->peer_serial);
	if (p)
		peer_violation(p, call->id, error < 0 ? error : -error, what);
	return 0;
}
