/* Unit tests of netnsd's request validation (netnsd-validate.c), the checks netnsd makes on a
 * spawn, restore or exec from the supervisor before anything privileged happens: one valid
 * request accepted (the positive control), then each field broken alone and refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netnsd-validate.h"
#include "oci-spec.h"

#define MEM_TOTAL (4ull << 30)

static char *argv_ok[] = {"/bin/busybox", "httpd", "-f"};
static char *env_ok[] = {"PATH=/bin", "A="};

static Warren__V1__SpawnSandboxRequest
good(void)
{
	Warren__V1__SpawnSandboxRequest q = WARREN__V1__SPAWN_SANDBOX_REQUEST__INIT;
	q.id = "0123456789ab";
	q.rootfs = "/var/lib/warren/templates/web/rootfs";
	q.argv = argv_ok;
	q.n_argv = 3;
	q.env = env_ok;
	q.n_env = 2;
	q.port = 8080;
	q.memory_limit = 64ull << 20;
	q.cwd = "";
	q.backend = WARREN__V1__BACKEND__BACKEND_GVISOR;
	return q;
}

static int
spawn(const Warren__V1__SpawnSandboxRequest *q)
{
	char why[128] = "";
	int r = netnsd_validate_spawn(q, MEM_TOTAL, why, sizeof why);
	if (r < 0)
		assert_true(why[0] != 0); /* a refusal always says why */
	return r;
}

static void
test_spawn_accepts(void **state)
{
	Warren__V1__SpawnSandboxRequest q = good();
	assert_int_equal(spawn(&q), 0);
	q.backend = WARREN__V1__BACKEND__BACKEND_MICROVM;
	q.pids_limit = OCI_PIDS_MIN;
	q.cpu_millis = OCI_CPU_MILLIS_MAX;
	q.memory_limit = MEM_TOTAL;
	q.cwd = "/app";
	q.uid = 65534;
	q.gid = 65534;
	q.n_env = 0;
	q.env = NULL;
	q.port = 65535;
	assert_int_equal(spawn(&q), 0);
}

static void
test_spawn_refuses(void **state)
{
	Warren__V1__SpawnSandboxRequest q;
	char long_arg[NETNSD_MAX_ARG_LEN + 2];
	memset(long_arg, 'a', sizeof long_arg - 1);
	long_arg[sizeof long_arg - 1] = 0;
	char *argv_long[] = {"/bin/x", long_arg};
	char *argv_empty[] = {""};
	char *argv_null[] = {"/bin/x", NULL};
	char *env_noeq[] = {"PATH"};
	char *env_noname[] = {"=x"};
	static char *many[NETNSD_MAX_ARGS + 1];
	for (size_t i = 0; i < NETNSD_MAX_ARGS + 1; i++)
		many[i] = "x";
	char long_path[PATH_MAX + 1];
	memset(long_path, 'p', sizeof long_path - 1);
	long_path[0] = '/';
	long_path[sizeof long_path - 1] = 0;

	assert_int_equal(spawn(NULL), -EINVAL);
#define REFUSED(expected, change)                                                                  \
	do {                                                                                       \
		q = good();                                                                        \
		change;                                                                            \
		assert_int_equal(spawn(&q), expected);                                             \
	} while (0)
	REFUSED(-EINVAL, q.id = "0123456789AB");
	REFUSED(-EINVAL, q.id = "0123456789a");
	REFUSED(-EINVAL, q.id = "../../etc/pa");
	REFUSED(-EOPNOTSUPP, q.backend = (Warren__V1__Backend)7);
	REFUSED(-EOPNOTSUPP, q.backend = (Warren__V1__Backend)-1);
	REFUSED(-EINVAL, q.n_argv = 0);
	REFUSED(-EINVAL, (q.argv = argv_empty, q.n_argv = 1));
	REFUSED(-EINVAL, (q.argv = argv_null, q.n_argv = 2));
	REFUSED(-EINVAL, (q.argv = argv_long, q.n_argv = 2));
	REFUSED(-EINVAL, (q.argv = many, q.n_argv = NETNSD_MAX_ARGS + 1));
	REFUSED(-EINVAL, (q.env = env_noeq, q.n_env = 1));
	REFUSED(-EINVAL, (q.env = env_noname, q.n_env = 1));
	REFUSED(-EINVAL, (q.env = NULL, q.n_env = 1));
	REFUSED(-EINVAL, q.pids_limit = OCI_PIDS_MIN - 1);
	REFUSED(-EINVAL, q.pids_limit = OCI_PIDS_MAX + 1);
	REFUSED(-EINVAL, q.cpu_millis = OCI_CPU_MILLIS_MIN - 1);
	REFUSED(-EINVAL, q.cpu_millis = OCI_CPU_MILLIS_MAX + 1);
	REFUSED(-EINVAL, q.memory_limit = (16ull << 20) - 1);
	REFUSED(-EINVAL, q.memory_limit = MEM_TOTAL + 1);
	REFUSED(-EINVAL, q.port = 0);
	REFUSED(-EINVAL, q.port = 65536);
	REFUSED(-EINVAL, q.rootfs = NULL);
	REFUSED(-EINVAL, q.rootfs = "");
	REFUSED(-EINVAL, q.rootfs = long_path);
	REFUSED(-EINVAL, q.cwd = NULL);
	REFUSED(-EINVAL, q.cwd = "app");
	REFUSED(-EINVAL, q.cwd = "/app\n");
	REFUSED(-EINVAL, q.uid = 65535);
	REFUSED(-EINVAL, q.gid = 65535);
#undef REFUSED
}

static void
test_exec(void **state)
{
	char why[128];
	Warren__V1__ExecRequest q = WARREN__V1__EXEC_REQUEST__INIT;
	q.argv = argv_ok;
	q.n_argv = 3;
	q.timeout_ms = 600000;
	assert_int_equal(netnsd_validate_exec(&q, why, sizeof why), 0);
	q.timeout_ms = 600001;
	assert_int_equal(netnsd_validate_exec(&q, why, sizeof why), -EINVAL);
	q.timeout_ms = 1000;
	q.n_argv = 0;
	assert_int_equal(netnsd_validate_exec(&q, why, sizeof why), -EINVAL);
	char *argv_null[] = {"/bin/x", NULL};
	q.argv = argv_null;
	q.n_argv = 2;
	assert_int_equal(netnsd_validate_exec(&q, why, sizeof why), -EINVAL);
	static char *many[NETNSD_MAX_ARGS + 1];
	for (size_t i = 0; i < NETNSD_MAX_ARGS + 1; i++)
		many[i] = "x";
	q.argv = many;
	q.n_argv = NETNSD_MAX_ARGS;
	assert_int_equal(netnsd_validate_exec(&q, why, sizeof why), 0);
	q.n_argv = NETNSD_MAX_ARGS + 1;
	assert_int_equal(netnsd_validate_exec(&q, why, sizeof why), -EINVAL);
}

static void
test_image_fd(void **state)
{
	char why[128];
	int dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int file = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(dir >= 0 && file >= 0);
	assert_int_equal(netnsd_validate_image_fd(dir, why, sizeof why), 0);
	assert_int_equal(netnsd_validate_image_fd(file, why, sizeof why), -EINVAL);
	assert_int_equal(netnsd_validate_image_fd(-1, why, sizeof why), -EINVAL);
	close(dir);
	close(file);
}

/* A hostile supervisor's announcement: 0 is refused, any other count is accepted here and
 * bounded by the pool (test-pool-policy.c: test_reserve_bounded). */
static void
test_pool_reserve(void **state)
{
	char why[128];
	Warren__V1__PoolReserveRequest q = WARREN__V1__POOL_RESERVE_REQUEST__INIT;
	assert_int_equal(netnsd_validate_pool_reserve(&q, why, sizeof why), -EINVAL);
	assert_int_equal(netnsd_validate_pool_reserve(NULL, why, sizeof why), -EINVAL);
	q.count = 1;
	assert_int_equal(netnsd_validate_pool_reserve(&q, why, sizeof why), 0);
	q.count = 0x80000000u;
	assert_int_equal(netnsd_validate_pool_reserve(&q, why, sizeof why), 0);
	q.count = 0xffffffffu;
	assert_int_equal(netnsd_validate_pool_reserve(&q, why, sizeof why), 0);
}

static void
test_strings(void **state)
{
	assert_true(netnsd_strings_valid(NULL, 0, 4, false));
	assert_false(netnsd_strings_valid(NULL, 1, 4, false));
	assert_true(netnsd_strings_valid(env_ok, 2, 2, true));
	assert_false(netnsd_strings_valid(env_ok, 2, 1, true));
	assert_true(netnsd_strings_valid(argv_ok, 3, 3, false));
	assert_false(netnsd_strings_valid(argv_ok, 3, 3, true)); /* not NAME=value */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spawn_accepts), cmocka_unit_test(test_spawn_refuses),
		cmocka_unit_test(test_exec),	      cmocka_unit_test(test_image_fd),
		cmocka_unit_test(test_strings),	      cmocka_unit_test(test_pool_reserve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
