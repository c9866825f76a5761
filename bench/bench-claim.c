/* Benchmark helper: time netnsd's ClaimSlot/ReleaseSlot round trips over its socket.
 *   bench-claim SOCKET N   -> prints one claim latency (microseconds) per line */
#include "clock.h"
#include "ipc.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static IpcResponse *
roundtrip(int fd, IpcRequest *req, int *fds, size_t *n)
{
	if (ipc_send(fd, &req->base, NULL, 0) < 0)
		return NULL;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 5000) <= 0)
		return NULL;
	IpcResponse *resp = NULL;
	return ipc_recv_response(fd, &resp, fds, n) == 0 ? resp : NULL;
}

int
main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int fd = ipc_connect(argv[1], 0);
	if (fd < 0)
		return 1;
	int n = atoi(argv[2]);
	for (int i = 0; i < n; i++) {
		IpcRequest req = WARREN__V1__REQUEST__INIT;
		Warren__V1__ClaimSlotRequest cs = WARREN__V1__CLAIM_SLOT_REQUEST__INIT;
		req.version = IPC_VERSION;
		req.id = (uint64_t)(2 * i + 1);
		req.body_case = WARREN__V1__REQUEST__BODY_CLAIM_SLOT;
		req.claim_slot = &cs;
		int fds[IPC_MAX_FDS];
		size_t nf = 0;
		uint64_t t0 = now_usec();
		IpcResponse *resp = roundtrip(fd, &req, fds, &nf);
		uint64_t t1 = now_usec();
		if (!resp || resp->error || nf != 1)
			return 1;
		printf("%llu\n", (unsigned long long)(t1 - t0));
		close(fds[0]);
		Warren__V1__ReleaseSlotRequest rs = WARREN__V1__RELEASE_SLOT_REQUEST__INIT;
		rs.slot = resp->claim_slot->slot;
		req.id++;
		req.body_case = WARREN__V1__REQUEST__BODY_RELEASE_SLOT;
		req.release_slot = &rs;
		protobuf_c_message_free_unpacked(&resp->base, NULL);
		resp = roundtrip(fd, &req, fds, &nf);
		if (!resp || resp->error)
			return 1;
		protobuf_c_message_free_unpacked(&resp->base, NULL);
	}
	return 0;
}
