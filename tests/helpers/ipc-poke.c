/* Test peer for Warren IPC: sends well-formed and malformed datagrams to a daemon and reports
 * what happened, or holds a claimed namespace slot for the isolation tests.
 *   ipc-poke SOCKET status
 *   ipc-poke SOCKET garbage|badversion|badfds|oversize|unknown|truncfd
 *   ipc-poke SOCKET setroute ID ADDR PORT STATE [START_TIMEOUT_MS [REASON]]
 *   ipc-poke SOCKET removeroute ID
 *   ipc-poke SOCKET reclaim ID
 *   ipc-poke SOCKET claim-hold [outbound]   (prints "slot address gateway pid fd", holds) */
#include "ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int
await(int fd, IpcResponse **resp, int *fds, size_t *n_fds)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 5000) <= 0)
		return -ETIMEDOUT;
	char c;
	if (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
		return -ECONNRESET;
	return ipc_recv_response(fd, resp, fds, n_fds);
}

static int
report(int fd)
{
	IpcResponse *resp = NULL;
	int fds[IPC_MAX_FDS];
	size_t n = 0;
	int r = await(fd, &resp, fds, &n);
	if (r == -ECONNRESET) {
		printf("dropped\n");
		return 0;
	}
	if (r < 0) {
		printf("failed %s\n", strerror(-r));
		return 1;
	}
	if (resp->error)
		printf("error %d %s\n", resp->error, resp->message);
	else
		printf("ok\n");
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: ipc-poke SOCKET MODE ...\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	int fd = ipc_connect(argv[1], 0);
	if (fd < 0) {
		printf("connect failed %s\n", strerror(-fd));
		return 1;
	}
	const char *mode = argv[2];
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.version = IPC_VERSION;
	req.id = 7;
	Warren__V1__StatusRequest st = WARREN__V1__STATUS_REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_STATUS;
	req.status = &st;

	if (!strcmp(mode, "status")) {
		ipc_send(fd, &req.base, NULL, 0);
		IpcResponse *resp = NULL;
		int fds[IPC_MAX_FDS];
		size_t n = 0;
		int r = await(fd, &resp, fds, &n);
		if (r == -ECONNRESET) {
			printf("dropped\n");
			return 1;
		}
		if (r < 0 || resp->body_case != WARREN__V1__RESPONSE__BODY_STATUS) {
			printf("failed %s\n", r < 0 ? strerror(-r) : resp->message);
			return 1;
		}
		printf("daemon=%s version=%s ready=%d pool_size=%u pool_free=%u sandboxes=%u routes=%llu\n",
		       resp->status->daemon, resp->status->version, resp->status->ready,
		       resp->status->pool_size, resp->status->pool_free, resp->status->sandboxes,
		       (unsigned long long)resp->status->routes);
		return 0;
	}
	if (!strcmp(mode, "garbage")) {
		static const char junk[] = "\xff\xff\xff\xff this is not protobuf \x01\x02";
		send(fd, junk, sizeof junk, 0);
		return report(fd);
	}
	if (!strcmp(mode, "badversion")) {
		req.version = 99;
		uint8_t buf[256];
		size_t len = protobuf_c_message_pack(&req.base, buf);
		send(fd, buf, len, 0);
		return report(fd);
	}
	if (!strcmp(mode, "badfds") || !strcmp(mode, "truncfd")) {
		/* declares 0 fds but sends one (badfds) / declares 2 and sends 1 (truncfd) */
		int devnull = open("/dev/null", O_RDONLY);
		uint8_t buf[256];
		req.n_fds = !strcmp(mode, "truncfd") ? 2 : 0;
		size_t len = protobuf_c_message_pack(&req.base, buf);
		struct iovec iov = {buf, len};
		union {
			char raw[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} ctl;
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.raw,
				    .msg_controllen = sizeof ctl.raw};
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &devnull, sizeof(int));
		sendmsg(fd, &mh, 0);
		return report(fd);
	}
	if (!strcmp(mode, "oversize")) {
		size_t len = IPC_MAX_MESSAGE + 4096;
		char *buf = calloc(1, len);
		int sz = (int)len * 2;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
		if (send(fd, buf, len, 0) < 0)
			printf("send failed %s\n", strerror(errno));
		return report(fd);
	}
	if (!strcmp(mode, "unknown")) {
		/* a request the daemon does not serve */
		Warren__V1__ListImagesRequest li = WARREN__V1__LIST_IMAGES_REQUEST__INIT;
		Warren__V1__SetRouteRequest sr = WARREN__V1__SET_ROUTE_REQUEST__INIT;
		if (strstr(argv[1], "snapshotd")) {
			req.body_case = WARREN__V1__REQUEST__BODY_SET_ROUTE;
			req.set_route = &sr;
		} else {
			req.body_case = WARREN__V1__REQUEST__BODY_LIST_IMAGES;
			req.list_images = &li;
		}
		ipc_send(fd, &req.base, NULL, 0);
		return report(fd);
	}
	if (!strcmp(mode, "setroute") && argc >= 7) {
		Warren__V1__SetRouteRequest sr = WARREN__V1__SET_ROUTE_REQUEST__INIT;
		sr.id = argv[3];
		sr.address = argv[4];
		sr.port = (uint32_t)atoi(argv[5]);
		sr.state = !strcmp(argv[6], "running")	 ? WARREN__V1__ROUTE_STATE__ROUTE_RUNNING
			   : !strcmp(argv[6], "frozen") ? WARREN__V1__ROUTE_STATE__ROUTE_FROZEN
			   : !strcmp(argv[6], "failed") ? WARREN__V1__ROUTE_STATE__ROUTE_FAILED
							: WARREN__V1__ROUTE_STATE__ROUTE_STARTING;
		/* "booting": starting, its runtime not up yet (not probed); "starting": up */
		sr.runtime_up = strcmp(argv[6], "booting") != 0;
		sr.start_timeout_ms = argc > 7 ? (uint32_t)atoi(argv[7]) : 0;
		sr.reason = argc > 8 ? argv[8] : "";
		req.body_case = WARREN__V1__REQUEST__BODY_SET_ROUTE;
		req.set_route = &sr;
		ipc_send(fd, &req.base, NULL, 0);
		return report(fd);
	}
	if (!strcmp(mode, "removeroute") && argc >= 4) {
		Warren__V1__RemoveRouteRequest rr = WARREN__V1__REMOVE_ROUTE_REQUEST__INIT;
		rr.id = argv[3];
		req.body_case = WARREN__V1__REQUEST__BODY_REMOVE_ROUTE;
		req.remove_route = &rr;
		ipc_send(fd, &req.base, NULL, 0);
		return report(fd);
	}
	if (!strcmp(mode, "reclaim") && argc >= 4) {
		Warren__V1__ReclaimRequest rq = WARREN__V1__RECLAIM_REQUEST__INIT;
		rq.id = argv[3];
		req.body_case = WARREN__V1__REQUEST__BODY_RECLAIM;
		req.reclaim = &rq;
		ipc_send(fd, &req.base, NULL, 0);
		return report(fd);
	}
	if (!strcmp(mode, "claim-hold")) {
		Warren__V1__ClaimSlotRequest cs = WARREN__V1__CLAIM_SLOT_REQUEST__INIT;
		cs.timeout_ms = 5000;
		cs.allow_outbound = argc > 3 && !strcmp(argv[3], "outbound");
		req.body_case = WARREN__V1__REQUEST__BODY_CLAIM_SLOT;
		req.claim_slot = &cs;
		ipc_send(fd, &req.base, NULL, 0);
		IpcResponse *resp = NULL;
		int fds[IPC_MAX_FDS];
		size_t n = 0;
		int r = await(fd, &resp, fds, &n);
		if (r < 0 || resp->error || n != 1) {
			printf("failed %s\n", r < 0 ? strerror(-r) : resp->message);
			return 1;
		}
		printf("%u %s %s %d %d\n", resp->claim_slot->slot, resp->claim_slot->address,
		       resp->claim_slot->gateway, (int)getpid(), fds[0]);
		fflush(stdout);
		/* hold until killed; then give the slot back */
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGTERM);
		sigaddset(&set, SIGINT);
		sigprocmask(SIG_BLOCK, &set, NULL);
		int sig;
		sigwait(&set, &sig);
		Warren__V1__ReleaseSlotRequest rs = WARREN__V1__RELEASE_SLOT_REQUEST__INIT;
		rs.slot = resp->claim_slot->slot;
		req.body_case = WARREN__V1__REQUEST__BODY_RELEASE_SLOT;
		req.release_slot = &rs;
		req.id = 8;
		ipc_send(fd, &req.base, NULL, 0);
		return report(fd);
	}
	fprintf(stderr, "unknown mode %s\n", mode);
	return 2;
}
