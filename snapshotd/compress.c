/* zstd for tag images (snapshotd). The policy: a tag image is compressed only when the store's
 * disk writes slower than --compress-below MB/s (default 500, measured once and cached in
 * <store>/.disk-speed; `warren-snapshotd --measure-disk` measures again); an image the supervisor
 * commits with COMPRESSION_NONE (a warm template's image, so warm creates read it from the page
 * cache) never is: the request says it, the tag's name is not read. On a slow disk reading a
 * third of the bytes and decompressing beats reading them all; on a fast one it does not.
 *
 * A compressed image keeps <file>.zst for every file of 64 KiB or more. The first open
 * decompresses it into a cache on tmpfs (<cache>/<tag>.<header inode>, built under a temporary
 * name and renamed, so it is whole or absent) and every later restore of the tag maps that:
 * runsc and QEMU need plain files (QEMU maps the RAM file). RemoveTag drops the cache too. */
#include "fault.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "snapshotd.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zstd.h>

#define MIN_COMPRESS (64 * 1024)
#define PROBE_BYTES (64u << 20)

static double
seconds_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Sequential write speed of the store's disk, in MB/s: 64 MiB written and fdatasync'd. */
static int
measure(struct snapshotd *s, unsigned *mbps)
{
	static const char name[] = ".disk-probe";
	_cleanup_close_ int fd =
		openat(s->store_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	static char buf[1 << 20];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (char)(i * 2654435761u >> 13); /* not zeros: no shortcut for the disk */
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = 0;
	for (unsigned done = 0; done < PROBE_BYTES && r == 0; done += sizeof buf)
		if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
			r = -EIO;
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	double secs = seconds_since(&t0);
	unlinkat(s->store_fd, name, 0);
	if (r < 0)
		return r;
	*mbps = (unsigned)((double)PROBE_BYTES / 1e6 / (secs > 1e-6 ? secs : 1e-6));
	return 0;
}

int
disk_speed(struct snapshotd *s, bool remeasure, unsigned *mbps)
{
	char path[600], line[64];
	struct stat st;
	if (fstat(s->store_fd, &st) < 0)
		return -errno;
	snprintf(path, sizeof path, "%s/.disk-speed", s->store_dir);
	unsigned long long dev;
	unsigned cached;
	/* cached per device: a store moved to another disk is measured again */
	if (!remeasure && file_read_line(path, line, sizeof line) == 0 &&
	    sscanf(line, "%llu %u", &dev, &cached) == 2 && dev == (unsigned long long)st.st_dev) {
		*mbps = cached;
		return 0;
	}
	int r = measure(s, mbps);
	if (r < 0)
		return r;
	snprintf(line, sizeof line, "%llu %u\n", (unsigned long long)st.st_dev, *mbps);
	file_write_atomic(path, line, strlen(line), 0644, true);
	log_info("Store disk writes %u MB/s: tag images are %scompressed (threshold %u MB/s)",
		 *mbps, *mbps < s->compress_below ? "" : "not ", s->compress_below);
	return 0;
}

bool
compression_valid(Warren__V1__Compression c)
{
	/* protobuf-c admits any number in an enum field: only the two the policy knows */
	return c == WARREN__V1__COMPRESSION__COMPRESSION_AUTO ||
	       c == WARREN__V1__COMPRESSION__COMPRESSION_NONE;
}

bool
compress_wanted(struct snapshotd *s, Warren__V1__Compression c)
{
	if (c != WARREN__V1__COMPRESSION__COMPRESSION_AUTO || s->compress_below == 0)
		return false;
	unsigned mbps;
	return disk_speed(s, false, &mbps) == 0 && mbps < s->compress_below;
}

/* name -> name.zst in the same directory (fsynced), then name is removed. */
static int
compress_file(int dirfd, const char *name, int level)
{
	char zname[300];
	snprintf(zname, sizeof zname, "%s.zst", name);
	_cleanup_close_ int in = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int out =
		openat(dirfd, zname, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (in < 0 || out < 0)
		return -errno;
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
	size_t isz = ZSTD_CStreamInSize(), osz = ZSTD_CStreamOutSize();
	char *ibuf = malloc(isz), *obuf = malloc(osz);
	int r = cc && ibuf && obuf ? 0 : -ENOMEM;
	while (r == 0) {
		ssize_t k = read(in, ibuf, isz);
		if (k < 0) {
			r = -errno;
			break;
		}
		ZSTD_EndDirective mode = k == 0 ? ZSTD_e_end : ZSTD_e_continue;
		ZSTD_inBuffer ib = {ibuf, (size_t)k, 0};
		size_t left;
		do {
			ZSTD_outBuffer ob = {obuf, osz, 0};
			left = ZSTD_compressStream2(cc, &ob, &ib, mode);
			if (ZSTD_isError(left) || write(out, obuf, ob.pos) != (ssize_t)ob.pos) {
				r = -EIO;
				break;
			}
			if (ob.pos > 0) /* tests: a crash with part of the image written */
				fault_point("image-write");
		} while (r == 0 && (mode == ZSTD_e_end ? left != 0 : ib.pos < ib.size));
		if (r < 0 || k == 0)
			break;
	}
	ZSTD_freeCCtx(cc);
	free(ibuf);
	free(obuf);
	if (r == 0 && fsync(out) < 0)
		r = -errno;
	if (r == 0 && unlinkat(dirfd, name, 0) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, zname, 0);
	return r;
}

int
compress_image_files(struct snapshotd *s, int dirfd)
{
	DIR *d = fdopendir(dup(dirfd));
	if (d)
		rewinddir(d); /* a dup shares the offset a previous walk left at the end */
	if (!d)
		return -errno;
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d)) && r == 0) {
		struct stat st;
		if (de->d_name[0] == '.' ||
		    fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_size < MIN_COMPRESS)
			continue;
		size_t n = strlen(de->d_name);
		if (n > 4 && !strcmp(de->d_name + n - 4, ".zst"))
			continue;
		r = compress_file(dirfd, de->d_name, s->zstd_level);
	}
	closedir(d);
	return r;
}

/* A member of a sealed image, opened on the image's directory fd without following a symlink
 * (0.2.0 read it through /proc/self/fd/N/name, which follows one): a regular file or nothing. */
static int
member_open(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EBADF;
	}
	return fd;
}

/* A member's source (read without following a symlink) and its new copy in the cache's new
 * directory (created, never an existing file). On failure neither fd is left open. */
static int
member_open_pair(int dirfd, const char *from, int outdir, const char *to, int *in, int *out)
{
	*in = member_open(dirfd, from);
	if (*in < 0)
		return *in;
	*out = openat(outdir, to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (*out < 0) {
		int r = -errno;
		close(*in);
		*in = -1;
		return r;
	}
	return 0;
}

/* Copy a member kept uncompressed into the cache's new directory, fd to fd. */
static int
copy_member(int dirfd, const char *name, int outdir)
{
	_cleanup_close_ int in = -1;
	_cleanup_close_ int out = -1;
	int r = member_open_pair(dirfd, name, outdir, name, &in, &out);
	if (r < 0)
		return r;
	char buf[65536];
	for (;;) {
		ssize_t k = read(in, buf, sizeof buf);
		if (k < 0)
			return -errno;
		if (k == 0)
			return 0;
		for (ssize_t off = 0; off < k;) {
			ssize_t w = write(out, buf + off, (size_t)(k - off));
			if (w < 0)
				return -errno;
			off += w;
		}
	}
}

/* Stream-decompress from (dirfd, zname) into (outdir, name); holes for zero pages. */
static int
decompress_file(int dirfd, const char *zname, int outdir, const char *name)
{
	_cleanup_close_ int in = -1;
	_cleanup_close_ int out = -1;
	int r = member_open_pair(dirfd, zname, outdir, name, &in, &out);
	if (r < 0)
		return r;
	ZSTD_DCtx *dc = ZSTD_createDCtx();
	size_t isz = ZSTD_DStreamInSize(), osz = ZSTD_DStreamOutSize();
	char *ibuf = malloc(isz), *obuf = malloc(osz);
	off_t pos = 0;
	size_t last = 1;
	if (!dc || !ibuf || !obuf)
		r = -ENOMEM;
	while (r == 0) {
		ssize_t k = read(in, ibuf, isz);
		if (k < 0) {
			r = -errno;
			break;
		}
		if (k == 0)
			break;
		ZSTD_inBuffer ib = {ibuf, (size_t)k, 0};
		while (ib.pos < ib.size && r == 0) {
			ZSTD_outBuffer ob = {obuf, osz, 0};
			last = ZSTD_decompressStream(dc, &ob, &ib);
			if (ZSTD_isError(last)) {
				r = -EBADMSG;
				break;
			}
			/* zero runs stay holes: a microVM's RAM file is mostly untouched */
			if (pwrite_nonzero_pages(out, obuf, ob.pos, pos) < 0)
				r = -EIO;
			pos += (off_t)ob.pos;
		}
		if (r < 0)
			break;
	}
	if (r == 0 && last != 0)
		r = -EBADMSG; /* truncated frame */
	if (r == 0 && ftruncate(out, pos) < 0)
		r = -errno;
	ZSTD_freeDCtx(dc);
	free(ibuf);
	free(obuf);
	return r;
}

static void
cache_name(struct snapshotd *s, const char *tag, int dirfd, char *buf, size_t size)
{
	struct stat st;
	if (fstatat(dirfd, "warren-image", &st, 0) < 0)
		st.st_ino = 0;
	snprintf(buf, size, "%s/%s.%llu", s->cache_dir, tag, (unsigned long long)st.st_ino);
}

int
image_decompressed(struct snapshotd *s, const char *tag, int dirfd, int *out_fd)
{
	char cache[600], tmp[640];
	cache_name(s, tag, dirfd, cache, sizeof cache);
	int fd = open(cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		*out_fd = fd;
		return 0;
	}
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	snprintf(tmp, sizeof tmp, "%s.tmp", cache);
	rm_rf(tmp);
	int r = mkdir_p(tmp, 0700);
	if (r < 0)
		return r;
	_cleanup_close_ int tfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(dup(dirfd));
	if (d)
		rewinddir(d); /* a dup shares the offset a previous walk left at the end */
	if (tfd < 0 || !d) {
		if (d)
			closedir(d);
		rm_rf(tmp);
		return -EIO;
	}
	struct dirent *de;
	while ((de = readdir(d)) && r == 0) {
		size_t n = strlen(de->d_name);
		if (de->d_name[0] == '.' || !strcmp(de->d_name, "warren-image"))
			continue;
		char name[300];
		snprintf(name, sizeof name, "%s", de->d_name);
		if (n > 4 && !strcmp(de->d_name + n - 4, ".zst")) {
			name[n - 4] = 0;
			r = decompress_file(dirfd, de->d_name, tfd, name);
		} else {
			/* small files were kept as they are */
			r = copy_member(dirfd, de->d_name, tfd);
		}
	}
	closedir(d);
	if (r == 0 && rename(tmp, cache) < 0)
		r = -errno;
	if (r < 0) {
		rm_rf(tmp);
		return r;
	}
	log_info("Image %s decompressed into %s in %.0f ms", tag, cache, seconds_since(&t0) * 1000);
	fd = open(cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*out_fd = fd;
	return 0;
}

void
image_cache_remove(struct snapshotd *s, const char *tag)
{
	DIR *d = opendir(s->cache_dir);
	if (!d)
		return;
	struct dirent *de;
	size_t n = strlen(tag);
	char path[700];
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, tag, n) && de->d_name[n] == '.') {
			snprintf(path, sizeof path, "%s/%s", s->cache_dir, de->d_name);
			rm_rf(path);
		}
	closedir(d);
}
