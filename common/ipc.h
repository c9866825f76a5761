/* Warren IPC: one protobuf-c envelope per SOCK_SEQPACKET datagram, fds with SCM_RIGHTS.
 * See docs/PROTOCOL.md. This file holds the framing shared by servers, clients and tests. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "warren/v1/envelope.pb-c.h"

/* 4: netnsd names each sandbox's cgroup (SpawnSandboxResponse.cgroup, SandboxInfo.cgroup), so
 *    the supervisor no longer composes it from a --cgroup-parent of its own;
 * 3: CommitImageRequest.compression (snapshotd no longer reads the policy from a tag's name);
 * 2: the backend an enum, not a string */
#define IPC_VERSION 4
#define IPC_MAX_MESSAGE 65536 /* hard limit on one datagram */
#define IPC_MAX_FDS 4

typedef Warren__V1__Request IpcRequest;
typedef Warren__V1__Response IpcResponse;

/* Pack and send one message with fds. On a non-blocking socket whose peer is not reading this
 * returns -EAGAIN and nothing is sent: daemons go through common/ipc-queue.c instead. */
int ipc_send(int fd, const ProtobufCMessage *msg, const int *fds, size_t n_fds);
/* The two halves of ipc_send, for the outgoing queue: pack into a malloc'd buffer (-EMSGSIZE
 * over the limit), and send one packed datagram. */
int ipc_pack(const ProtobufCMessage *msg, uint8_t **buf, size_t *len);
int ipc_send_packed(int fd, const uint8_t *buf, size_t len, const int *fds, size_t n_fds);
/* Receive one datagram into buf. Returns its length, 0 at EOF, -EMSGSIZE for truncated data
 * or control, -errno otherwise. fds received are CLOEXEC and owned by the caller. */
ssize_t ipc_recv_raw(int fd, uint8_t *buf, size_t size, int *fds, size_t *n_fds);
/* Receive and decode a Request / Response; checks version and that n_fds matches what
 * arrived (-EPROTO), or that it decodes (-EBADMSG). On error every received fd is closed. */
int ipc_recv_request(int fd, IpcRequest **req, int *fds, size_t *n_fds);
int ipc_recv_response(int fd, IpcResponse **resp, int *fds, size_t *n_fds);
void ipc_close_fds(int *fds, size_t n);
/* SO_PEERCRED of a connected socket. */
int ipc_peer_cred(int fd, uid_t *uid, pid_t *pid);
/* Listening / connected SOCK_SEQPACKET sockets (CLOEXEC, NONBLOCK when asked). */
int ipc_listen(const char *path, int mode);
int ipc_connect(const char *path, int nonblock);
/* A Unix socket of type (SOCK_STREAM, ...; may carry SOCK_NONBLOCK) connected to path; with
 * wait_ms, retried every millisecond that long while nothing accepts there yet (a server that
 * is starting). */
int unix_connect(const char *path, int type, unsigned wait_ms);
const char *ipc_request_name(int body_case);
