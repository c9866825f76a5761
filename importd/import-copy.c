/* The privileged half of an import (warren-importd's job process, root): copy the tree the
 * unprivileged stage unpacked into the templates directory. The source is hostile: written by
 * umoci from image layers, and by a user (warren-import) whose processes could still be
 * changing it if the unpacker were subverted (importd kills them all before this runs, but the
 * copy does not rely on it). So:
 *   - every entry is looked at with statx(AT_SYMLINK_NOFOLLOW) and opened with O_NOFOLLOW
 *     relative to its parent's fd, and the fd opened must be the inode looked at: a symlink is
 *     copied as a symlink (its target verbatim, it is resolved inside the sandbox) and never
 *     followed, so nothing outside the stage's tree is read through one;
 *   - every entry must be the stage user's: a hard link to a host file (owned by someone else)
 *     is refused, never copied with root's read rights;
 *   - device nodes, fifos and sockets are left out; modes lose set-id, sticky and group/other
 *     write bits; what is written is root's (importd creates it) in a fresh directory;
 *   - depth, entries and bytes are bounded. */
#include "importd.h"
#include "log.h"
#include "macro.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sendfile.h>
#include <unistd.h>

#define COPY_MAX_DEPTH 64
#define COPY_MAX_ENTRIES 2000000u

static int
refuse(char *why, size_t size, int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
	return r;
}

unsigned
import_copy_mode(unsigned mode)
{
	return mode & 0755;
}

static bool
same_inode(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

struct copy {
	uid_t owner;
	struct import_counts *c;
	char path[PATH_MAX];
	char *why;
	size_t why_size;
};

static int
copy_file(struct copy *cp, int srcdir, int dstdir, const char *name, const struct stat *st)
{
	_cleanup_close_ int in =
		openat(srcdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (in < 0)
		return refuse(cp->why, cp->why_size, -errno, "/%s: %m", cp->path);
	struct stat again;
	if (fstat(in, &again) < 0)
		return -errno;
	if (!S_ISREG(again.st_mode) || !same_inode(st, &again) || again.st_uid != cp->owner)
		return refuse(cp->why, cp->why_size, -ESTALE, "/%s changed during the copy",
			      cp->path);
	if (cp->c->bytes + (uint64_t)again.st_size > cp->c->max_bytes)
		return refuse(cp->why, cp->why_size, -EFBIG,
			      "the unpacked image is larger than %llu bytes",
			      (unsigned long long)cp->c->max_bytes);
	_cleanup_close_ int out =
		openat(dstdir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return refuse(cp->why, cp->why_size, -errno, "creating /%s: %m", cp->path);
	off_t left = again.st_size;
	while (left > 0) {
		ssize_t n = sendfile(out, in, NULL, left > (1 << 30) ? (1 << 30) : (size_t)left);
		if (n < 0)
			return refuse(cp->why, cp->why_size, -errno, "copying /%s: %m", cp->path);
		if (n == 0)
			break; /* shrank meanwhile: what was read is what the template holds */
		left -= n;
		cp->c->bytes += (uint64_t)n;
	}
	if (import_copy_mode(again.st_mode) != (again.st_mode & 07777))
		cp->c->modes_fixed++;
	if (fchmod(out, import_copy_mode(again.st_mode)) < 0)
		return -errno;
	struct timespec ts[2] = {again.st_atim, again.st_mtim};
	futimens(out, ts);
	return 0;
}

static int
copy_dir(struct copy *cp, int srcfd, int dstfd, unsigned depth)
{
	if (depth > COPY_MAX_DEPTH)
		return refuse(cp->why, cp->why_size, -ELOOP, "/%s is nested deeper than %u levels",
			      cp->path, COPY_MAX_DEPTH);
	int dfd = dup(srcfd);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	size_t base = strlen(cp->path);
	int r = 0;
	struct dirent *de;
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++cp->c->entries > COPY_MAX_ENTRIES) {
			r = refuse(cp->why, cp->why_size, -E2BIG, "more than %u entries",
				   COPY_MAX_ENTRIES);
			break;
		}
		size_t nl = strlen(de->d_name);
		if (base + nl + 2 >= sizeof cp->path) {
			r = refuse(cp->why, cp->why_size, -ENAMETOOLONG,
				   "a path under /%s is too long", cp->path);
			break;
		}
		cp->path[base] = 0;
		if (base)
			strcat(cp->path, "/");
		strcat(cp->path, de->d_name);
		struct stat st;
		if (fstatat(srcfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = refuse(cp->why, cp->why_size, -errno, "/%s: %m", cp->path);
			break;
		}
		if (st.st_uid != cp->owner) {
			/* the unpacker owns all it made; anything else was linked in from outside
			 */
			r = refuse(cp->why, cp->why_size, -EPERM,
				   "/%s is not the unpacker's (owner %u): a hard link to a file "
				   "outside the image?",
				   cp->path, (unsigned)st.st_uid);
			break;
		}
		if (S_ISREG(st.st_mode)) {
			r = copy_file(cp, srcfd, dstfd, de->d_name, &st);
			cp->c->files++;
			if (cp->c->progress && cp->c->files % 256 == 0)
				cp->c->progress(cp->c->bytes, cp->c->ud);
		} else if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = readlinkat(srcfd, de->d_name, target, sizeof target - 1);
			if (n < 0) {
				r = refuse(cp->why, cp->why_size, -errno, "/%s: %m", cp->path);
				break;
			}
			target[n] = 0;
			/* kept as it is: resolved inside the sandbox's root, never here */
			if (symlinkat(target, dstfd, de->d_name) < 0)
				r = refuse(cp->why, cp->why_size, -errno, "symlink /%s: %m",
					   cp->path);
			cp->c->files++;
		} else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = openat(
				srcfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			struct stat again;
			if (sub < 0 || fstat(sub, &again) < 0) {
				r = refuse(cp->why, cp->why_size, -errno, "/%s: %m", cp->path);
				break;
			}
			if (!same_inode(&st, &again)) {
				r = refuse(cp->why, cp->why_size, -ESTALE,
					   "/%s changed during the copy", cp->path);
				break;
			}
			if (mkdirat(dstfd, de->d_name, 0700) < 0) {
				r = refuse(cp->why, cp->why_size, -errno, "mkdir /%s: %m",
					   cp->path);
				break;
			}
			_cleanup_close_ int out = openat(
				dstfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (out < 0) {
				r = -errno;
				break;
			}
			r = copy_dir(cp, sub, out, depth + 1);
			if (r == 0) {
				/* its mode last: 0700 while root filled it */
				if (import_copy_mode(st.st_mode) != (st.st_mode & 07777))
					cp->c->modes_fixed++;
				if (fchmod(out, import_copy_mode(st.st_mode)) < 0)
					r = -errno;
				struct timespec ts[2] = {st.st_atim, st.st_mtim};
				futimens(out, ts);
			}
		} else {
			/* device node, fifo, socket: gVisor and the agent make /dev themselves */
			cp->c->dropped++;
			log_info("Import: left out /%s (not a file, directory or symlink)",
				 cp->path);
		}
		if (r < 0)
			break;
	}
	if (r == 0 && errno)
		r = refuse(cp->why, cp->why_size, -errno, "reading /%s: %m", cp->path);
	cp->path[base] = 0;
	closedir(d);
	return r;
}

int
import_copy_tree(int srcfd, int dstfd, uid_t owner, struct import_counts *c, char *why,
		 size_t why_size)
{
	struct stat st;
	if (fstat(srcfd, &st) < 0)
		return refuse(why, why_size, -errno, "the unpacked tree: %m");
	if (!S_ISDIR(st.st_mode) || st.st_uid != owner)
		return refuse(why, why_size, -EPERM,
			      "the unpacked tree is not the unpacker's "
			      "directory");
	struct copy cp = {.owner = owner, .c = c, .why = why, .why_size = why_size};
	int r = copy_dir(&cp, srcfd, dstfd, 0);
	if (r < 0)
		return r;
	if (fchmod(dstfd, import_copy_mode(st.st_mode)) < 0)
		return refuse(why, why_size, -errno, "chmod of the template's root: %m");
	return 0;
}
