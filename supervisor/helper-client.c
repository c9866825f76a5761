/* The supervisor's links to its three helpers: connect (checking who serves each socket),
 * reconnect every 200 ms while one is down, poll its status every 2 s, and hand events and
 * (re)connections to the hooks the layer above registered (main.c: re-adoption when netnsd
 * comes back, a route push when the gateway does). Runs in warren-supervisor. */
#include "helper-client.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <stdlib.h>

#include <string.h>

static void helper_connect(evutil_socket_t fd, short what, void *arg);

static struct helper *helpers;
static struct helper_hooks hooks;

static int
helper_index(struct helper *h)
{
	return (int)(h - helpers);
}

static void
status_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct helper *h = ud;
	ipc_close_fds(fds, n_fds);
	if (!resp || resp->body_case != WARREN__V1__RESPONSE__BODY_STATUS)
		return;
	if (h->status)
		protobuf_c_message_free_unpacked(&h->status->base, NULL);
	h->status = NULL;
	/* keep a copy: the response is freed after this callback */
	size_t len = protobuf_c_message_get_packed_size(&resp->status->base);
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf)
		return; /* no status until the next poll */
	protobuf_c_message_pack(&resp->status->base, buf);
	h->status = warren__v1__status_response__unpack(NULL, len, buf);
	free(buf);
}

static void
status_poll(evutil_socket_t fd, short what, void *arg)
{
	struct helper *h = arg;
	if (!ipc_client_connected(h->client))
		return;
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	Warren__V1__StatusRequest st = WARREN__V1__STATUS_REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_STATUS;
	req.status = &st;
	ipc_client_call(h->client, &req, NULL, 0, 2000, status_done, h);
}

static void
helper_event(const IpcResponse *ev, void *ud)
{
	if (hooks.event)
		hooks.event(ev);
}

static void
helper_down(struct ipc_client *c, void *ud)
{
	struct helper *h = ud;
	log_warning("Lost %s; reconnecting", h->name);
	h->up = false;
	struct timeval tv = {0, 200000};
	evtimer_add(h->reconnect, &tv);
}

static void
helper_connect(evutil_socket_t fd, short what, void *arg)
{
	struct helper *h = arg;
	int r = ipc_client_connect(h->client, h->socket, h->uid);
	if (r < 0) {
		if (!h->warned)
			log_warning_errno(r,
					  "Cannot connect to %s at %s (%m); retrying every 200 ms",
					  h->name, h->socket);
		h->warned = true;
		struct timeval tv = {0, 200000};
		evtimer_add(h->reconnect, &tv);
		return;
	}
	h->warned = false;
	log_info("Connected to %s", h->name);
	h->up = true;
	status_poll(-1, 0, h);
	if (hooks.connected)
		hooks.connected(helper_index(h));
}

int
helpers_init(struct event_base *base, struct helper *hs, const struct helper_hooks *hk)
{
	helpers = hs;
	hooks = *hk;
	for (int i = 0; i < HELPER_MAX; i++) {
		struct helper *h = &helpers[i];
		h->client = ipc_client_new(base, h->name, helper_event, helper_down, h);
		h->reconnect = evtimer_new(base, helper_connect, h);
		h->poll = event_new(base, -1, EV_PERSIST, status_poll, h);
		if (!h->client || !h->reconnect || !h->poll)
			return -ENOMEM;
		struct timeval tv = {2, 0};
		event_add(h->poll, &tv);
		helper_connect(-1, 0, h);
	}
	return 0;
}

struct ipc_client *
helper(int which)
{
	struct helper *h = &helpers[which];
	return ipc_client_connected(h->client) ? h->client : NULL;
}

int
helper_call(int which, IpcRequest *req, const int *fds, size_t n_fds, unsigned timeout_ms,
	    ipc_reply_fn cb, void *ud)
{
	return helper_call_late(which, req, fds, n_fds, timeout_ms, cb, ud, NULL);
}

int
helper_call_late(int which, IpcRequest *req, const int *fds, size_t n_fds, unsigned timeout_ms,
		 ipc_reply_fn cb, void *ud, ipc_late_fn late)
{
	struct ipc_client *c = helper(which);
	if (!c)
		return -ENOTCONN;
	return ipc_client_call_late(c, req, fds, n_fds, timeout_ms, cb, ud, late);
}

/* A helper's reply's message when it gave one, else fallback (often strerror of the error):
 * the one place the supervisor decides what to say about a helper's refusal. */
const char *
helper_message(const IpcResponse *resp, const char *fallback)
{
	return resp && resp->message && resp->message[0] ? resp->message : fallback;
}
