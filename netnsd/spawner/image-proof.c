/* The spawner's proof of an image directory (see image-proof.h). The supervisor may be
 * compromised: an image directory fd is not trusted for being a directory (0.2.0 checked only
 * that, and its spawner then created, truncated and chown'ed files through whatever symlinks the
 * directory held). The spawner, which writes image files as root, proves the fd is one of
 * snapshotd's own image directories by opening that directory itself beneath the store and
 * comparing identities, and from then on uses only its own fd. It runs this itself, before
 * acting, because it holds the privilege the check guards: netnsd (its own uid, no openat2 in
 * its seccomp filter, no right to read snapshotd's 0700 store) could not, and a proof made by
 * another process would be one more thing for the spawner to trust. */
#include "image-layout.h"
#include "image-proof.h"
#include "log.h"
#include "macro.h"
#include "names.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int why_err(int r, char *why, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
why_err(int r, char *why, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
	return r;
}

/* A name snapshotd gives image directories: ".tmp.<tag>.<8 hex>" while a checkpoint writes
 * it, "<tag>" once sealed, "<tag>.<digits>" in the decompressed cache. */
static bool
image_name_valid(const char *name, enum image_proof_use use, bool cache)
{
	char tag[40];
	size_t n = strlen(name);
	if (n == 0 || n >= 80 || strchr(name, '/'))
		return false;
	if (use == IMAGE_PROOF_CHECKPOINT) {
		if (cache || strncmp(name, ".tmp.", 5))
			return false;
		const char *dot = strrchr(name, '.');
		if (dot - name <= 5 || strlen(dot + 1) != 8 ||
		    (size_t)(dot - name - 5) >= sizeof tag)
			return false;
		for (const char *p = dot + 1; *p; p++)
			if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
				return false;
		snprintf(tag, sizeof tag, "%.*s", (int)(dot - name - 5), name + 5);
		return template_name_valid(tag);
	}
	if (!cache)
		return template_name_valid(name);
	const char *dot = strrchr(name, '.');
	if (!dot || !dot[1] || (size_t)(dot - name) >= sizeof tag)
		return false;
	for (const char *p = dot + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	snprintf(tag, sizeof tag, "%.*s", (int)(dot - name), name);
	return template_name_valid(tag);
}

/* A directory snapshotd owns: a real one, not writable by anyone but its owner, who is root or
 * (a snapshotd under its own uid) the store's owner. The cache, on a world-writable tmpfs, must
 * also be unreadable by others (0700): another user who made it first would read tenants'
 * memory from it. */
static int
root_check(int fd, const char *path, uid_t store_owner, bool cache, char *why, size_t size)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return why_err(-errno, why, size, "%s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != store_owner) ||
	    (st.st_mode & (cache ? 077 : 022)))
		return why_err(-EACCES, why, size,
			       "%s is not a directory of snapshotd's alone (owner %u, mode %04o)",
			       path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	return 0;
}

/* Is the directory empty (a checkpoint creates every file in it)? */
static int
dir_empty(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			r = -ENOTEMPTY;
			break;
		}
	closedir(d);
	return r;
}

static int
member_regular(int dfd, const char *name)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return S_ISREG(st.st_mode) && st.st_nlink == 1 ? 0 : -EACCES;
}

int
image_proof_open(const struct image_proof_roots *im, int fd, enum image_proof_use use, bool vm,
		 struct image_proof *out, char *why, size_t size)
{
	out->fd = -1;
	struct stat given;
	if (fstat(fd, &given) < 0 || !S_ISDIR(given.st_mode))
		return why_err(-EINVAL, why, size, "the image fd is not a directory");
	/* the name the directory has now, as the kernel knows it */
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof path - 1);
	if (n < 0)
		return why_err(-errno, why, size, "the image fd has no name: %s", strerror(errno));
	path[n] = 0;
	if (!im->store)
		return why_err(-EACCES, why, size, "the spawner knows no image store");
	_cleanup_free_ char *store = realpath(im->store, NULL);
	_cleanup_free_ char *cache = im->cache ? realpath(im->cache, NULL) : NULL;
	const char *roots[2] = {store, cache};
	for (int i = 0; i < 2; i++) {
		const char *root = roots[i];
		size_t rl = root ? strlen(root) : 0;
		if (!root || strncmp(path, root, rl) || path[rl] != '/')
			continue;
		const char *name = path + rl + 1;
		if (!image_name_valid(name, use, i == 1))
			return why_err(-EACCES, why, size, "%s is not an image directory for a %s",
				       path,
				       use == IMAGE_PROOF_CHECKPOINT ? "checkpoint" : "restore");
		_cleanup_close_ int sfd =
			open(store, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat sst;
		if (sfd < 0 || fstat(sfd, &sst) < 0)
			return why_err(-EACCES, why, size, "cannot open the store %s", store);
		_cleanup_close_ int rfd =
			i == 0 ? dup(sfd)
			       : open(root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (rfd < 0)
			return why_err(-EACCES, why, size, "cannot open %s", root);
		int r = root_check(rfd, root, sst.st_uid, i == 1, why, size);
		if (r < 0)
			return r;
		struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
				       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
						  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
		_cleanup_close_ int ifd = (int)syscall(SYS_openat2, rfd, name, &how, sizeof how);
		struct stat st;
		if (ifd < 0 || fstat(ifd, &st) < 0)
			return why_err(-EACCES, why, size, "cannot open %s beneath %s: %s", name,
				       root, strerror(errno));
		if (st.st_dev != given.st_dev || st.st_ino != given.st_ino)
			return why_err(-EACCES, why, size, "the image fd is not %s", path);
		if (st.st_uid != sst.st_uid || (st.st_mode & 022))
			return why_err(-EACCES, why, size, "%s is not snapshotd's alone", path);
		if (use == IMAGE_PROOF_CHECKPOINT) {
			r = dir_empty(ifd);
			if (r < 0)
				return why_err(r == -ENOTEMPTY ? -EEXIST : r, why, size,
					       "%s is not an empty new image", path);
		} else {
			r = vm ? member_regular(ifd, IMAGE_LAYOUT_VM_STATE)
			       : member_regular(ifd, IMAGE_LAYOUT_GVISOR_CHECKPOINT);
			if (r == 0 && vm)
				r = member_regular(ifd, IMAGE_LAYOUT_VM_RAM);
			if (r < 0)
				return why_err(r == -ENOENT ? -ENOENT : -EACCES, why, size,
					       "%s holds no %s image (regular files)", path,
					       vm ? "microVM" : "gVisor");
		}
		out->fd = TAKE_FD(ifd);
		out->owner = sst.st_uid;
		out->group = sst.st_gid;
		return 0;
	}
	return why_err(-EACCES, why, size, "%s is not in snapshotd's store", path);
}

int
image_proof_seal(const struct image_proof *img, const char *name)
{
	_cleanup_close_ int fd = openat(img->fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return log_error_errno(-errno, "Image member %s: %m", name);
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid())
		return log_error_errno(-EACCES, "Image member %s is not a file of ours alone",
				       name);
	if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0)
		return log_error_errno(-errno, "Image member %s: chmod: %m", name);
	/* snapshotd (its own uid, no CAP_DAC_OVERRIDE needed for images) fsyncs, hashes and
	 * renames what is now its file; through this fd, never a name */
	if ((st.st_uid != img->owner || st.st_gid != img->group) &&
	    fchown(fd, img->owner, img->group) < 0)
		return log_error_errno(-errno, "Image member %s: chown to %u:%u: %m", name,
				       (unsigned)img->owner, (unsigned)img->group);
	return 0;
}
