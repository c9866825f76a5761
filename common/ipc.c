/* Framing of Warren IPC datagrams: send/receive with SCM_RIGHTS, envelope checks. Used by every
 * process (servers in common/ipc-server.c, clients in common/ipc-client.c). */
#include "ipc.h"
#include "clock.h"
#include "macro.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

void
ipc_close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fds[i] = safe_close(fds[i]);
}

int
ipc_pack(const ProtobufCMessage *msg, uint8_t **buf, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(msg);
	if (n > IPC_MAX_MESSAGE)
		return -EMSGSIZE;
	uint8_t *b = malloc(n ? n : 1);
	if (!b)
		return -ENOMEM;
	protobuf_c_message_pack(msg, b);
	*buf = b;
	*len = n;
	return 0;
}

int
ipc_send_packed(int fd, const uint8_t *buf, size_t len, const int *fds, size_t n_fds)
{
	if (n_fds > IPC_MAX_FDS)
		return -EMSGSIZE;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	union {
		char raw[CMSG_SPACE(sizeof(int) * IPC_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n_fds > 0) {
		memset(&ctl, 0, sizeof ctl);
		mh.msg_control = ctl.raw;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	ssize_t k;
	do
		k = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (k < 0 && errno == EINTR);
	return k < 0 ? -errno : 0;
}

int
ipc_send(int fd, const ProtobufCMessage *msg, const int *fds, size_t n_fds)
{
	if (n_fds > IPC_MAX_FDS)
		return -EMSGSIZE;
	uint8_t *buf;
	size_t len;
	int r = ipc_pack(msg, &buf, &len);
	if (r < 0)
		return r;
	r = ipc_send_packed(fd, buf, len, fds, n_fds);
	free(buf);
	return r;
}

ssize_t
ipc_recv_raw(int fd, uint8_t *buf, size_t size, int *fds, size_t *n_fds)
{
	struct iovec iov = {.iov_base = buf, .iov_len = size};
	union {
		char raw[CMSG_SPACE(sizeof(int) * IPC_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctl.raw,
			    .msg_controllen = sizeof ctl.raw};
	*n_fds = 0;
	ssize_t k;
	do
		k = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *in = (int *)CMSG_DATA(c);
		for (size_t i = 0; i < n; i++) {
			if (*n_fds < IPC_MAX_FDS)
				fds[(*n_fds)++] = in[i];
			else
				close(in[i]);
		}
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		ipc_close_fds(fds, *n_fds);
		*n_fds = 0;
		return -EMSGSIZE;
	}
	return k;
}

static int
ipc_recv_message(int fd, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **out, int *fds,
		 size_t *n_fds)
{
	static uint8_t buf[IPC_MAX_MESSAGE + 1];
	ssize_t k = ipc_recv_raw(fd, buf, sizeof buf, fds, n_fds);
	if (k < 0)
		return (int)k;
	if (k == 0)
		return -ECONNRESET;
	if (k > IPC_MAX_MESSAGE) {
		ipc_close_fds(fds, *n_fds);
		return -EMSGSIZE;
	}
	ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, (size_t)k, buf);
	if (!m) {
		ipc_close_fds(fds, *n_fds);
		return -EBADMSG;
	}
	/* version and n_fds sit at the same place in both envelopes' descriptors */
	uint32_t version, declared;
	if (desc == &warren__v1__request__descriptor) {
		version = ((IpcRequest *)m)->version;
		declared = ((IpcRequest *)m)->n_fds;
	} else {
		version = ((IpcResponse *)m)->version;
		declared = ((IpcResponse *)m)->n_fds;
	}
	if (version != IPC_VERSION || declared != *n_fds) {
		protobuf_c_message_free_unpacked(m, NULL);
		ipc_close_fds(fds, *n_fds);
		return -EPROTO;
	}
	*out = m;
	return 0;
}

int
ipc_recv_request(int fd, IpcRequest **req, int *fds, size_t *n_fds)
{
	return ipc_recv_message(fd, &warren__v1__request__descriptor, (ProtobufCMessage **)req, fds,
				n_fds);
}

int
ipc_recv_response(int fd, IpcResponse **resp, int *fds, size_t *n_fds)
{
	return ipc_recv_message(fd, &warren__v1__response__descriptor, (ProtobufCMessage **)resp,
				fds, n_fds);
}

int
ipc_peer_cred(int fd, uid_t *uid, pid_t *pid)
{
	struct ucred uc;
	socklen_t len = sizeof uc;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
		return -errno;
	if (uid)
		*uid = uc.uid;
	if (pid)
		*pid = uc.pid;
	return 0;
}

int
ipc_listen(const char *path, int mode)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		return -errno;
	if (chmod(path, mode) < 0 || listen(fd, 64) < 0)
		return -errno;
	return TAKE_FD(fd);
}

int
unix_connect(const char *path, int type, unsigned wait_ms)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	uint64_t t0 = now_usec();
	for (;;) {
		_cleanup_close_ int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
			return TAKE_FD(fd);
		if (now_usec() - t0 >= (uint64_t)wait_ms * 1000)
			return -errno;
		usleep(1000);
	}
}

int
ipc_connect(const char *path, int nonblock)
{
	return unix_connect(path, SOCK_SEQPACKET | (nonblock ? SOCK_NONBLOCK : 0), 0);
}

const char *
ipc_request_name(int body_case)
{
	for (unsigned i = 0; i < warren__v1__request__descriptor.n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &warren__v1__request__descriptor.fields[i];
		if ((int)f->id == body_case)
			return f->name;
	}
	return "unknown";
}
