/* Unit tests of snapshotd's compression policy (snapshotd/compress.c): the supervisor's
 * CommitImage says whether an image may be compressed; snapshotd accepts only the values the
 * policy knows, never compresses a NONE image, and decides an AUTO one by the disk's speed
 * alone (the tag's name is no longer an input). The disk speed comes from a planted
 * <store>/.disk-speed, so nothing is measured. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "snapshotd.h"

static char root[64];
static struct snapshotd sd;

/* a store whose cached disk speed is mbps */
static int
setup(void **state)
{
	snprintf(root, sizeof root, "/tmp/test-compress.XXXXXX");
	assert_non_null(mkdtemp(root));
	sd.store_dir = root;
	sd.store_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(sd.store_fd >= 0);
	struct stat st;
	assert_int_equal(fstat(sd.store_fd, &st), 0);
	char path[128];
	snprintf(path, sizeof path, "%s/.disk-speed", root);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%llu 100\n", (unsigned long long)st.st_dev); /* 100 MB/s */
	fclose(f);
	return 0;
}

static int
teardown(void **state)
{
	close(sd.store_fd);
	rm_rf(root);
	return 0;
}

static void
test_valid(void **state)
{
	assert_true(compression_valid(WARREN__V1__COMPRESSION__COMPRESSION_AUTO));
	assert_true(compression_valid(WARREN__V1__COMPRESSION__COMPRESSION_NONE));
	assert_false(compression_valid((Warren__V1__Compression)2));
	assert_false(compression_valid((Warren__V1__Compression)-1));
	assert_false(compression_valid((Warren__V1__Compression)0x7fffffff));
	/* every proto value is one the policy knows, and no more */
	assert_int_equal(warren__v1__compression__descriptor.n_values, 2);
}

static void
test_policy(void **state)
{
	sd.compress_below = 1000; /* the 100 MB/s disk is slow */
	assert_true(compress_wanted(&sd, WARREN__V1__COMPRESSION__COMPRESSION_AUTO));
	assert_false(compress_wanted(&sd, WARREN__V1__COMPRESSION__COMPRESSION_NONE));
	sd.compress_below = 50; /* and now fast */
	assert_false(compress_wanted(&sd, WARREN__V1__COMPRESSION__COMPRESSION_AUTO));
	sd.compress_below = 0; /* --compress-below 0: never */
	assert_false(compress_wanted(&sd, WARREN__V1__COMPRESSION__COMPRESSION_AUTO));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test_setup_teardown(test_policy, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
