/* Bounded per-connection queue of outgoing IPC datagrams (every process; see ipc-queue.h). A
 * SOCK_SEQPACKET socket refuses a datagram with EAGAIN once the peer's receive queue is full:
 * without this queue that reply or request was simply lost. */
#include "ipc-queue.h"
#include "macro.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

struct ipc_queue_item {
	uint8_t *buf;
	size_t len;
	int fds[IPC_MAX_FDS];
	size_t n_fds;
	struct ipc_queue_item *next;
};

static void
item_free(struct ipc_queue_item *it)
{
	ipc_close_fds(it->fds, it->n_fds);
	free(it->buf);
	free(it);
}

static int
queue_push(struct ipc_queue *q, uint8_t *buf, size_t len, const int *fds, size_t n_fds)
{
	if (q->n >= IPC_QUEUE_MAX_MSGS || q->bytes + len > IPC_QUEUE_MAX_BYTES)
		return -ENOBUFS;
	struct ipc_queue_item *it = calloc(1, sizeof *it);
	if (!it)
		return -ENOMEM;
	/* The caller keeps (and may close) its fds as soon as we return: send our own copies. */
	for (size_t i = 0; i < n_fds; i++) {
		it->fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
		if (it->fds[i] < 0) {
			int r = -errno;
			it->n_fds = i;
			item_free(it);
			return r;
		}
	}
	it->n_fds = n_fds;
	it->buf = buf;
	it->len = len;
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	q->n++;
	q->bytes += len;
	return 0;
}

int
ipc_queue_send(struct ipc_queue *q, int fd, const ProtobufCMessage *msg, const int *fds,
	       size_t n_fds)
{
	if (n_fds > IPC_MAX_FDS)
		return -EMSGSIZE;
	uint8_t *buf;
	size_t len;
	int r = ipc_pack(msg, &buf, &len);
	if (r < 0)
		return r;
	/* Order matters (a reply must not overtake the event before it): once anything is
	 * queued, everything after it queues too. */
	if (ipc_queue_empty(q)) {
		r = ipc_send_packed(fd, buf, len, fds, n_fds);
		if (r != -EAGAIN) {
			free(buf);
			return r;
		}
	}
	r = queue_push(q, buf, len, fds, n_fds);
	if (r < 0) {
		free(buf);
		return r;
	}
	return 1;
}

int
ipc_queue_flush(struct ipc_queue *q, int fd)
{
	while (q->head) {
		struct ipc_queue_item *it = q->head;
		int r = ipc_send_packed(fd, it->buf, it->len, it->fds, it->n_fds);
		if (r == -EAGAIN)
			return 1;
		if (r < 0)
			return r;
		q->head = it->next;
		if (!q->head)
			q->tail = NULL;
		q->n--;
		q->bytes -= it->len;
		item_free(it);
	}
	return 0;
}

void
ipc_queue_clear(struct ipc_queue *q)
{
	while (q->head) {
		struct ipc_queue_item *it = q->head;
		q->head = it->next;
		item_free(it);
	}
	q->tail = NULL;
	q->n = 0;
	q->bytes = 0;
}
