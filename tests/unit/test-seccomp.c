/* Unit tests of the seccomp policy compiler: every group resolves on x86_64, an unknown group or
 * syscall name is an error, and a child under a policy survives the calls its groups and
 * argument rules allow and is killed (SIGSYS) by the rest: writes under @file-read, unshare
 * flags, ioctl requests and socket families the policy does not list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "seccomp-policy.h"

static const char *const base_groups[] = {"@default", "@basic-io", NULL};
static const struct seccomp_policy base = {.name = "base", .groups = base_groups};
static const char *const read_groups[] = {"@default", "@basic-io", "@file-read", NULL};
static const struct seccomp_policy file_read = {.name = "read", .groups = read_groups};
static const char *const update_groups[] = {"@default", "@basic-io", "@file-read", "@file-update",
					    NULL};
static const struct seccomp_policy file_update = {.name = "update", .groups = update_groups};
static const char *const write_groups[] = {"@default", "@basic-io", "@file-read", "@file-write",
					   NULL};
static const struct seccomp_policy file_write = {.name = "write", .groups = write_groups};
static const unsigned long ioctls[] = {FIONREAD, 0};
static const int families[] = {AF_UNIX, AF_NETLINK, 0};
static const struct seccomp_policy args = {.name = "args",
					   .groups = base_groups,
					   .unshare_flags = CLONE_NEWNET,
					   .ioctls = ioctls,
					   .socket_families = families};

static void
test_groups_resolve(void **state)
{
	size_t n = 0;
	for (const char *const *g = seccomp_group_names; *g; g++, n++) {
		const char *const *calls = seccomp_group_syscalls(*g);
		assert_non_null(calls);
#ifdef __x86_64__
		for (; *calls; calls++) {
			if (seccomp_syscall_resolve_name(*calls) == __NR_SCMP_ERROR)
				print_error("%s: %s does not resolve\n", *g, *calls);
			assert_int_not_equal(seccomp_syscall_resolve_name(*calls), __NR_SCMP_ERROR);
		}
#endif
		const char *const one[] = {*g, NULL};
		struct seccomp_policy p = {.name = *g, .groups = one};
		assert_int_equal(seccomp_policy_check(&p), 0);
	}
	assert_int_equal(n, 10);
	assert_null(seccomp_group_syscalls("@nonsense"));
	assert_int_equal(seccomp_policy_check(&args), 0);
}

static void
test_unknown_names_fail(void **state)
{
	const char *const bad_group[] = {"@default", "@nonsense", NULL};
	struct seccomp_policy p = {.name = "bad-group", .groups = bad_group};
	assert_int_equal(seccomp_policy_check(&p), -EINVAL);
	/* a misspelled syscall fails the policy instead of being dropped */
	const char *const bad_call[] = {"getpid", "gettimeofdya", NULL};
	p = (struct seccomp_policy){.name = "bad-call", .groups = base_groups, .extra = bad_call};
	assert_int_equal(seccomp_policy_check(&p), -EINVAL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(seccomp_policy_load(&p, false) == -EINVAL ? 0 : 1);
	int st;
	waitpid(pid, &st, 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	const char *const good_call[] = {"getpid", "gettimeofday", NULL};
	p.extra = good_call;
	assert_int_equal(seccomp_policy_check(&p), 0);
}

enum probe {
	P_GETPID,
	P_PTRACE,
	P_OPEN_RDONLY,
	P_OPENAT_RDONLY,
	P_OPEN_WRONLY,
	P_OPENAT_WRONLY,
	P_OPENAT_RDWR,
	P_OPENAT_CREAT,
	P_OPENAT_TRUNC,
	P_OPENAT_TMPFILE,
	P_UNSHARE_NET,
	P_UNSHARE_USER,
	P_UNSHARE_NET_NS,
	P_IOCTL_FIONREAD,
	P_IOCTL_TIOCSTI,
	P_SOCKET_UNIX,
	P_SOCKET_NETLINK,
	P_SOCKET_INET,
	P_SOCKETPAIR_UNIX,
};

/* 0: survived; SIGSYS: killed by the filter; anything else fails the test. */
static int
run_child(const struct seccomp_policy *p, enum probe what)
{
	pid_t pid = fork();
	if (pid == 0) {
		int sv[2];
		int ctl = socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 ? sv[0] : -1;
		if (ctl < 0 || seccomp_policy_load(p, false) < 0)
			_exit(3);
		char c = 0;
		int n;
		switch (what) {
		case P_GETPID:
			syscall(SYS_getpid);
			break;
		case P_PTRACE:
			syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0);
			break;
		case P_OPEN_RDONLY:
			syscall(SYS_open, "/dev/null", O_RDONLY | O_CLOEXEC);
			break;
		case P_OPENAT_RDONLY:
			syscall(SYS_openat, AT_FDCWD, "/dev/null",
				O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
			break;
		case P_OPEN_WRONLY:
			syscall(SYS_open, "/dev/null", O_WRONLY);
			break;
		case P_OPENAT_WRONLY:
			syscall(SYS_openat, AT_FDCWD, "/dev/null", O_WRONLY | O_CLOEXEC);
			break;
		case P_OPENAT_RDWR:
			syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR);
			break;
		case P_OPENAT_CREAT:
			syscall(SYS_openat, AT_FDCWD, "/dev/null", O_WRONLY | O_CREAT, 0600);
			break;
		case P_OPENAT_TRUNC:
			syscall(SYS_openat, AT_FDCWD, "/dev/null", O_WRONLY | O_TRUNC);
			break;
		case P_OPENAT_TMPFILE:
			/* O_RDONLY is refused by the kernel with O_TMPFILE; the filter is first */
			syscall(SYS_openat, AT_FDCWD, "/dev/shm", O_TMPFILE | O_WRONLY, 0600);
			break;
		case P_UNSHARE_NET: /* EPERM unprivileged, after the filter let it through */
			syscall(SYS_unshare, CLONE_NEWNET);
			break;
		case P_UNSHARE_USER:
			syscall(SYS_unshare, CLONE_NEWUSER);
			break;
		case P_UNSHARE_NET_NS:
			syscall(SYS_unshare, CLONE_NEWNET | CLONE_NEWNS);
			break;
		case P_IOCTL_FIONREAD:
			syscall(SYS_ioctl, ctl, FIONREAD, &n);
			break;
		case P_IOCTL_TIOCSTI: /* ENOTTY on a socket, if the filter let it through */
			syscall(SYS_ioctl, ctl, TIOCSTI, &c);
			break;
		case P_SOCKET_UNIX:
			syscall(SYS_socket, AF_UNIX, SOCK_SEQPACKET, 0);
			break;
		case P_SOCKET_NETLINK:
			syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 0);
			break;
		case P_SOCKET_INET:
			syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
			break;
		case P_SOCKETPAIR_UNIX:
			syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, sv);
			break;
		}
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	if (WIFEXITED(st))
		return WEXITSTATUS(st) == 0 ? 0 : 1000 + WEXITSTATUS(st);
	return WIFSIGNALED(st) ? WTERMSIG(st) : -1;
}

static void
test_allowed_and_killed(void **state)
{
	assert_int_equal(run_child(&base, P_GETPID), 0);
	assert_int_equal(run_child(&base, P_PTRACE), SIGSYS);
	/* no file group: no open at all */
	assert_int_equal(run_child(&base, P_OPENAT_RDONLY), SIGSYS);
}

static void
test_file_read_is_read_only(void **state)
{
	assert_int_equal(run_child(&file_read, P_OPEN_RDONLY), 0);
	assert_int_equal(run_child(&file_read, P_OPENAT_RDONLY), 0);
	assert_int_equal(run_child(&file_read, P_OPEN_WRONLY), SIGSYS);
	assert_int_equal(run_child(&file_read, P_OPENAT_WRONLY), SIGSYS);
	assert_int_equal(run_child(&file_read, P_OPENAT_RDWR), SIGSYS);
	assert_int_equal(run_child(&file_read, P_OPENAT_CREAT), SIGSYS);
	assert_int_equal(run_child(&file_read, P_OPENAT_TRUNC), SIGSYS);
	assert_int_equal(run_child(&file_read, P_OPENAT_TMPFILE), SIGSYS);
}

static void
test_file_update_never_creates(void **state)
{
	assert_int_equal(run_child(&file_update, P_OPENAT_RDONLY), 0);
	assert_int_equal(run_child(&file_update, P_OPENAT_WRONLY), 0);
	assert_int_equal(run_child(&file_update, P_OPEN_WRONLY), 0);
	assert_int_equal(run_child(&file_update, P_OPENAT_RDWR), 0);
	assert_int_equal(run_child(&file_update, P_OPENAT_CREAT), SIGSYS);
	assert_int_equal(run_child(&file_update, P_OPENAT_TRUNC), SIGSYS);
	assert_int_equal(run_child(&file_update, P_OPENAT_TMPFILE), SIGSYS);
}

static void
test_file_write_writes(void **state)
{
	assert_int_equal(run_child(&file_write, P_OPENAT_RDONLY), 0);
	assert_int_equal(run_child(&file_write, P_OPENAT_WRONLY), 0);
	assert_int_equal(run_child(&file_write, P_OPENAT_CREAT), 0);
	assert_int_equal(run_child(&file_write, P_OPENAT_TRUNC), 0);
}

static void
test_argument_rules(void **state)
{
	assert_int_equal(run_child(&args, P_UNSHARE_NET), 0);
	assert_int_equal(run_child(&args, P_UNSHARE_USER), SIGSYS);
	assert_int_equal(run_child(&args, P_UNSHARE_NET_NS), SIGSYS);
	assert_int_equal(run_child(&base, P_UNSHARE_NET), SIGSYS);
	assert_int_equal(run_child(&args, P_IOCTL_FIONREAD), 0);
	assert_int_equal(run_child(&args, P_IOCTL_TIOCSTI), SIGSYS);
	assert_int_equal(run_child(&base, P_IOCTL_FIONREAD), SIGSYS);
	assert_int_equal(run_child(&args, P_SOCKET_UNIX), 0);
	assert_int_equal(run_child(&args, P_SOCKET_NETLINK), 0);
	assert_int_equal(run_child(&args, P_SOCKETPAIR_UNIX), 0);
	assert_int_equal(run_child(&args, P_SOCKET_INET), SIGSYS);
	assert_int_equal(run_child(&base, P_SOCKET_UNIX), SIGSYS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_groups_resolve),
		cmocka_unit_test(test_unknown_names_fail),
		cmocka_unit_test(test_allowed_and_killed),
		cmocka_unit_test(test_file_read_is_read_only),
		cmocka_unit_test(test_file_update_never_creates),
		cmocka_unit_test(test_file_write_writes),
		cmocka_unit_test(test_argument_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
