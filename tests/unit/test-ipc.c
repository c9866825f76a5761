/* Unit tests of Warren IPC framing and of the server's handling of bad peers, over socketpairs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc-client.h"
#include "ipc-queue.h"
#include "ipc-server.h"
#include "ipc.h"

static void
pair(int sp[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
}

static void
status_request(IpcRequest *req, Warren__V1__StatusRequest *st)
{
	warren__v1__request__init(req);
	warren__v1__status_request__init(st);
	req->version = IPC_VERSION;
	req->id = 42;
	req->body_case = WARREN__V1__REQUEST__BODY_STATUS;
	req->status = st;
}

static void
test_roundtrip_with_fd(void **state)
{
	int sp[2];
	pair(sp);
	IpcRequest req;
	Warren__V1__StatusRequest st;
	status_request(&req, &st);
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	req.n_fds = 1;
	assert_int_equal(ipc_send(sp[0], &req.base, &fd, 1), 0);
	IpcRequest *got = NULL;
	int fds[IPC_MAX_FDS];
	size_t n = 0;
	assert_int_equal(ipc_recv_request(sp[1], &got, fds, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(got->id, 42);
	assert_int_equal(got->body_case, WARREN__V1__REQUEST__BODY_STATUS);
	assert_true(fcntl(fds[0], F_GETFD) & FD_CLOEXEC);
	close(fds[0]);
	protobuf_c_message_free_unpacked(&got->base, NULL);
	close(fd);
	close(sp[0]);
	close(sp[1]);
}

static void
test_declared_fds_must_match(void **state)
{
	int sp[2];
	pair(sp);
	IpcRequest req;
	Warren__V1__StatusRequest st;
	status_request(&req, &st);
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	req.n_fds = 0; /* lies: one fd comes along */
	/* ipc_send fills nothing itself; send with an fd but a zero declaration */
	assert_int_equal(ipc_send(sp[0], &req.base, &fd, 1), 0);
	IpcRequest *got = NULL;
	int fds[IPC_MAX_FDS];
	size_t n = 0;
	assert_int_equal(ipc_recv_request(sp[1], &got, fds, &n), -EPROTO);
	close(fd);
	close(sp[0]);
	close(sp[1]);
}

static void
test_version_and_garbage(void **state)
{
	int sp[2];
	pair(sp);
	IpcRequest req;
	Warren__V1__StatusRequest st;
	status_request(&req, &st);
	IpcRequest *got = NULL;
	int fds[IPC_MAX_FDS];
	size_t n = 0;
	/* the next version and the retired one (version 1 carried backends as strings) */
	req.version = IPC_VERSION + 1;
	assert_int_equal(ipc_send(sp[0], &req.base, NULL, 0), 0);
	assert_int_equal(ipc_recv_request(sp[1], &got, fds, &n), -EPROTO);
	req.version = IPC_VERSION - 1;
	assert_int_equal(ipc_send(sp[0], &req.base, NULL, 0), 0);
	assert_int_equal(ipc_recv_request(sp[1], &got, fds, &n), -EPROTO);
	static const char junk[] = "\xff\xff\xff\xff\xff";
	assert_int_equal(send(sp[0], junk, sizeof junk, 0), (ssize_t)sizeof junk);
	assert_int_equal(ipc_recv_request(sp[1], &got, fds, &n), -EBADMSG);
	close(sp[0]);
	close(sp[1]);
}

static void
test_oversize(void **state)
{
	int sp[2];
	pair(sp);
	int sz = 1 << 20;
	setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
	setsockopt(sp[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
	size_t len = IPC_MAX_MESSAGE + 100;
	char *buf = calloc(1, len);
	assert_int_equal(send(sp[0], buf, len, 0), (ssize_t)len);
	IpcRequest *got = NULL;
	int fds[IPC_MAX_FDS];
	size_t n = 0;
	assert_int_equal(ipc_recv_request(sp[1], &got, fds, &n), -EMSGSIZE);
	free(buf);
	/* and the sender refuses to build one */
	IpcRequest req;
	Warren__V1__StatusRequest st;
	status_request(&req, &st);
	int many[IPC_MAX_FDS + 1] = {0};
	assert_int_equal(ipc_send(sp[0], &req.base, many, IPC_MAX_FDS + 1), -EMSGSIZE);
	close(sp[0]);
	close(sp[1]);
}

/* A privileged server drops a peer that sends garbage and keeps serving others. */
static int handled;
static int
handle_status(struct ipc_call *call, void *ud)
{
	handled++;
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	return ipc_call_reply(call, &resp, NULL, 0);
}

static const struct ipc_handler table[] = {
	{WARREN__V1__REQUEST__BODY_STATUS, 0, 0, handle_status},
};

static void
test_server_drops_bad_peer(void **state)
{
	struct event_base *base = event_base_new();
	struct ipc_server_config cfg = {
		.name = "test", .table = table, .n_table = 1, .drop_on_violation = true};
	struct ipc_server *s = ipc_server_new(base, -1, &cfg);
	ipc_server_set_ready(s, true);
	int bad[2], good[2];
	pair(bad);
	pair(good);
	fcntl(bad[1], F_SETFL, O_NONBLOCK);
	fcntl(good[1], F_SETFL, O_NONBLOCK);
	ipc_server_adopt(s, bad[1]);
	ipc_server_adopt(s, good[1]);
	static const char junk[] = "\xff\xff\xff";
	send(bad[0], junk, sizeof junk, 0);
	IpcRequest req;
	Warren__V1__StatusRequest st;
	status_request(&req, &st);
	ipc_send(good[0], &req.base, NULL, 0);
	event_base_loop(base, EVLOOP_NONBLOCK);
	event_base_loop(base, EVLOOP_NONBLOCK);
	char c;
	assert_int_equal(recv(bad[0], &c, 1, MSG_DONTWAIT), 0); /* EOF: dropped */
	IpcResponse *resp = NULL;
	int fds[IPC_MAX_FDS];
	size_t n = 0;
	assert_int_equal(ipc_recv_response(good[0], &resp, fds, &n), 0);
	assert_int_equal(resp->id, 42);
	assert_int_equal(handled, 1);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	ipc_server_free(s);
	event_base_free(base);
	close(bad[0]);
	close(good[0]);
}

/* An unprivileged server answers an error and keeps the peer. */
static void
test_server_answers_error(void **state)
{
	struct event_base *base = event_base_new();
	struct ipc_server_config cfg = {.name = "test", .table = table, .n_table = 1};
	struct ipc_server *s = ipc_server_new(base, -1, &cfg);
	ipc_server_set_ready(s, true);
	int sp[2];
	pair(sp);
	fcntl(sp[1], F_SETFL, O_NONBLOCK);
	ipc_server_adopt(s, sp[1]);
	IpcRequest req;
	Warren__V1__StatusRequest st;
	status_request(&req, &st);
	req.version = 9;
	ipc_send(sp[0], &req.base, NULL, 0);
	event_base_loop(base, EVLOOP_NONBLOCK);
	IpcResponse *resp = NULL;
	int fds[IPC_MAX_FDS];
	size_t n = 0;
	assert_int_equal(ipc_recv_response(sp[0], &resp, fds, &n), 0);
	assert_int_equal(resp->error, -EPROTO);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	ipc_server_free(s);
	event_base_free(base);
	close(sp[0]);
}

/* Outgoing queue. A socketpair whose far end does not read: the server's events and the
 * client's requests beyond what the socket holds used to be lost to EAGAIN. */
#define N_KEPT 800 /* more than the socket takes, less than IPC_QUEUE_MAX_MSGS */

static int peers_gone;
static void
count_gone(void *ud, uint64_t peer_serial)
{
	peers_gone++;
}

static void
broadcast_numbered(struct ipc_server *s, int k)
{
	char msg[32];
	snprintf(msg, sizeof msg, "event %d", k);
	IpcResponse ev = WARREN__V1__RESPONSE__INIT;
	ev.message = msg;
	ipc_server_broadcast(s, &ev);
}

/* Read what has arrived; check it comes in order. Returns how many were read. */
static int
drain_events(int fd, int *next)
{
	int got = 0;
	for (;;) {
		IpcResponse *resp = NULL;
		int fds[IPC_MAX_FDS];
		size_t n = 0;
		int r = ipc_recv_response(fd, &resp, fds, &n);
		if (r == -EAGAIN || r == -ECONNRESET)
			return got;
		assert_int_equal(r, 0);
		char want[32];
		snprintf(want, sizeof want, "event %d", *next);
		assert_string_equal(resp->message, want);
		(*next)++;
		got++;
		protobuf_c_message_free_unpacked(&resp->base, NULL);
	}
}

static void
test_server_queues_when_full(void **state)
{
	struct event_base *base = event_base_new();
	peers_gone = 0;
	struct ipc_server_config cfg = {
		.name = "test", .table = table, .n_table = 1, .on_peer_gone = count_gone};
	struct ipc_server *s = ipc_server_new(base, -1, &cfg);
	int sp[2];
	pair(sp);
	fcntl(sp[1], F_SETFL, O_NONBLOCK);
	ipc_server_adopt(s, sp[1]);
	for (int k = 0; k < N_KEPT; k++)
		broadcast_numbered(s, k);
	/* The socket took only part of them; the rest wait. Read, let the server flush. */
	int next = 0;
	for (int round = 0; round < 1000 && next < N_KEPT; round++) {
		drain_events(sp[0], &next);
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	assert_int_equal(next, N_KEPT);
	assert_int_equal(peers_gone, 0);
	ipc_server_free(s);
	event_base_free(base);
	close(sp[0]);
}

static void
test_server_drops_peer_that_does_not_read(void **state)
{
	struct event_base *base = event_base_new();
	peers_gone = 0;
	struct ipc_server_config cfg = {
		.name = "test", .table = table, .n_table = 1, .on_peer_gone = count_gone};
	struct ipc_server *s = ipc_server_new(base, -1, &cfg);
	int sp[2], other[2];
	pair(sp);
	pair(other);
	fcntl(sp[1], F_SETFL, O_NONBLOCK);
	fcntl(other[1], F_SETFL, O_NONBLOCK);
	ipc_server_adopt(s, sp[1]);
	ipc_server_adopt(s, other[1]);
	/* other reads as it goes; sp never does */
	int next_other = 0;
	for (int k = 0; k < 3 * IPC_QUEUE_MAX_MSGS; k++) {
		broadcast_numbered(s, k);
		drain_events(other[0], &next_other);
	}
	event_base_loop(base, EVLOOP_NONBLOCK);
	assert_int_equal(peers_gone, 1);
	/* the stalled peer sees what the socket held, then end of file */
	int next = 0;
	drain_events(sp[0], &next);
	assert_true(next > 0 && next < 3 * IPC_QUEUE_MAX_MSGS);
	char c;
	assert_int_equal(recv(sp[0], &c, 1, MSG_DONTWAIT), 0);
	/* the reading peer lost nothing and is still served */
	for (int round = 0; round < 100; round++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		drain_events(other[0], &next_other);
	}
	assert_int_equal(next_other, 3 * IPC_QUEUE_MAX_MSGS);
	broadcast_numbered(s, next_other);
	assert_int_equal(drain_events(other[0], &next_other), 1);
	ipc_server_free(s);
	event_base_free(base);
	close(sp[0]);
	close(other[0]);
}

static int replies_failed, disconnects;
static void
reply_counted(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	if (r == -ECONNRESET)
		replies_failed++;
}
static void
client_gone(struct ipc_client *c, void *ud)
{
	disconnects++;
}

static void
test_client_queues_when_full(void **state)
{
	struct event_base *base = event_base_new();
	struct ipc_client *c = ipc_client_new(base, "test", NULL, client_gone, NULL);
	int sp[2];
	pair(sp);
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	assert_int_equal(ipc_client_attach_fd(c, sp[0]), 0);
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	for (int k = 0; k < N_KEPT; k++) {
		IpcRequest req;
		Warren__V1__StatusRequest st;
		status_request(&req, &st);
		/* every tenth carries an fd: a queued one must still arrive with it */
		assert_int_equal(
			ipc_client_call(c, &req, &devnull, k % 10 == 0, 0, reply_counted, NULL), 0);
	}
	close(devnull);
	uint64_t want = 1;
	for (int round = 0; round < 1000 && want <= N_KEPT; round++) {
		for (;;) {
			IpcRequest *req = NULL;
			int fds[IPC_MAX_FDS];
			size_t n = 0;
			int r = ipc_recv_request(sp[1], &req, fds, &n);
			if (r == -EAGAIN)
				break;
			assert_int_equal(r, 0);
			assert_int_equal(req->id, want);
			assert_int_equal(n, (want - 1) % 10 == 0);
			ipc_close_fds(fds, n);
			want++;
			protobuf_c_message_free_unpacked(&req->base, NULL);
		}
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	assert_int_equal(want, N_KEPT + 1);
	ipc_client_free(c);
	event_base_free(base);
	close(sp[1]);
}

static void
test_client_drops_helper_that_does_not_read(void **state)
{
	struct event_base *base = event_base_new();
	replies_failed = disconnects = 0;
	struct ipc_client *c = ipc_client_new(base, "test", NULL, client_gone, NULL);
	int sp[2];
	pair(sp);
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	assert_int_equal(ipc_client_attach_fd(c, sp[0]), 0);
	int accepted = 0, r = 0;
	for (int k = 0; k < 3 * IPC_QUEUE_MAX_MSGS && r == 0; k++) {
		IpcRequest req;
		Warren__V1__StatusRequest st;
		status_request(&req, &st);
		r = ipc_client_call(c, &req, NULL, 0, 0, reply_counted, NULL);
		if (r == 0)
			accepted++;
	}
	assert_int_equal(r, -ENOBUFS);
	assert_true(accepted >= IPC_QUEUE_MAX_MSGS);
	event_base_loop(base, EVLOOP_NONBLOCK);
	/* every accepted call is answered (with the hang-up), the owner told once */
	assert_int_equal(replies_failed, accepted);
	assert_int_equal(disconnects, 1);
	assert_false(ipc_client_connected(c));
	ipc_client_free(c);
	event_base_free(base);
	close(sp[1]);
}

static int timeouts, lates;
static void
reply_timed(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	ipc_close_fds(fds, n_fds);
	if (r == -ETIMEDOUT)
		timeouts++;
}
static void
reply_late(const IpcResponse *resp, int *fds, size_t n_fds)
{
	assert_int_equal(resp->body_case, WARREN__V1__RESPONSE__BODY_STATUS);
	assert_int_equal(n_fds, 1);
	ipc_close_fds(fds, n_fds);
	lates++;
}

/* A reply after the call's timeout reaches the late handler (with its fd), and only once the
 * caller heard the timeout; a call without one drops it as before. */
static void
test_client_late_reply(void **state)
{
	struct event_base *base = event_base_new();
	struct ipc_client *c = ipc_client_new(base, "test", NULL, NULL, NULL);
	int sp[2];
	pair(sp);
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	fcntl(sp[1], F_SETFL, O_NONBLOCK);
	assert_int_equal(ipc_client_attach_fd(c, sp[0]), 0);
	timeouts = lates = 0;
	for (int k = 0; k < 2; k++) {
		IpcRequest req;
		Warren__V1__StatusRequest st;
		status_request(&req, &st);
		assert_int_equal(ipc_client_call_late(c, &req, NULL, 0, 10, reply_timed, NULL,
						      k == 0 ? reply_late : NULL),
				 0);
	}
	for (int i = 0; i < 100 && timeouts < 2; i++) {
		usleep(2000);
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	assert_int_equal(timeouts, 2);
	assert_int_equal(lates, 0);
	for (uint64_t id = 1; id <= 2; id++) {
		IpcRequest *got = NULL;
		int fds[IPC_MAX_FDS];
		size_t n = 0;
		assert_int_equal(ipc_recv_request(sp[1], &got, fds, &n), 0);
		protobuf_c_message_free_unpacked(&got->base, NULL);
		Warren__V1__StatusResponse st;
		ipc_status_init(&st, "test", true);
		IpcResponse resp = WARREN__V1__RESPONSE__INIT;
		resp.id = id;
		resp.version = IPC_VERSION;
		resp.body_case = WARREN__V1__RESPONSE__BODY_STATUS;
		resp.status = &st;
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		resp.n_fds = 1;
		assert_int_equal(ipc_send(sp[1], &resp.base, &fd, 1), 0);
		close(fd);
	}
	for (int i = 0; i < 10; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	assert_int_equal(lates, 1);
	assert_int_equal(timeouts, 2);
	ipc_client_free(c);
	event_base_free(base);
	close(sp[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_with_fd),
		cmocka_unit_test(test_declared_fds_must_match),
		cmocka_unit_test(test_version_and_garbage),
		cmocka_unit_test(test_oversize),
		cmocka_unit_test(test_server_drops_bad_peer),
		cmocka_unit_test(test_server_answers_error),
		cmocka_unit_test(test_server_queues_when_full),
		cmocka_unit_test(test_server_drops_peer_that_does_not_read),
		cmocka_unit_test(test_client_queues_when_full),
		cmocka_unit_test(test_client_drops_helper_that_does_not_read),
		cmocka_unit_test(test_client_late_reply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
