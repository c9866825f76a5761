/* Unit tests of the console log ring (netnsd/spawner/log-ring.c): it keeps the newest bytes
 * of its size, hands out a sealed copy, follows through a pipe, bounds its followers (a dead
 * reader is reaped), and travels through a file as a checkpoint image carries it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log-ring.h"

static struct event_base *base;

static size_t
read_all(int fd, char *buf, size_t size)
{
	size_t n = 0;
	ssize_t k;
	while (n < size && (k = read(fd, buf + n, size - n)) > 0)
		n += (size_t)k;
	buf[n] = 0;
	return n;
}

static void
test_keeps_newest(void **state)
{
	struct log_ring *r = log_ring_new(base, 16);
	log_ring_take(r, "abcdefghij", 10);
	log_ring_take(r, "klmnopqrst", 10); /* wraps */
	int fd;
	uint64_t size;
	assert_int_equal(log_ring_open(r, false, &fd, &size), 0);
	assert_int_equal(size, 16);
	char buf[64];
	read_all(fd, buf, sizeof buf - 1);
	assert_string_equal(buf, "efghijklmnopqrst");
	/* the copy is sealed: the reader cannot change it */
	assert_true(write(fd, "x", 1) < 0);
	close(fd);
	log_ring_take(r, "0123456789012345678901234567890123456789", 40); /* more than the ring */
	assert_int_equal(log_ring_open(r, false, &fd, &size), 0);
	read_all(fd, buf, sizeof buf - 1);
	assert_string_equal(buf, "4567890123456789");
	close(fd);
	log_ring_dropped(r, 5);
	assert_int_equal(log_ring_dropped_total(r), 5);
	log_ring_free(r);
}

/* Output dropped over the rate: a reader is told so first, whatever came after the drain's
 * own note, and still gets no more than the ring's size (the note takes the oldest bytes). */
static void
test_dropped_is_told(void **state)
{
	static const char note[] = "[warren: 5 bytes of output not kept in all]\n";
	struct log_ring *r = log_ring_new(base, 64);
	log_ring_take(r, "abc\n", 4);
	log_ring_dropped(r, 5);
	int fd;
	uint64_t size;
	char buf[128];
	assert_int_equal(log_ring_open(r, false, &fd, &size), 0);
	assert_int_equal(size, strlen(note) + 4);
	read_all(fd, buf, sizeof buf - 1);
	assert_string_equal(buf, "[warren: 5 bytes of output not kept in all]\nabc\n");
	close(fd);
	log_ring_take(r, "0123456789012345678901234567890123456789012345678901234567890123", 64);
	assert_int_equal(log_ring_open(r, false, &fd, &size), 0);
	assert_int_equal(size, 64);
	read_all(fd, buf, sizeof buf - 1);
	assert_int_equal(strncmp(buf, note, strlen(note)), 0);
	assert_string_equal(buf + strlen(note),
			    "0123456789012345678901234567890123456789012345678901234567890123" +
				    strlen(note));
	close(fd);
	log_ring_free(r);
}

static void
test_follow(void **state)
{
	struct log_ring *r = log_ring_new(base, 64);
	log_ring_take(r, "first\n", 6);
	int fds[LOG_RING_FOLLOWERS], fd;
	uint64_t size;
	for (int i = 0; i < LOG_RING_FOLLOWERS; i++)
		assert_int_equal(log_ring_open(r, true, &fds[i], &size), 0);
	assert_int_equal(log_ring_open(r, true, &fd, &size), -EBUSY); /* bounded */
	log_ring_take(r, "second\n", 7);
	char buf[64];
	assert_int_equal(read(fds[0], buf, sizeof buf), 13);
	assert_memory_equal(buf, "first\nsecond\n", 13);
	/* a reader gone makes room: reaped at the next open */
	close(fds[1]);
	assert_int_equal(log_ring_open(r, true, &fd, &size), 0);
	close(fd);
	/* the ring's end: every follower sees end-of-file after what it had */
	log_ring_free(r);
	size_t n = read_all(fds[2], buf, sizeof buf - 1);
	assert_int_equal(n, 13);
	for (int i = 0; i < LOG_RING_FOLLOWERS; i++)
		if (i != 1)
			close(fds[i]);
}

static void
test_save_load(void **state)
{
	char dir[] = "/tmp/test-log-ring.XXXXXX";
	assert_non_null(mkdtemp(dir));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	struct log_ring *r = log_ring_new(base, 32);
	log_ring_take(r, "the parent's output\n", 20);
	assert_int_equal(log_ring_save(r, dfd, LOG_RING_IMAGE_FILE), 0);
	/* never over an existing file (O_EXCL) */
	assert_int_equal(log_ring_save(r, dfd, LOG_RING_IMAGE_FILE), -EEXIST);
	log_ring_free(r);
	/* a smaller ring takes the end */
	struct log_ring *child = log_ring_new(base, 8);
	assert_int_equal(log_ring_load(child, dfd, LOG_RING_IMAGE_FILE), 0);
	int fd;
	uint64_t size;
	char buf[64];
	assert_int_equal(log_ring_open(child, false, &fd, &size), 0);
	read_all(fd, buf, sizeof buf - 1);
	assert_string_equal(buf, " output\n"); /* its last 8 bytes */
	close(fd);
	/* no file (an image from before): nothing, no error */
	assert_int_equal(log_ring_load(child, dfd, "absent"), 0);
	/* a symlink is not followed */
	assert_int_equal(symlinkat("/etc/passwd", dfd, "link"), 0);
	assert_true(log_ring_load(child, dfd, "link") < 0);
	log_ring_free(child);
	unlinkat(dfd, "link", 0);
	unlinkat(dfd, LOG_RING_IMAGE_FILE, 0);
	close(dfd);
	rmdir(dir);
}

int
main(void)
{
	base = event_base_new();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keeps_newest),
		cmocka_unit_test(test_dropped_is_told),
		cmocka_unit_test(test_follow),
		cmocka_unit_test(test_save_load),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	event_base_free(base);
	return r;
}
