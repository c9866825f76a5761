/* Console log rings (see log-ring.h). The ring is filled by the console drain (spawn.c), which
 * already bounds the rate (CONSOLE_RATE: a guest writing faster has the rest counted and
 * dropped, never slowing the spawner), so taking a chunk is one or two memcpy. A follower
 * gets a pipe: what it has not read yet queues in a memfd of its own, at most
 * LOG_RING_FOLLOW_QUEUE bytes (a reader that stops reading loses output, counted, and never
 * holds the spawner or the guest), sent with sendfile as the pipe has room. Runs in netnsd's
 * spawner. */
#include "log-ring.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

struct follower {
	struct log_ring *ring;
	int pipe;  /* write end, non-blocking */
	int queue; /* memfd: bytes [rd, wr) not yet in the pipe */
	off_t rd, wr;
	uint64_t dropped;
	struct event *ev;
	struct follower *next;
};

struct log_ring {
	struct event_base *base;
	char *buf;
	size_t size, start, len; /* ring of size bytes, len of them used from start */
	uint64_t dropped;
	struct follower *followers;
	unsigned n_followers;
};

struct log_ring *
log_ring_new(struct event_base *base, size_t size)
{
	struct log_ring *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->base = base;
	r->size = size ? size : LOG_RING_DEFAULT;
	return r;
}

static void
follower_free(struct follower *f)
{
	struct log_ring *r = f->ring;
	for (struct follower **pp = &r->followers; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	r->n_followers--;
	if (f->ev)
		event_free(f->ev);
	safe_close(f->pipe);
	safe_close(f->queue);
	free(f);
}

void
log_ring_free(struct log_ring *r)
{
	if (!r)
		return;
	while (r->followers)
		follower_free(r->followers); /* the reader sees end-of-file */
	free(r->buf);
	free(r);
}

/* Send what is queued as far as the pipe takes it; 0, or -EPIPE when the reader is gone. */
static int
follower_flush(struct follower *f)
{
	while (f->rd < f->wr) {
		ssize_t k = sendfile(f->pipe, f->queue, &f->rd, (size_t)(f->wr - f->rd));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			event_add(f->ev, NULL);
			return 0;
		}
		if (k <= 0)
			return -EPIPE;
	}
	/* all sent: the queue starts again at 0, so it never grows past its bound */
	if (f->wr && ftruncate(f->queue, 0) == 0)
		f->rd = f->wr = 0;
	return 0;
}

static void
follower_writable(evutil_socket_t fd, short what, void *arg)
{
	struct follower *f = arg;
	if (follower_flush(f) < 0)
		follower_free(f);
}

static void
follower_queue(struct follower *f, const char *buf, size_t n)
{
	if ((uint64_t)(f->wr - f->rd) + n > LOG_RING_FOLLOW_QUEUE) {
		f->dropped += n;
		return;
	}
	if (f->dropped) {
		char note[96];
		int k = snprintf(
			note, sizeof note,
			"\n[warren: %llu bytes not sent to this reader: it read too slowly]\n",
			(unsigned long long)f->dropped);
		if (pwrite(f->queue, note, (size_t)k, f->wr) == k)
			f->wr += k;
		f->dropped = 0;
	}
	ssize_t k = pwrite(f->queue, buf, n, f->wr);
	if (k > 0)
		f->wr += k;
}

static void
ring_append(struct log_ring *r, const char *buf, size_t n)
{
	if (!r->buf) {
		r->buf = malloc(r->size);
		if (!r->buf)
			return;
	}
	if (n >= r->size) {
		memcpy(r->buf, buf + n - r->size, r->size);
		r->start = 0;
		r->len = r->size;
		return;
	}
	size_t end = (r->start + r->len) % r->size;
	size_t first = n < r->size - end ? n : r->size - end;
	memcpy(r->buf + end, buf, first);
	memcpy(r->buf, buf + first, n - first);
	r->len += n;
	if (r->len > r->size) {
		r->start = (r->start + r->len - r->size) % r->size;
		r->len = r->size;
	}
}

void
log_ring_take(struct log_ring *r, const char *buf, size_t n)
{
	if (!r || !n)
		return;
	ring_append(r, buf, n);
	for (struct follower *f = r->followers, *next; f; f = next) {
		next = f->next;
		follower_queue(f, buf, n);
		if (follower_flush(f) < 0)
			follower_free(f);
	}
}

void
log_ring_dropped(struct log_ring *r, uint64_t n)
{
	if (r)
		r->dropped += n;
}

uint64_t
log_ring_dropped_total(const struct log_ring *r)
{
	return r ? r->dropped : 0;
}

/* The ring's contents, oldest first, into fd from offset off, less its first skip bytes;
 * returns the offset after them or -errno. */
static off_t
ring_write_to(const struct log_ring *r, int fd, off_t off, size_t skip)
{
	size_t first = r->len < r->size - r->start ? r->len : r->size - r->start;
	struct {
		const char *p;
		size_t n;
	} parts[2] = {{r->buf ? r->buf + r->start : NULL, first}, {r->buf, r->len - first}};
	for (int i = 0; i < 2; i++) {
		size_t s = skip < parts[i].n ? skip : parts[i].n;
		parts[i].p += s;
		parts[i].n -= s;
		skip -= s;
	}
	for (int i = 0; i < 2; i++)
		for (size_t done = 0; done < parts[i].n;) {
			ssize_t k = pwrite(fd, parts[i].p + done, parts[i].n - done, off);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				return k < 0 ? -errno : -EIO;
			done += (size_t)k;
			off += k;
		}
	return off;
}

/* What a reader gets: the ring, and first a line saying how much output was not kept if any
 * was. The note the drain writes after a dropped second may since have left the ring (up to
 * CONSOLE_RATE bytes come after it in the next second); this line cannot. It takes the place
 * of the oldest bytes, so a reader never gets more than the ring's size. Returns the bytes
 * written or -errno. */
static off_t
ring_copy_to(const struct log_ring *r, int fd)
{
	char note[96];
	size_t n = 0;
	if (r->dropped)
		n = (size_t)snprintf(note, sizeof note,
				     "[warren: %llu bytes of output not kept in all]\n",
				     (unsigned long long)r->dropped);
	if (n && pwrite(fd, note, n, 0) != (ssize_t)n)
		return -EIO;
	size_t skip = r->len + n > r->size ? r->len + n - r->size : 0;
	return ring_write_to(r, fd, (off_t)n, skip);
}

/* Followers whose reader went away (a pipe's write end polls POLLERR then) make room. */
static void
followers_reap(struct log_ring *r)
{
	for (struct follower *f = r->followers, *next; f; f = next) {
		next = f->next;
		struct pollfd p = {.fd = f->pipe, .events = 0};
		if (poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)))
			follower_free(f);
	}
}

int
log_ring_open(struct log_ring *r, bool follow, int *fd_out, uint64_t *size)
{
	int memfd = memfd_create("warren-logs", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (memfd < 0)
		return -errno;
	off_t copied = ring_copy_to(r, memfd);
	if (copied < 0) {
		close(memfd);
		return (int)copied;
	}
	int e;
	*size = (uint64_t)copied;
	if (!follow) {
		/* the reader gets a copy it can neither change nor grow */
		if (fcntl(memfd, F_ADD_SEALS,
			  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
			e = -errno;
			close(memfd);
			return e;
		}
		*fd_out = memfd;
		return 0;
	}
	followers_reap(r);
	if (r->n_followers >= LOG_RING_FOLLOWERS) {
		close(memfd);
		return -EBUSY;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		e = -errno;
		close(memfd);
		return e;
	}
	struct follower *f = calloc(1, sizeof *f);
	if (!f) {
		close(memfd);
		close(p[0]);
		close(p[1]);
		return -ENOMEM;
	}
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	f->ring = r;
	f->pipe = p[1];
	f->queue = memfd;
	f->wr = copied;
	f->ev = event_new(r->base, f->pipe, EV_WRITE, follower_writable, f);
	f->next = r->followers;
	r->followers = f;
	r->n_followers++;
	if (!f->ev || follower_flush(f) < 0) {
		follower_free(f);
		close(p[0]);
		return -ENOMEM;
	}
	*fd_out = p[0];
	return 0;
}

static struct kept {
	char id[32];
	struct log_ring *ring;
} kept[LOG_RING_KEPT];
static unsigned kept_next;

void
log_ring_keep(const char *id, struct log_ring *r)
{
	if (!r)
		return;
	while (r->followers)
		follower_free(r->followers);
	struct kept *k = &kept[kept_next++ % LOG_RING_KEPT];
	log_ring_free(k->ring);
	snprintf(k->id, sizeof k->id, "%s", id);
	k->ring = r;
}

struct log_ring *
log_ring_kept(const char *id)
{
	for (unsigned i = 0; i < LOG_RING_KEPT; i++)
		if (kept[i].ring && !strcmp(kept[i].id, id))
			return kept[i].ring;
	return NULL;
}

int
log_ring_save(struct log_ring *r, int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	off_t e = ring_write_to(r, fd, 0, 0);
	close(fd);
	return e < 0 ? (int)e : 0;
}

int
log_ring_load(struct log_ring *r, int dirfd, const char *name)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	/* a ring larger than this one was (another netnsd's --log-size): its end */
	off_t off = st.st_size > (off_t)r->size ? st.st_size - (off_t)r->size : 0;
	char buf[65536];
	while (off < st.st_size) {
		size_t want = (size_t)(st.st_size - off) < sizeof buf ? (size_t)(st.st_size - off)
								      : sizeof buf;
		ssize_t k = pread(fd, buf, want, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		ring_append(r, buf, (size_t)k);
		off += k;
	}
	return 0;
}
