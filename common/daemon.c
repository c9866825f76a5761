/* Shared daemon scaffolding: options, socket, lock-down order (open -> caps -> user ->
 * no_new_privs -> seccomp), and the loop with its signals. */
#include "daemon.h"
#include "log.h"
#include "macro.h"
#include "notify.h"
#include "privdrop.h"
#include "ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

void
daemon_common_init(struct daemon_common *dc, const char *name)
{
	memset(dc, 0, sizeof *dc);
	dc->name = name;
	dc->socket_gid = (gid_t)-1;
	log_set_ident(name);
	signal(SIGPIPE, SIG_IGN);
}

static int
parse_peer_users(struct daemon_common *dc, const char *arg)
{
	_cleanup_free_ char *copy = strdup(arg);
	char *save = NULL;
	if (!copy)
		return -ENOMEM;
	for (char *u = strtok_r(copy, ",", &save); u; u = strtok_r(NULL, ",", &save)) {
		uid_t uid;
		gid_t gid;
		if (dc->n_peer_uids >= DAEMON_MAX_PEERS)
			return -E2BIG;
		int r = privdrop_lookup_user(u, &uid, &gid);
		if (r < 0)
			return log_error_errno(r, "Unknown peer user %s", u);
		if (dc->socket_gid == (gid_t)-1)
			dc->socket_gid = gid;
		dc->peer_uids[dc->n_peer_uids++] = uid;
	}
	return 1;
}

int
daemon_common_option(struct daemon_common *dc, int opt, const char *arg)
{
	switch (opt) {
	case 1001:
		dc->socket_path = arg;
		return 1;
	case 1002:
		return parse_peer_users(dc, arg);
	case 1003:
		dc->dump_seccomp = true;
		return 1;
	case 1004:
		dc->seccomp_debug = true;
		return 1;
	case 1005:
		dc->seccomp_probe = arg;
		return 1;
	case 1006:
		dc->debug = true;
		log_set_debug(true);
		return 1;
	}
	return 0;
}

int
daemon_listen(struct daemon_common *dc)
{
	int fd = notify_listen_fd();
	if (fd >= 0)
		return fd;
	static char def[128];
	if (!dc->socket_path) {
		snprintf(def, sizeof def, "/run/warren/%s.sock", dc->name);
		dc->socket_path = def;
		mkdir("/run/warren", 0755);
	}
	fd = ipc_listen(dc->socket_path, dc->n_peer_uids ? 0660 : 0600);
	if (fd < 0)
		return log_error_errno(fd, "Failed to listen on %s: %m", dc->socket_path);
	if (dc->socket_gid != (gid_t)-1 && chown(dc->socket_path, (uid_t)-1, dc->socket_gid) < 0)
		log_warning_errno(-errno, "chown %s: %m", dc->socket_path);
	return fd;
}

/* One call after lock-down, for the tests: survive and say so (exit 0), or be killed by the
 * filter (SIGSYS). Each probe is harmless if the filter lets it through: /dev/null, a
 * namespace the exiting probe leaves at once, a socket closed at exit, TIOCSTI on a socket. */
static void
lock_down_probe(const char *probe, int sock)
{
	char c = 0;
	int n = 0;
	long r;
	if (!strcmp(probe, "allowed"))
		r = syscall(SYS_getpid);
	else if (!strcmp(probe, "forbidden")) /* ptrace is in no daemon's allow-list */
		r = syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0);
	else if (!strcmp(probe, "open-read"))
		r = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);
	else if (!strcmp(probe, "open-update"))
		r = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_WRONLY | O_CLOEXEC);
	else if (!strcmp(probe, "open-write"))
		r = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	else if (!strcmp(probe, "unshare-net"))
		r = syscall(SYS_unshare, CLONE_NEWNET);
	else if (!strcmp(probe, "unshare-user"))
		r = syscall(SYS_unshare, CLONE_NEWUSER);
	else if (!strcmp(probe, "unshare-mount"))
		r = syscall(SYS_unshare, CLONE_NEWNS);
	else if (!strcmp(probe, "ioctl-fionread"))
		r = syscall(SYS_ioctl, sock, FIONREAD, &n);
	else if (!strcmp(probe, "ioctl-tiocsti"))
		r = syscall(SYS_ioctl, sock, TIOCSTI, &c);
	else if (!strcmp(probe, "socket-unix"))
		r = syscall(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	else if (!strcmp(probe, "socket-netlink"))
		r = syscall(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	else if (!strcmp(probe, "socket-inet"))
		r = syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	else if (!strcmp(probe, "socket-packet"))
		r = syscall(SYS_socket, AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	else {
		fprintf(stderr, "unknown --seccomp-probe %s\n", probe);
		exit(2);
	}
	printf("%s survived the filter (returned %ld)\n", probe, r);
	exit(0);
}

int
daemon_lock_down(struct daemon_common *dc, const char *user, const int *caps, size_t n_caps,
		 const struct seccomp_policy *policy)
{
	if (dc->dump_seccomp) {
		int r = seccomp_policy_dump(policy, stdout);
		exit(r < 0 ? 1 : 0);
	}
	int sv[2] = {-1, -1};
	if (dc->seccomp_probe && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return log_error_errno(-errno, "socketpair: %m");
	int r = privdrop_apply(user, caps, n_caps);
	if (r < 0)
		return r;
	r = seccomp_policy_load(policy, dc->seccomp_debug);
	if (r < 0)
		return r;
	if (dc->seccomp_probe) {
		fflush(stdout);
		lock_down_probe(dc->seccomp_probe, sv[0]);
	}
	return 0;
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct daemon_common *dc = arg;
	log_info("Signal %d: stopping", (int)sig);
	notify_send("STOPPING=1");
	event_base_loopbreak(dc->base);
}

/* The keep-alive is sent from the loop itself, so a daemon stuck in a handler (or spinning
 * outside the loop) stops sending and systemd restarts it (WatchdogSec=, Restart=on-failure),
 * where the helpers' re-adoption takes over. Half the interval, as sd_watchdog_enabled(3) says. */
static void
on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	notify_send("WATCHDOG=1");
}

int
daemon_run(struct daemon_common *dc)
{
	struct event *term = evsignal_new(dc->base, SIGTERM, on_signal, dc);
	struct event *intr = evsignal_new(dc->base, SIGINT, on_signal, dc);
	struct event *dog = NULL;
	event_add(term, NULL);
	event_add(intr, NULL);
	uint64_t usec = notify_watchdog_usec();
	if (usec) {
		dog = event_new(dc->base, -1, EV_PERSIST, on_watchdog, dc);
		struct timeval tv = {(time_t)(usec / 2 / 1000000),
				     (suseconds_t)(usec / 2 % 1000000)};
		if (!dog || event_add(dog, &tv) < 0)
			log_warning(
				"Cannot arm the watchdog timer: systemd will restart this daemon");
		else
			notify_send("WATCHDOG=1");
	}
	/* event_base_dispatch, with the prologue run before each wait: EVLOOP_ONCE returns once
	 * every active callback has run */
	int r;
	for (;;) {
		if (dc->loop_prologue)
			dc->loop_prologue(dc->loop_prologue_data);
		r = event_base_loop(dc->base, EVLOOP_ONCE);
		if (r != 0 || event_base_got_break(dc->base) || event_base_got_exit(dc->base))
			break;
	}
	if (dog)
		event_free(dog);
	event_free(term);
	event_free(intr);
	return r < 0 ? -EIO : 0;
}
