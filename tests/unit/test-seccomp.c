/* Unit tests of the seccomp policy compiler: every group resolves, a child under a policy makes
 * an allowed call and is killed by a forbidden one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "seccomp-policy.h"

static const char *const groups[] = {"@default", "@basic-io", NULL};
static const struct seccomp_policy policy = {.name = "test", .groups = groups};

static void
test_groups_resolve(void **state)
{
	const char *names[] = {"@default", "@basic-io", "@event-loop", "@ipc", "@file-read",
			       "@file-write", "@process", "@namespaces", "@swap"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const char *const *calls = seccomp_group_syscalls(names[i]);
		assert_non_null(calls);
		for (; *calls; calls++)
			if (seccomp_syscall_resolve_name(*calls) == __NR_SCMP_ERROR)
				print_message("note: %s not on this architecture\n", *calls);
	}
	assert_null(seccomp_group_syscalls("@nonsense"));
}

static int
run_child(bool forbidden)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (seccomp_policy_load(&policy, false) < 0)
			_exit(3);
		if (getpid() <= 0)
			_exit(4);
		if (forbidden)
			syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	return st;
}

static void
test_allowed_and_killed(void **state)
{
	int st = run_child(false);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	st = run_child(true);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSYS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_groups_resolve),
		cmocka_unit_test(test_allowed_and_killed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
