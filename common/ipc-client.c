/* Client side of Warren IPC (the supervisor's links to its helpers; netnsd's link to its
 * spawner): pending calls by id, timeouts, events with id 0. */
#include "ipc-client.h"
#include "ipc-queue.h"
#include "log.h"
#include "macro.h"

#include <inttypes.h>
#include <string.h>
#include <sys/socket.h>

struct pending {
	uint64_t id;
	ipc_reply_fn cb;
	void *ud;
	/* A reply that comes after the timeout goes here instead of being dropped: a helper that
	 * granted something late (a slot) must be given it back. Set: the call timed out and this
	 * record waits IPC_LATE_KEEP_S more for that reply. */
	ipc_late_fn late;
	bool timed_out;
	struct event *timer;
	struct ipc_client *client;
	struct pending *next;
};

struct ipc_client {
	struct event_base *base;
	char *name;
	int fd;
	struct event *ev;
	struct event *wev;    /* armed while out holds requests the socket refused */
	struct ipc_queue out; /* requests waiting for the helper to read */
	bool stalled;	      /* the helper stopped reading: dropped from the read event */
	uint64_t next_id;
	struct pending *pending;
	ipc_event_fn on_event;
	ipc_disconnect_fn on_disconnect;
	void *ud;
};

static void
pending_unlink(struct ipc_client *c, struct pending *p)
{
	for (struct pending **pp = &c->pending; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	if (p->timer)
		event_free(p->timer);
}

static void
fail_all(struct ipc_client *c, int r)
{
	while (c->pending) {
		struct pending *p = c->pending;
		pending_unlink(c, p);
		if (!p->timed_out) /* a late one's caller was answered at its timeout */
			p->cb(NULL, r, NULL, 0, p->ud);
		free(p);
	}
}

static void
client_close(struct ipc_client *c)
{
	if (c->ev)
		event_free(c->ev);
	c->ev = NULL;
	if (c->wev)
		event_free(c->wev);
	c->wev = NULL;
	ipc_queue_clear(&c->out);
	c->stalled = false;
	c->fd = safe_close(c->fd);
}

static void
client_drop(struct ipc_client *c)
{
	client_close(c);
	fail_all(c, -ECONNRESET);
	if (c->on_disconnect)
		c->on_disconnect(c, c->ud);
}

static void
client_readable(evutil_socket_t fd, short what, void *arg)
{
	struct ipc_client *c = arg;
	if (c->stalled) {
		client_drop(c);
		return;
	}
	for (int i = 0; i < 32; i++) {
		IpcResponse *resp = NULL;
		int fds[IPC_MAX_FDS];
		size_t n_fds = 0;
		int r = ipc_recv_response(c->fd, &resp, fds, &n_fds);
		if (r == -EAGAIN)
			return;
		if (r < 0) {
			if (r != -ECONNRESET)
				log_warning_errno(r, "%s: bad message, dropping link: %m", c->name);
			client_drop(c);
			return;
		}
		if (resp->id == 0) {
			ipc_close_fds(fds, n_fds);
			if (c->on_event)
				c->on_event(resp, c->ud);
			protobuf_c_message_free_unpacked(&resp->base, NULL);
			continue;
		}
		struct pending *p = c->pending;
		while (p && p->id != resp->id)
			p = p->next;
		if (!p) {
			ipc_close_fds(fds, n_fds);
			protobuf_c_message_free_unpacked(&resp->base, NULL);
			continue;
		}
		pending_unlink(c, p);
		if (p->timed_out)
			p->late(resp, fds, n_fds);
		else
			p->cb(resp, resp->error, fds, n_fds, p->ud);
		free(p);
		protobuf_c_message_free_unpacked(&resp->base, NULL);
		if (c->fd < 0)
			return;
	}
}

static void
pending_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct pending *p = arg;
	struct ipc_client *c = p->client;
	if (p->late && !p->timed_out) {
		/* the record stays for a late reply; the caller hears of the timeout last, when
		 * nothing here touches p again (a callback may end the link and free it) */
		void *ud = p->ud;
		p->timed_out = true;
		p->ud = NULL;
		struct timeval tv = {IPC_LATE_KEEP_S, 0};
		evtimer_add(p->timer, &tv);
		p->cb(NULL, -ETIMEDOUT, NULL, 0, ud);
		return;
	}
	pending_unlink(c, p);
	if (p->timed_out)
		log_warning("%s: no reply to call %" PRIu64 " %d s after its timeout, forgotten",
			    c->name, p->id, IPC_LATE_KEEP_S);
	else
		p->cb(NULL, -ETIMEDOUT, NULL, 0, p->ud);
	free(p);
}

struct ipc_client *
ipc_client_new(struct event_base *base, const char *name, ipc_event_fn on_event,
	       ipc_disconnect_fn on_disconnect, void *ud)
{
	struct ipc_client *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->base = base;
	c->name = strdup(name);
	if (!c->name) {
		free(c);
		return NULL;
	}
	c->fd = -1;
	c->on_event = on_event;
	c->on_disconnect = on_disconnect;
	c->ud = ud;
	return c;
}

void
ipc_client_free(struct ipc_client *c)
{
	if (!c)
		return;
	c->on_disconnect = NULL;
	client_close(c);
	fail_all(c, -ECANCELED);
	free(c->name);
	free(c);
}

/* Drop the link from the loop, not from inside a call: the read event, made active now, fails
 * every pending call and tells on_disconnect the way a hang-up would. */
static void
client_drop_later(struct ipc_client *c)
{
	if (c->stalled)
		return;
	c->stalled = true;
	ipc_queue_clear(&c->out);
	if (c->wev)
		event_del(c->wev);
	shutdown(c->fd, SHUT_RDWR);
	event_active(c->ev, EV_READ, 0);
}

static void
client_writable(evutil_socket_t fd, short what, void *arg)
{
	struct ipc_client *c = arg;
	int r = ipc_queue_flush(&c->out, c->fd);
	if (r == 0)
		event_del(c->wev);
	else if (r < 0)
		client_drop_later(c);
}

int
ipc_client_attach_fd(struct ipc_client *c, int fd)
{
	c->fd = fd;
	c->ev = event_new(c->base, fd, EV_READ | EV_PERSIST, client_readable, c);
	return event_add(c->ev, NULL) < 0 ? -EIO : 0;
}

int
ipc_client_connect(struct ipc_client *c, const char *path, uid_t expected_uid)
{
	if (c->fd >= 0)
		return 0;
	int fd = ipc_connect(path, 1);
	if (fd < 0)
		return fd;
	uid_t uid;
	/* A socket made by socket activation reports its creator (root) rather than the daemon. */
	if (expected_uid != (uid_t)-1 &&
	    (ipc_peer_cred(fd, &uid, NULL) < 0 || (uid != expected_uid && uid != 0))) {
		close(fd);
		return -EPERM;
	}
	return ipc_client_attach_fd(c, fd);
}

bool
ipc_client_connected(struct ipc_client *c)
{
	return c && c->fd >= 0;
}

int
ipc_client_call(struct ipc_client *c, IpcRequest *req, const int *fds, size_t n_fds,
		unsigned timeout_ms, ipc_reply_fn cb, void *ud)
{
	return ipc_client_call_late(c, req, fds, n_fds, timeout_ms, cb, ud, NULL);
}

int
ipc_client_call_late(struct ipc_client *c, IpcRequest *req, const int *fds, size_t n_fds,
		     unsigned timeout_ms, ipc_reply_fn cb, void *ud, ipc_late_fn late)
{
	if (c->fd < 0)
		return -ENOTCONN;
	if (c->stalled)
		return -ECONNRESET;
	struct pending *p = calloc(1, sizeof *p);
	if (!p)
		return -ENOMEM;
	req->version = IPC_VERSION;
	req->id = ++c->next_id;
	req->n_fds = (uint32_t)n_fds;
	/* A helper busy with a long job may leave its socket full for a moment: queue (in
	 * order) rather than fail the call; one that leaves the queue full is not reading. */
	int r = ipc_queue_send(&c->out, c->fd, &req->base, fds, n_fds);
	if (r == 1) {
		if (!c->wev)
			c->wev = event_new(c->base, c->fd, EV_WRITE | EV_PERSIST, client_writable,
					   c);
		if (!c->wev || event_add(c->wev, NULL) < 0)
			r = -ENOMEM;
	} else if (r == -ENOBUFS)
		log_warning("%s: the helper does not read its requests (%zu queued, %zu bytes), "
			    "dropping the link",
			    c->name, c->out.n, c->out.bytes);
	if (r < 0) {
		free(p);
		if (r == -ENOBUFS || r == -ENOMEM)
			client_drop_later(c);
		return r;
	}
	p->id = req->id;
	p->cb = cb;
	p->ud = ud;
	p->late = late;
	p->client = c;
	if (timeout_ms) {
		struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
		p->timer = evtimer_new(c->base, pending_timeout, p);
		evtimer_add(p->timer, &tv);
	}
	p->next = c->pending;
	c->pending = p;
	return 0;
}
