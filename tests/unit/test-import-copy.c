/* The privileged copy of an import (importd/import-copy.c) on trees the real unpacker would
 * never produce, as a subverted one could: a hard link to a root file, a device node, a fifo,
 * symlinks to host files, set-id and writable modes, an entry of another owner. Needs root
 * (chown and mknod); skipped otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fileio.h"
#include "importd.h"

#define OWNER 65533 /* stands for warren-import */

static char base[64];
static char src[128], dst[128], secret[128];

static int
setup(void **state)
{
	snprintf(base, sizeof base, "/tmp/test-import-copy.XXXXXX");
	if (!mkdtemp(base))
		return -1;
	snprintf(src, sizeof src, "%s/src", base);
	snprintf(dst, sizeof dst, "%s/dst", base);
	snprintf(secret, sizeof secret, "%s/secret", base);
	mkdir(src, 0755);
	mkdir(dst, 0700);
	FILE *f = fopen(secret, "w");
	fputs("host-secret\n", f);
	fclose(f);
	chmod(secret, 0600);
	return 0;
}

static int
teardown(void **state)
{
	rm_rf(base);
	return 0;
}

static void
put(const char *rel, const char *data, int mode)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", src, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(data, f);
	fclose(f);
	/* chown first: a chown by root clears the set-id bits */
	assert_int_equal(lchown(p, OWNER, OWNER), 0);
	assert_int_equal(chmod(p, mode), 0);
}

static int
copy(char *why, size_t size, struct import_counts *c)
{
	int s = open(src, O_RDONLY | O_DIRECTORY);
	int d = open(dst, O_RDONLY | O_DIRECTORY);
	*c = (struct import_counts){.max_bytes = 1 << 20};
	int r = import_copy_tree(s, d, OWNER, c, why, size);
	close(s);
	close(d);
	return r;
}

static void
test_clean_and_hostile_modes(void **state)
{
	if (geteuid() != 0)
		skip();
	char p[256], why[512], buf[64];
	assert_int_equal(chown(src, OWNER, OWNER), 0);
	put("suid", "x", 04755);
	put("ww", "y", 0666);
	snprintf(p, sizeof p, "%s/dir", src);
	mkdir(p, 01777);
	lchown(p, OWNER, OWNER);
	chmod(p, 01777);
	snprintf(p, sizeof p, "%s/leak", src);
	assert_int_equal(symlink(secret, p), 0);
	lchown(p, OWNER, OWNER);
	snprintf(p, sizeof p, "%s/dev", src);
	assert_int_equal(mknod(p, S_IFCHR | 0666, makedev(1, 3)), 0);
	lchown(p, OWNER, OWNER);
	snprintf(p, sizeof p, "%s/fifo", src);
	assert_int_equal(mkfifo(p, 0666), 0);
	lchown(p, OWNER, OWNER);
	struct import_counts c;
	assert_int_equal(copy(why, sizeof why, &c), 0);
	struct stat st;
	snprintf(p, sizeof p, "%s/suid", dst);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_uid, 0);
	snprintf(p, sizeof p, "%s/ww", dst);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	snprintf(p, sizeof p, "%s/dir", dst);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	/* the symlink is a symlink, its target verbatim, never followed */
	snprintf(p, sizeof p, "%s/leak", dst);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	ssize_t n = readlink(p, buf, sizeof buf - 1);
	assert_true(n > 0);
	buf[n] = 0;
	assert_string_equal(buf, secret);
	/* device node and fifo left out */
	snprintf(p, sizeof p, "%s/dev", dst);
	assert_int_equal(lstat(p, &st), -1);
	snprintf(p, sizeof p, "%s/fifo", dst);
	assert_int_equal(lstat(p, &st), -1);
	assert_int_equal(c.dropped, 2);
	assert_true(c.modes_fixed >= 3);
}

static void
test_hard_link_to_host_file(void **state)
{
	if (geteuid() != 0)
		skip();
	char p[256], why[512];
	assert_int_equal(chown(src, OWNER, OWNER), 0);
	put("ok", "fine", 0644);
	/* what a subverted unpacker (or protected_hardlinks=0) could plant: root's secret */
	snprintf(p, sizeof p, "%s/hl", src);
	assert_int_equal(link(secret, p), 0);
	struct import_counts c;
	assert_int_equal(copy(why, sizeof why, &c), -EPERM);
	assert_non_null(strstr(why, "/hl is not the unpacker's"));
	snprintf(p, sizeof p, "%s/hl", dst);
	struct stat st;
	assert_int_equal(lstat(p, &st), -1);
}

static void
test_bytes_bounded(void **state)
{
	if (geteuid() != 0)
		skip();
	char why[512], big[4096];
	assert_int_equal(chown(src, OWNER, OWNER), 0);
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = 0;
	for (int i = 0; i < 300; i++) {
		char name[32];
		snprintf(name, sizeof name, "f%d", i);
		put(name, big, 0644);
	}
	struct import_counts c;
	assert_int_equal(copy(why, sizeof why, &c), -EFBIG); /* 1.2 MB > 1 MiB */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_clean_and_hostile_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_link_to_host_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bytes_bounded, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
