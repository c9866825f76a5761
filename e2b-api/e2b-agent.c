/* warren-e2b-api: POST /init to a sandbox's agent (the envd API, port 49983) through Warren's
 * gateway, routed by the E2b-Sandbox-Id/E2b-Sandbox-Port headers as the SDK's own requests
 * are. It carries the env vars, the access token of a secure sandbox and the clock. The agent
 * is hostile like any guest: only the status line of its answer is read, from a bounded head,
 * and every step has a deadline. */
#include "agent-protocol.h"
#include "e2b-api.h"
#include "log.h"
#include "macro.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RETRY_MS 100
#define HEAD_MAX 4096

static int64_t
mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r > 0)
			return 0;
	}
}

/* one attempt: the HTTP status, or -errno */
static int
attempt(struct e2b_api *a, const char *req, size_t req_len, int64_t deadline)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a->gateway, sizeof a->gateway) < 0) {
		if (errno != EINPROGRESS)
			return -errno;
		int r = wait_fd(fd, POLLOUT, deadline), err = 0;
		socklen_t sl = sizeof err;
		if (r < 0)
			return r;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0 || err)
			return -(err ? err : errno);
	}
	for (size_t off = 0; off < req_len;) {
		ssize_t k = send(fd, req + off, req_len - off, MSG_NOSIGNAL);
		if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
			int r = wait_fd(fd, POLLOUT, deadline);
			if (r < 0)
				return r;
			continue;
		}
		if (k < 0)
			return -errno;
		off += (size_t)k;
	}
	char head[HEAD_MAX + 1];
	size_t got = 0;
	while (got < 12) {
		int r = wait_fd(fd, POLLIN, deadline);
		if (r < 0)
			return r;
		ssize_t k = recv(fd, head + got, HEAD_MAX - got, 0);
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -ECONNRESET;
		got += (size_t)k;
	}
	head[got] = 0;
	if (strncmp(head, "HTTP/1.", 7) || head[8] != ' ' || head[9] < '1' || head[9] > '5' ||
	    head[10] < '0' || head[10] > '9' || head[11] < '0' || head[11] > '9')
		return -EPROTO;
	return (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
}

int
e2b_agent_init(struct e2b_api *a, const char *id, const char *body, size_t len,
	       const char *access_token, int deadline_ms, char *why, size_t whylen)
{
	char addr[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a->gateway.sin_addr, addr, sizeof addr);
	char *req = NULL;
	int n = asprintf(&req,
			 "POST /init HTTP/1.1\r\nHost: %s:%u\r\nE2b-Sandbox-Id: %s\r\n"
			 "E2b-Sandbox-Port: %d\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n%s%s%s\r\n",
			 addr, ntohs(a->gateway.sin_port), id, AGENT_PROTO_ENVD_PORT, len,
			 access_token ? AGENT_PROTO_ACCESS_TOKEN_HEADER ": " : "",
			 access_token ? access_token : "", access_token ? "\r\n" : "");
	if (n < 0)
		return -ENOMEM;
	size_t total = (size_t)n + len;
	char *full = malloc(total);
	if (!full) {
		free(req);
		return -ENOMEM;
	}
	memcpy(full, req, (size_t)n);
	memcpy(full + n, body, len);
	free(req);
	int64_t deadline = mono_ms() + deadline_ms;
	int status;
	for (;;) {
		status = attempt(a, full, total, deadline);
		/* the gateway answers 502/503/504 while nothing listens on the agent's port yet */
		bool again = status < 0 ? status != -ETIMEDOUT : (status >= 502 && status <= 504);
		if (!again || mono_ms() + RETRY_MS >= deadline)
			break;
		struct timespec ts = {0, RETRY_MS * 1000000L};
		nanosleep(&ts, NULL);
	}
	explicit_bzero(full, total);
	free(full);
	if (status >= 200 && status < 300)
		return 0;
	if (status < 0)
		snprintf(why, whylen, "the sandbox agent did not answer /init: %s",
			 strerror(-status));
	else
		snprintf(why, whylen, "the sandbox agent answered /init with HTTP %d", status);
	return status < 0 ? status : -EPROTO;
}
