/* Outgoing datagrams of one IPC connection that the socket could not take yet (EAGAIN): kept in
 * order with their fds and flushed when the socket becomes writable. Bounded: a peer that stops
 * reading fills the queue and is dropped by the caller, so memory never grows without limit.
 * Used by common/ipc-server.c (replies, events) and common/ipc-client.c (requests). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "ipc.h"

/* A peer that leaves this much unread is not reading: the connection is dropped. The daemons'
 * bursts (a fork of N answers N events, a status poll one reply) stay far below both. */
#define IPC_QUEUE_MAX_MSGS 1024
#define IPC_QUEUE_MAX_BYTES (4u << 20)

struct ipc_queue_item;
struct ipc_queue {
	struct ipc_queue_item *head, *tail;
	size_t n, bytes;
};

/* Send msg now if nothing is queued and the socket takes it, else queue it (the fds are
 * duplicated; the caller keeps its own). Returns 0 sent, 1 queued (the caller must watch for
 * writable and call ipc_queue_flush), -ENOBUFS if the queue is full (nothing queued: drop the
 * peer), -EMSGSIZE/-ENOMEM, or the socket's error (-EPIPE, -ECONNRESET...). */
int ipc_queue_send(struct ipc_queue *q, int fd, const ProtobufCMessage *msg, const int *fds,
		   size_t n_fds);
/* Send what the socket takes now. Returns 0 when the queue is empty, 1 while some is left,
 * -errno on a socket error (the queue is kept; the caller drops the peer and clears it). */
int ipc_queue_flush(struct ipc_queue *q, int fd);
/* Free every queued datagram and close its fds. */
void ipc_queue_clear(struct ipc_queue *q);
static inline bool
ipc_queue_empty(const struct ipc_queue *q)
{
	return q->n == 0;
}
