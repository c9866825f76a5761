/* Test peer for Warren IPC: sends well-formed and malformed datagrams to a daemon and reports
 * what happened, or holds a claimed namespace slot for the isolation tests.
 *   ipc-poke SOCKET status
 *   ipc-poke SOCKET garbage|badversion|badfds|oversize|unknown|truncfd
 *   ipc-poke SOCKET setroute ID ADDR PORT STATE [START_TIMEOUT_MS [REASON]]
 *                       (IPC_POKE_AGENT_TOKEN=T, IPC_POKE_AGENT_API=1: the agent gate's fields)
 *   ipc-poke SOCKET removeroute ID
 *   ipc-poke SOCKET remoteroutes TOKEN [ID=HOST@ADDR:PORT|ID=HOST@lost ...]
 *                       (the gateway's cluster socket: one whole table, as clusterd pushes it)
 *   ipc-poke SOCKET reclaim ID
 *   ipc-poke SOCKET claim-hold [outbound]   (prints "slot address gateway pid fd", holds)
 *   ipc-poke SOCKET checkpoint ID DIR       (netnsd: checkpoint sandbox ID into DIR's fd)
 *   ipc-poke SOCKET pool-reserve COUNT    (netnsd: announce COUNT creates, any 32-bit value;
 *                                            prints "reserved R target T" or "error ERRNO MSG")
 *   ipc-poke SOCKET set-egress SLOT POLICY  (netnsd: prints "ok", "error ERRNO MSG" or
 *                                            "dropped")
 *   ipc-poke SOCKET slot-ns ID SLOT         (netnsd: prints "ns INODE" of the fd it gives back,
 *                                            or "error ERRNO MESSAGE")
 * With IPC_POKE_USER=NAME in the environment (started as root), DIR is opened first and the
 * peer then becomes NAME: a supervisor holding a directory of snapshotd's store, which it can
 * get by asking snapshotd (OpenImage, PrepareImage).
 *   ipc-poke SOCKET restore ID DIR ROOTFS BACKEND PORT MEMORY_MB
 *                       (netnsd: claim a slot, restore a new sandbox ID from DIR's fd in it,
 *                        release the slot again; prints the restore's answer)
 *   ipc-poke SOCKET exec ID TIMEOUT_MS ARGV...
 *                       (netnsd: prints "status S out BYTES err BYTES" and stderr's last line)
 *   ipc-poke SOCKET snap-...                 (snapshotd requests: see snapshotd_poke below)
 * A BACKEND is a name ("gvisor", "microvm", "" for the default) or a bare number, sent as the
 * proto enum's value unchecked: how a hostile peer names a backend that does not exist. A
 * COMPRESSION likewise: "auto", "none", "" (auto) or a bare number. */
#include "backend.h"
#include "image-layout.h"
#include "ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static Warren__V1__Backend
poke_backend(const char *s)
{
	int b = backend_from_string(s);
	if (b >= 0)
		return (Warren__V1__Backend)b;
	return (Warren__V1__Backend)(s[0] ? (int)strtol(s, NULL, 0) : 0);
}

static Warren__V1__Compression
poke_compression(const char *s)
{
	if (!strcmp(s, "none"))
		return WARREN__V1__COMPRESSION__COMPRESSION_NONE;
	if (!strcmp(s, "auto") || !s[0])
		return WARREN__V1__COMPRESSION__COMPRESSION_AUTO;
	return (Warren__V1__Compression)(int)strtol(s, NULL, 0);
}

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

/* The answer to request id (events, id 0, that every peer of netnsd gets are skipped). */
static int
await_id(int fd, uint64_t id, int timeout_ms, IpcResponse **resp, int *fds, size_t *n_fds)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, timeout_ms) <= 0)
			return -ETIMEDOUT;
		int r = await(fd, resp, fds, n_fds);
		if (r < 0 || (*resp)->id == id)
			return r;
	}
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

static int snapshotd_poke(int fd, IpcRequest *req, int argc, char **argv);

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: ipc-poke SOCKET MODE ...\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	int dir_fd = -1;
	if ((!strcmp(argv[2], "checkpoint") || !strcmp(argv[2], "restore")) && argc >= 5)
		dir_fd = open(argv[4], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const char *user = getenv("IPC_POKE_USER");
	if (user) {
		struct passwd *pw = getpwnam(user);
		if (!pw || initgroups(pw->pw_name, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
		    setuid(pw->pw_uid) < 0) {
			printf("cannot become %s\n", user);
			return 1;
		}
	}
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
		printf("daemon=%s version=%s ready=%d pool_size=%u pool_free=%u sandboxes=%u "
		       "routes=%llu\n",
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
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = ctl.raw,
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
		sr.state = !strcmp(argv[6], "running")	? WARREN__V1__ROUTE_STATE__ROUTE_RUNNING
			   : !strcmp(argv[6], "frozen") ? WARREN__V1__ROUTE_STATE__ROUTE_FROZEN
			   : !strcmp(argv[6], "failed") ? WARREN__V1__ROUTE_STATE__ROUTE_FAILED
							: WARREN__V1__ROUTE_STATE__ROUTE_STARTING;
		/* "booting": starting, its runtime not up yet (not probed); "starting": up */
		sr.runtime_up = strcmp(argv[6], "booting") != 0;
		sr.start_timeout_ms = argc > 7 ? (uint32_t)atoi(argv[7]) : 0;
		sr.reason = argc > 8 ? argv[8] : "";
		/* the agent port's token as the supervisor would push it (test-attack-agent-gate)
		 */
		sr.agent_token =
			getenv("IPC_POKE_AGENT_TOKEN") ? getenv("IPC_POKE_AGENT_TOKEN") : "";
		sr.agent_api = getenv("IPC_POKE_AGENT_API") != NULL;
		req.body_case = WARREN__V1__REQUEST__BODY_SET_ROUTE;
		req.set_route = &sr;
		ipc_send(fd, &req.base, NULL, 0);
		return report(fd);
	}
	if (!strcmp(mode, "remoteroutes") && argc >= 4) {
		size_t n = (size_t)(argc - 4);
		Warren__V1__RemoteRoute *rr = calloc(n + 1, sizeof *rr),
					**ptrs = calloc(n + 1, sizeof *ptrs);
		if (!rr || !ptrs)
			return 1;
		for (size_t i = 0; i < n; i++) {
			char *a = argv[4 + i], *eq = strchr(a, '='),
			     *at = eq ? strchr(eq, '@') : NULL;
			if (!at)
				return fprintf(stderr, "bad route %s\n", a), 2;
			warren__v1__remote_route__init(&rr[i]);
			*eq = *at = 0;
			rr[i].id = a;
			rr[i].host = eq + 1;
			char *colon = strrchr(at + 1, ':');
			rr[i].lost = !strcmp(at + 1, "lost");
			if (colon && !rr[i].lost) {
				*colon = 0;
				rr[i].port = (uint32_t)atoi(colon + 1);
			}
			rr[i].address = rr[i].lost ? "" : at + 1;
			ptrs[i] = &rr[i];
		}
		Warren__V1__SetRemoteRoutesRequest q = WARREN__V1__SET_REMOTE_ROUTES_REQUEST__INIT;
		q.generation = (uint64_t)getpid();
		q.hop_token = argv[3];
		q.routes = ptrs;
		q.n_routes = n;
		q.last = true;
		req.body_case = WARREN__V1__REQUEST__BODY_SET_REMOTE_ROUTES;
		req.set_remote_routes = &q;
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
	if (!strcmp(mode, "slot-ns") && argc >= 5) {
		Warren__V1__SlotNamespaceRequest sq = WARREN__V1__SLOT_NAMESPACE_REQUEST__INIT;
		sq.id = argv[3];
		sq.slot = (uint32_t)strtoul(argv[4], NULL, 0);
		req.body_case = WARREN__V1__REQUEST__BODY_SLOT_NAMESPACE;
		req.slot_namespace = &sq;
		ipc_send(fd, &req.base, NULL, 0);
		IpcResponse *resp = NULL;
		int fds[IPC_MAX_FDS];
		size_t n = 0;
		int r = await(fd, &resp, fds, &n);
		struct stat nst;
		if (r < 0 || resp->error) {
			printf("error %d %s\n", r < 0 ? r : resp->error,
			       r < 0 ? strerror(-r) : resp->message);
			return 1;
		}
		if (n != 1 || fstat(fds[0], &nst) < 0) {
			printf("error no fd\n");
			return 1;
		}
		printf("ns %llu\n", (unsigned long long)nst.st_ino);
		return 0;
	}
	if (!strcmp(mode, "set-egress") && argc >= 5) {
		Warren__V1__SetEgressRequest eq = WARREN__V1__SET_EGRESS_REQUEST__INIT;
		eq.slot = (uint32_t)strtoul(argv[3], NULL, 0);
		eq.policy = argv[4];
		req.body_case = WARREN__V1__REQUEST__BODY_SET_EGRESS;
		req.set_egress = &eq;
		ipc_send(fd, &req.base, NULL, 0);
		IpcResponse *resp = NULL;
		int fds[IPC_MAX_FDS];
		size_t n = 0;
		int r = await(fd, &resp, fds, &n);
		if (r == -ECONNRESET) {
			printf("dropped\n");
			return 1;
		}
		if (r < 0 || resp->error) {
			printf("error %d %s\n", r < 0 ? r : resp->error,
			       r < 0 ? strerror(-r) : resp->message);
			return 1;
		}
		printf("ok\n");
		return 0;
	}
	if (!strcmp(mode, "pool-reserve") && argc >= 4) {
		Warren__V1__PoolReserveRequest pq = WARREN__V1__POOL_RESERVE_REQUEST__INIT;
		pq.count = (uint32_t)strtoul(argv[3], NULL, 0);
		req.body_case = WARREN__V1__REQUEST__BODY_POOL_RESERVE;
		req.pool_reserve = &pq;
		ipc_send(fd, &req.base, NULL, 0);
		IpcResponse *resp = NULL;
		int fds[IPC_MAX_FDS];
		size_t n = 0;
		int r = await(fd, &resp, fds, &n);
		if (r == -ECONNRESET) {
			printf("dropped\n");
			return 1;
		}
		if (r < 0 || resp->error) {
			printf("error %d %s\n", r < 0 ? r : resp->error,
			       r < 0 ? strerror(-r) : resp->message);
			return 1;
		}
		if (resp->body_case != WARREN__V1__RESPONSE__BODY_POOL_RESERVE) {
			printf("error no body\n");
			return 1;
		}
		printf("reserved %u target %u\n", resp->pool_reserve->reserved,
		       resp->pool_reserve->target);
		return 0;
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
	if (!strcmp(mode, "checkpoint") && argc >= 5) {
		/* a hostile supervisor: any directory it can open, handed over as an image */
		int dfd = dir_fd;
		if (dfd < 0) {
			printf("open failed %s\n", strerror(errno));
			return 1;
		}
		Warren__V1__CheckpointSandboxRequest cq =
			WARREN__V1__CHECKPOINT_SANDBOX_REQUEST__INIT;
		cq.id = argv[3];
		req.body_case = WARREN__V1__REQUEST__BODY_CHECKPOINT_SANDBOX;
		req.checkpoint_sandbox = &cq;
		req.n_fds = 1;
		ipc_send(fd, &req.base, &dfd, 1);
		IpcResponse *resp = NULL;
		int fds[IPC_MAX_FDS];
		size_t n = 0;
		/* a checkpoint that went through takes a while: wait for it */
		int r = await_id(fd, req.id, 120000, &resp, fds, &n);
		if (r == -ECONNRESET)
			printf("dropped\n");
		else if (r < 0)
			printf("failed %s\n", strerror(-r));
		else if (resp->error)
			printf("error %d %s\n", resp->error, resp->message);
		else
			printf("ok\n");
		return 0;
	}
	if (!strcmp(mode, "restore") && argc >= 9) {
		int dfd = dir_fd;
		if (dfd < 0) {
			printf("open failed %s\n", strerror(errno));
			return 1;
		}
		Warren__V1__ClaimSlotRequest cs = WARREN__V1__CLAIM_SLOT_REQUEST__INIT;
		cs.timeout_ms = 5000;
		req.body_case = WARREN__V1__REQUEST__BODY_CLAIM_SLOT;
		req.claim_slot = &cs;
		ipc_send(fd, &req.base, NULL, 0);
		IpcResponse *resp = NULL;
		int fds[IPC_MAX_FDS];
		size_t n = 0;
		int r = await_id(fd, req.id, 10000, &resp, fds, &n);
		if (r < 0 || resp->error || n != 1) {
			printf("failed claim %s\n", r < 0 ? strerror(-r) : resp->message);
			return 1;
		}
		unsigned slot = resp->claim_slot->slot;
		char *args[] = {"/bin/sh", "-c", "sleep 1000"};
		Warren__V1__SpawnSandboxRequest sp = WARREN__V1__SPAWN_SANDBOX_REQUEST__INIT;
		sp.id = argv[3];
		sp.slot = slot;
		sp.rootfs = argv[5];
		sp.backend = poke_backend(argv[6]);
		sp.port = (uint32_t)atoi(argv[7]);
		sp.memory_limit = (uint64_t)atoll(argv[8]) << 20;
		sp.argv = args;
		sp.n_argv = 3;
		Warren__V1__RestoreSandboxRequest rq = WARREN__V1__RESTORE_SANDBOX_REQUEST__INIT;
		rq.spawn = &sp;
		req.id = 8;
		req.body_case = WARREN__V1__REQUEST__BODY_RESTORE_SANDBOX;
		req.restore_sandbox = &rq;
		int two[2] = {fds[0], dfd};
		req.n_fds = 2;
		ipc_send(fd, &req.base, two, 2);
		req.n_fds = 0;
		r = await_id(fd, req.id, 120000, &resp, fds, &n);
		if (r == -ECONNRESET) {
			printf("dropped\n");
			return 0;
		}
		if (r < 0)
			printf("failed %s\n", strerror(-r));
		else if (resp->error)
			printf("error %d %s\n", resp->error, resp->message);
		else
			printf("ok\n");
		fflush(stdout);
		if (r == 0 && !resp->error) {
			/* it went through: take it down again */
			Warren__V1__DestroySandboxRequest dq =
				WARREN__V1__DESTROY_SANDBOX_REQUEST__INIT;
			dq.id = argv[3];
			req.id = 9;
			req.body_case = WARREN__V1__REQUEST__BODY_DESTROY_SANDBOX;
			req.destroy_sandbox = &dq;
			ipc_send(fd, &req.base, NULL, 0);
			await_id(fd, req.id, 60000, &resp, fds, &n);
		}
		Warren__V1__ReleaseSlotRequest rs = WARREN__V1__RELEASE_SLOT_REQUEST__INIT;
		rs.slot = slot;
		req.id = 10;
		req.body_case = WARREN__V1__REQUEST__BODY_RELEASE_SLOT;
		req.release_slot = &rs;
		ipc_send(fd, &req.base, NULL, 0);
		await_id(fd, req.id, 10000, &resp, fds, &n);
		return 0;
	}
	if (!strcmp(mode, "exec") && argc >= 6) {
		Warren__V1__ExecRequest eq = WARREN__V1__EXEC_REQUEST__INIT;
		eq.id = argv[3];
		eq.timeout_ms = (uint32_t)atoi(argv[4]);
		eq.argv = argv + 5;
		eq.n_argv = (size_t)(argc - 5);
		req.body_case = WARREN__V1__REQUEST__BODY_EXEC;
		req.exec = &eq;
		ipc_send(fd, &req.base, NULL, 0);
		IpcResponse *resp = NULL;
		int fds[IPC_MAX_FDS];
		size_t n = 0;
		int r = await_id(fd, req.id, (int)eq.timeout_ms + 30000, &resp, fds, &n);
		if (r < 0 || resp->error || n != 2) {
			printf("failed %s\n", r < 0 ? strerror(-r) : resp->message);
			return 1;
		}
		struct stat so, se;
		fstat(fds[0], &so);
		fstat(fds[1], &se);
		char tail[256] = "";
		off_t from = se.st_size > 200 ? se.st_size - 200 : 0;
		ssize_t k = pread(fds[1], tail, sizeof tail - 1, from);
		tail[k > 0 ? k : 0] = 0;
		for (char *c = tail; *c; c++)
			if (*c == '\n')
				*c = ' ';
		printf("status %d out %lld err %lld\n%s\n", resp->exec->status,
		       (long long)so.st_size, (long long)se.st_size, tail);
		return 0;
	}
	if (!strncmp(mode, "snap-", 5))
		return snapshotd_poke(fd, &req, argc, argv);
	fprintf(stderr, "unknown mode %s\n", mode);
	return 2;
}

/* ---- snapshotd requests, as a (possibly compromised) supervisor would send them ----
 *   snap-list                      ListImages: "ok NAME..."
 *   snap-open TAG                  OpenImage: "ok TEMPLATE BACKEND FDS"
 *   snap-prepare TAG               PrepareImage: "ok TEMP FDS" (the directory is left)
 *   snap-take TAG TEMPLATE BACKEND [COMPRESSION]
 *                                  prepare, write a file through the fd, commit (positive path)
 *   snap-commit TEMP TAG [PARENT [TEMPLATE [BACKEND [COMPRESSION]]]]
 *   snap-remove TAG | snap-abort TEMP
 *   snap-fds N dev|dir TAG         OpenImage declaring and carrying N fds (/dev/null or /)
 *   snap-swap BYTES                SetupReclaim: a swap file of BYTES, zswap off
 *   snap-big tag|temp|parent|template|backend|compression|compressor SIZE
 *                                  a field of SIZE bytes ("a" repeated)
 * Every mode prints "dropped" when snapshotd hung up, "error N MESSAGE" for an error reply. */
static int
snap_send(int fd, IpcRequest *req, const int *fds, size_t n_fds)
{
	req->n_fds = (uint32_t)n_fds;
	int r = ipc_send(fd, &req->base, fds, n_fds);
	if (r < 0) {
		printf("send failed %s\n", strerror(-r));
		return 1;
	}
	return 0;
}

/* Await one reply: 0 with *resp, or 1 after printing what happened instead. */
static int
snap_reply(int fd, IpcResponse **resp, int *fds, size_t *n)
{
	int r = await(fd, resp, fds, n);
	if (r == -ECONNRESET) {
		printf("dropped\n");
		return 1;
	}
	if (r < 0) {
		printf("failed %s\n", strerror(-r));
		return 1;
	}
	if ((*resp)->error) {
		printf("error %d %s\n", (*resp)->error, (*resp)->message);
		return 1;
	}
	return 0;
}

static char *
snap_big(size_t n)
{
	char *s = malloc(n + 1);
	memset(s, 'a', n);
	s[n] = 0;
	return s;
}

static int
snapshotd_poke(int fd, IpcRequest *req, int argc, char **argv)
{
	const char *mode = argv[2];
	IpcResponse *resp = NULL;
	int fds[IPC_MAX_FDS];
	size_t n = 0;
	Warren__V1__ListImagesRequest lq = WARREN__V1__LIST_IMAGES_REQUEST__INIT;
	Warren__V1__OpenImageRequest oq = WARREN__V1__OPEN_IMAGE_REQUEST__INIT;
	Warren__V1__PrepareImageRequest pq = WARREN__V1__PREPARE_IMAGE_REQUEST__INIT;
	Warren__V1__CommitImageRequest cq = WARREN__V1__COMMIT_IMAGE_REQUEST__INIT;
	Warren__V1__RemoveImageRequest rq = WARREN__V1__REMOVE_IMAGE_REQUEST__INIT;
	Warren__V1__AbortImageRequest aq = WARREN__V1__ABORT_IMAGE_REQUEST__INIT;
	Warren__V1__SetupReclaimRequest sq = WARREN__V1__SETUP_RECLAIM_REQUEST__INIT;
	if (!strcmp(mode, "snap-list")) {
		req->body_case = WARREN__V1__REQUEST__BODY_LIST_IMAGES;
		req->list_images = &lq;
		if (snap_send(fd, req, NULL, 0) || snap_reply(fd, &resp, fds, &n))
			return 1;
		printf("ok");
		for (size_t i = 0; i < resp->list_images->n_images; i++)
			printf(" %s", resp->list_images->images[i]->name);
		printf("\n");
		return 0;
	}
	if (!strcmp(mode, "snap-open") && argc >= 4) {
		req->body_case = WARREN__V1__REQUEST__BODY_OPEN_IMAGE;
		req->open_image = &oq;
		oq.tag = argv[3];
		if (snap_send(fd, req, NULL, 0) || snap_reply(fd, &resp, fds, &n))
			return 1;
		printf("ok %s %s %zu\n", resp->open_image->image->template_name,
		       backend_to_string(resp->open_image->image->backend) ?: "?", n);
		return 0;
	}
	if ((!strcmp(mode, "snap-prepare") && argc >= 4) ||
	    (!strcmp(mode, "snap-take") && argc >= 6)) {
		req->body_case = WARREN__V1__REQUEST__BODY_PREPARE_IMAGE;
		req->prepare_image = &pq;
		pq.tag = argv[3];
		if (snap_send(fd, req, NULL, 0) || snap_reply(fd, &resp, fds, &n))
			return 1;
		if (!strcmp(mode, "snap-prepare")) {
			printf("ok %s %zu\n", resp->prepare_image->temp_name, n);
			return 0;
		}
		if (n != 1) {
			printf("failed no directory fd\n");
			return 1;
		}
		/* what a checkpoint does: a file in the directory handed over, given to the
		 * directory's owner (snapshotd's user) as the spawner does: snapshotd keeps no
		 * CAP_DAC_OVERRIDE to read a member that is someone else's */
		int f = openat(fds[0], IMAGE_LAYOUT_GVISOR_CHECKPOINT,
			       O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		struct stat dst;
		if (f >= 0 && geteuid() == 0 && fstat(fds[0], &dst) == 0 &&
		    fchown(f, dst.st_uid, dst.st_gid) < 0) {
			printf("failed handing the image over: %s\n", strerror(errno));
			return 1;
		}
		if (f < 0 || write(f, "poke-image\n", 11) != 11) {
			printf("failed writing the image: %s\n", strerror(errno));
			return 1;
		}
		close(f);
		close(fds[0]);
		cq.temp_name = resp->prepare_image->temp_name;
		cq.tag = argv[3];
		cq.template_name = argv[4];
		cq.backend = poke_backend(argv[5]);
		cq.compression = poke_compression(argc > 6 ? argv[6] : "");
		req->body_case = WARREN__V1__REQUEST__BODY_COMMIT_IMAGE;
		req->commit_image = &cq;
		req->id++;
		if (snap_send(fd, req, NULL, 0) || snap_reply(fd, &resp, fds, &n))
			return 1;
		printf("ok %s %llu\n", resp->commit_image->image->name,
		       (unsigned long long)resp->commit_image->image->size);
		return 0;
	}
	if (!strcmp(mode, "snap-commit") && argc >= 5) {
		cq.temp_name = argv[3];
		cq.tag = argv[4];
		cq.parent = argc > 5 ? argv[5] : "";
		cq.template_name = argc > 6 ? argv[6] : "";
		cq.backend = poke_backend(argc > 7 ? argv[7] : "");
		cq.compression = poke_compression(argc > 8 ? argv[8] : "");
		req->body_case = WARREN__V1__REQUEST__BODY_COMMIT_IMAGE;
		req->commit_image = &cq;
		if (snap_send(fd, req, NULL, 0) || snap_reply(fd, &resp, fds, &n))
			return 1;
		printf("ok\n");
		return 0;
	}
	if (!strcmp(mode, "snap-remove") && argc >= 4) {
		rq.tag = argv[3];
		req->body_case = WARREN__V1__REQUEST__BODY_REMOVE_IMAGE;
		req->remove_image = &rq;
		if (snap_send(fd, req, NULL, 0) || snap_reply(fd, &resp, fds, &n))
			return 1;
		printf("ok\n");
		return 0;
	}
	if (!strcmp(mode, "snap-abort") && argc >= 4) {
		aq.temp_name = argv[3];
		req->body_case = WARREN__V1__REQUEST__BODY_ABORT_IMAGE;
		req->abort_image = &aq;
		if (snap_send(fd, req, NULL, 0) || snap_reply(fd, &resp, fds, &n))
			return 1;
		printf("ok\n");
		return 0;
	}
	if (!strcmp(mode, "snap-fds") && argc >= 6) {
		size_t k = (size_t)atoi(argv[3]);
		int out[IPC_MAX_FDS];
		if (k > IPC_MAX_FDS)
			k = IPC_MAX_FDS;
		for (size_t i = 0; i < k; i++)
			out[i] = !strcmp(argv[4], "dir")
					 ? open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
					 : open("/dev/null", O_RDWR | O_CLOEXEC);
		req->body_case = WARREN__V1__REQUEST__BODY_OPEN_IMAGE;
		req->open_image = &oq;
		oq.tag = argv[5];
		if (snap_send(fd, req, out, k) || snap_reply(fd, &resp, fds, &n))
			return 1;
		printf("ok\n");
		return 0;
	}
	if (!strcmp(mode, "snap-swap") && argc >= 4) {
		/* SetupReclaim with a swap file of BYTES (zswap off) */
		req->body_case = WARREN__V1__REQUEST__BODY_SETUP_RECLAIM;
		req->setup_reclaim = &sq;
		sq.swap_bytes = strtoull(argv[3], NULL, 10);
		sq.compressor = "";
		if (snap_send(fd, req, NULL, 0) || snap_reply(fd, &resp, fds, &n))
			return 1;
		printf("ok %llu\n", (unsigned long long)resp->setup_reclaim->swap_bytes);
		return 0;
	}
	if (!strcmp(mode, "snap-big") && argc >= 5) {
		char *big = snap_big((size_t)atol(argv[4]));
		const char *field = argv[3];
		if (!strcmp(field, "tag")) {
			req->body_case = WARREN__V1__REQUEST__BODY_OPEN_IMAGE;
			req->open_image = &oq;
			oq.tag = big;
		} else if (!strcmp(field, "compressor")) {
			req->body_case = WARREN__V1__REQUEST__BODY_SETUP_RECLAIM;
			req->setup_reclaim = &sq;
			sq.query = 1;
			sq.compressor = big;
		} else if (!strcmp(field, "temp")) {
			req->body_case = WARREN__V1__REQUEST__BODY_ABORT_IMAGE;
			req->abort_image = &aq;
			aq.temp_name = big;
		} else {
			req->body_case = WARREN__V1__REQUEST__BODY_COMMIT_IMAGE;
			req->commit_image = &cq;
			cq.temp_name = ".tmp.v1.00000000";
			cq.tag = "v1";
			if (!strcmp(field, "parent"))
				cq.parent = big;
			else if (!strcmp(field, "template"))
				cq.template_name = big;
			else if (!strcmp(field, "compression"))
				cq.compression = poke_compression(
					"2147483647"); /* a number outside the enum */
			else
				cq.backend = poke_backend(
					"2147483647"); /* no string: a number outside the enum */
		}
		if (snap_send(fd, req, NULL, 0) || snap_reply(fd, &resp, fds, &n))
			return 1;
		printf("ok\n");
		return 0;
	}
	fprintf(stderr, "unknown or incomplete mode %s\n", mode);
	return 2;
}
