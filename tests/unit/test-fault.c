/* Unit test of the test-only fault points (common/fault.c): unset or another step, a fault
 * point returns; the named step kills the process with SIGKILL (what a crash test relies on). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault.h"

/* run fault_point(step) in a child started with WARREN_FAULT=env (NULL: unset) */
static int
child_status(const char *env, const char *step)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (env)
			setenv("WARREN_FAULT", env, 1);
		else
			unsetenv("WARREN_FAULT");
		fault_point(step);
		fault_point(step); /* twice: the environment is read once, the step still matches */
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void
test_unset_returns(void **state)
{
	(void)state;
	int st = child_status(NULL, "image-write");
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void
test_other_step_returns(void **state)
{
	(void)state;
	int st = child_status("image-seal", "image-write");
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = child_status("image-write-x", "image-write");
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void
test_named_step_kills(void **state)
{
	(void)state;
	int st = child_status("image-write", "image-write");
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unset_returns),
		cmocka_unit_test(test_other_step_returns),
		cmocka_unit_test(test_named_step_kills),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
