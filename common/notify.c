/* The pieces of the systemd protocol a daemon needs: READY=1/STOPPING=1/WATCHDOG=1 on
 * NOTIFY_SOCKET, WATCHDOG_USEC, and LISTEN_FDS. The supervisor links libsystemd for sd-bus; the
 * helpers stay without it. */
#include "notify.h"
#include "macro.h"

#include <errno.h>
#include <stdint.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

int
notify_send(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || !*path)
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(path);
	if (len >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = 0;
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
		return -errno;
	return 1;
}

int
notify_listen_fd(void)
{
	const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS");
	if (!pid || !n || atol(pid) != (long)getpid() || atoi(n) < 1)
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	fcntl(3, F_SETFD, FD_CLOEXEC);
	fcntl(3, F_SETFL, fcntl(3, F_GETFL) | O_NONBLOCK);
	return 3;
}

uint64_t
notify_watchdog_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	if (!usec || !*usec)
		return 0;
	/* a watchdog meant for the process that started us (a wrapper that execs is the same pid)
	 */
	if (pid && *pid && atol(pid) != (long)getpid())
		return 0;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(usec, &end, 10);
	if (errno || *end || v == 0 || v > UINT64_MAX / 2)
		return 0;
	return (uint64_t)v;
}
