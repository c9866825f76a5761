/* libFuzzer harness: the common IPC envelope (common/ipc.c: receive, decode, version and fd
 * count) and the dispatch-table checks (common/ipc-server.c: lookup, fd count, once, ready) of
 * a privileged server, fed real datagrams with real fds over a SOCK_SEQPACKET pair. The input is
 * up to four datagrams separated by "|||", the first byte of each saying how many fds (0-7) to
 * attach. The handlers only answer: what is fuzzed is everything before them. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc-server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned handled;

static int
handle(struct ipc_call *call, void *ud)
{
	handled++;
	/* what the table promised: the declared and received fd counts agree */
	for (size_t i = 0; i < call->n_fds; i++)
		if (fcntl(call->fds[i], F_GETFD) < 0)
			__builtin_trap();
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	return ipc_call_reply(call, &resp, NULL, 0);
}

static const struct ipc_handler table[] = {
	{WARREN__V1__REQUEST__BODY_STATUS, 0, 0, handle},
	{WARREN__V1__REQUEST__BODY_LIST_IMAGES, 0, IPC_NEEDS_READY, handle},
	{WARREN__V1__REQUEST__BODY_CLAIM_SLOT, 0, IPC_ONCE, handle},
	{WARREN__V1__REQUEST__BODY_SPAWN_SANDBOX, 1, IPC_NEEDS_READY, handle},
	{WARREN__V1__REQUEST__BODY_CHECKPOINT_SANDBOX, 1, 0, handle},
};

static struct event_base *base;

static void
send_datagram(int fd, const uint8_t *d, size_t n)
{
	unsigned want = n ? d[0] & 7 : 0;
	int fds[8];
	for (unsigned i = 0; i < want; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct iovec iov = {.iov_base = (void *)(n ? d + 1 : d), .iov_len = n ? n - 1 : 0};
	union {
		char raw[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (want) {
		memset(&ctl, 0, sizeof ctl);
		mh.msg_control = ctl.raw;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * want);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * want);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * want);
	}
	sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	for (unsigned i = 0; i < want; i++)
		close(fds[i]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base)
		base = event_base_new();
	if (size > IPC_MAX_MESSAGE * 2)
		return 0;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return 0;
	struct ipc_server_config cfg = {.name = "fuzz",
					.table = table,
					.n_table = sizeof table / sizeof table[0],
					.drop_on_violation = size && (data[0] & 0x80),
					.userdata = NULL};
	struct ipc_server *s = ipc_server_new(base, -1, &cfg);
	ipc_server_set_ready(s, size && (data[0] & 0x40));
	ipc_server_adopt(s, sv[0]);
	const uint8_t *p = size ? data + 1 : data, *end = data + size;
	for (int k = 0; k < 4 && p <= end; k++) {
		const uint8_t *sep = (const uint8_t *)memmem(p, (size_t)(end - p), "|||", 3);
		const uint8_t *stop = sep ? sep : end;
		send_datagram(sv[1], p, (size_t)(stop - p));
		event_base_loop(base, EVLOOP_NONBLOCK);
		/* drain replies so the socket never fills */
		char buf[IPC_MAX_MESSAGE];
		while (recv(sv[1], buf, sizeof buf, MSG_DONTWAIT) > 0)
			;
		if (!sep)
			break;
		p = sep + 3;
	}
	close(sv[1]);
	event_base_loop(base, EVLOOP_NONBLOCK); /* the peer sees end of file */
	ipc_server_free(s);
	return 0;
}
