/* A template's root filesystem, checked and handed to runsc as an fd (see rootfs.h). Runs in
 * netnsd's spawner, the privileged side: the supervisor (which may be compromised) only names a
 * template, netnsd canonicalises the path, and what reaches runsc is decided here.
 *
 * What a tree may hold (debootstrap's dev/console, 0666 on a filesystem without nodev, let
 * `nobody` open the host console through the template):
 *   - no character or block device (gVisor and the microVM agent make /dev themselves);
 *   - every entry owned by root (uid 0);
 *   - nothing another user may write: no entry with the others-write bit, sticky directories
 *     included (a template's /tmp is a tmpfs in every sandbox anyway), and no group-write bit
 *     unless the group is root's;
 *   - no mount point (the tree runsc sees is the one checked, on one filesystem).
 * With that, only root can change a checked tree, which is what makes the cache sound: the
 * tree is walked once per template root (dev, ino, mtime, ctime), not on every spawn. The path
 * from the templates directory down to the rootfs obeys the same owner and write rules, so no
 * one but root can swap a component; and the fd, once open, is what gets mounted, so a swap
 * after the check changes nothing. */
#include "rootfs.h"
#include "log.h"
#include "macro.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#define MAX_DEPTH 64	     /* a template deeper than this is refused, not walked */
#define MAX_ENTRIES 2000000u /* bounds the one walk per template */
#define CACHE_SIZE 32	     /* checked template roots remembered */

struct checked {
	dev_t dev;
	ino_t ino;
	struct statx_timestamp mtime, ctime;
	bool used;
};

static struct checked cache[CACHE_SIZE];
static unsigned cache_next;

struct walk {
	char path[4096]; /* the entry being looked at, relative to the rootfs, for the reason */
	size_t len;
	unsigned entries;
	char *why;
	size_t why_size;
};

static int
refuse(char *why, size_t size, int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
	return r;
}

/* The owner and write rules, for a component on the way and for every entry of the tree. */
static const char *
mode_problem(const struct statx *st)
{
	if (S_ISCHR(st->stx_mode) || S_ISBLK(st->stx_mode))
		return "is a device node";
	if (st->stx_uid != 0)
		return "is not owned by root";
	if (S_ISLNK(st->stx_mode))
		return NULL; /* a symlink's mode means nothing; gVisor resolves it inside */
	if (st->stx_mode & S_IWOTH)
		return "is writable by others";
	if ((st->stx_mode & S_IWGRP) && st->stx_gid != 0)
		return "is writable by a group other than root's";
	return NULL;
}

static int
do_statx(int dirfd, const char *name, struct statx *st)
{
	int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (name[0] ? 0 : AT_EMPTY_PATH);
	if (statx(dirfd, name, flags,
		  STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID | STATX_INO | STATX_MTIME |
			  STATX_CTIME,
		  st) < 0)
		return -errno;
	return 0;
}

static bool
is_mount_root(const struct statx *st, const struct statx *parent)
{
	if (st->stx_dev_major != parent->stx_dev_major ||
	    st->stx_dev_minor != parent->stx_dev_minor)
		return true;
	return (st->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	       (st->stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* Walk the directory dirfd (O_RDONLY, owned by the caller), whose statx is self. */
static int
walk_dir(struct walk *w, int dirfd, const struct statx *self, unsigned depth)
{
	if (depth > MAX_DEPTH)
		return refuse(w->why, w->why_size, -ELOOP, "/%s is nested deeper than %u levels",
			      w->path, MAX_DEPTH);
	int dfd = dup(dirfd);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	int r = 0;
	struct dirent *de;
	size_t base = w->len;
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++w->entries > MAX_ENTRIES) {
			r = refuse(w->why, w->why_size, -E2BIG, "more than %u entries",
				   MAX_ENTRIES);
			break;
		}
		size_t nl = strlen(de->d_name);
		if (base + nl + 2 >= sizeof w->path) {
			r = refuse(w->why, w->why_size, -ENAMETOOLONG,
				   "a path under /%s is too long", w->path);
			break;
		}
		w->len = base;
		if (base)
			w->path[w->len++] = '/';
		memcpy(w->path + w->len, de->d_name, nl + 1);
		w->len += nl;
		struct statx st;
		r = do_statx(dirfd, de->d_name, &st);
		if (r < 0) {
			r = refuse(w->why, w->why_size, r, "/%s: %s", w->path, strerror(-r));
			break;
		}
		const char *problem = mode_problem(&st);
		if (problem) {
			r = refuse(w->why, w->why_size, -EPERM, "/%s %s", w->path, problem);
			break;
		}
		if (!S_ISDIR(st.stx_mode))
			continue;
		if (is_mount_root(&st, self)) {
			r = refuse(w->why, w->why_size, -EXDEV, "/%s is a mount point", w->path);
			break;
		}
		int sub = openat(dirfd, de->d_name,
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
		if (sub < 0) {
			r = refuse(w->why, w->why_size, -errno, "/%s: %m", w->path);
			break;
		}
		/* the directory opened is the one looked at (a swap in between is refused) */
		struct statx again;
		r = do_statx(sub, "", &again);
		if (r == 0 &&
		    (again.stx_ino != st.stx_ino || again.stx_dev_major != st.stx_dev_major ||
		     again.stx_dev_minor != st.stx_dev_minor))
			r = refuse(w->why, w->why_size, -ESTALE, "/%s changed during the check",
				   w->path);
		if (r == 0)
			r = walk_dir(w, sub, &again, depth + 1);
		close(sub);
		if (r < 0)
			break;
	}
	if (r == 0 && errno)
		r = refuse(w->why, w->why_size, -errno, "reading /%s: %m", w->path);
	w->len = base;
	w->path[base] = 0;
	closedir(d);
	return r;
}

int
rootfs_check_tree(int rootfd, char *why, size_t why_size)
{
	_cleanup_close_ int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return refuse(why, why_size, -errno, "cannot open the rootfs: %m");
	struct statx st;
	int r = do_statx(fd, "", &st);
	if (r < 0)
		return refuse(why, why_size, r, "cannot stat the rootfs: %s", strerror(-r));
	const char *problem = mode_problem(&st);
	if (problem)
		return refuse(why, why_size, -EPERM, "its top directory %s", problem);
	struct walk w = {.why = why, .why_size = why_size};
	return walk_dir(&w, fd, &st, 0);
}

int
rootfs_open_templates(const char *templates_dir)
{
	int fd = open(templates_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct statx st;
	int r = do_statx(fd, "", &st);
	if (r == 0 && mode_problem(&st))
		r = -EPERM;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

static bool
cache_has(const struct statx *st)
{
	for (unsigned i = 0; i < CACHE_SIZE; i++) {
		const struct checked *c = &cache[i];
		if (c->used && c->ino == st->stx_ino &&
		    c->dev == makedev(st->stx_dev_major, st->stx_dev_minor) &&
		    !memcmp(&c->mtime, &st->stx_mtime, sizeof c->mtime) &&
		    !memcmp(&c->ctime, &st->stx_ctime, sizeof c->ctime))
			return true;
	}
	return false;
}

static void
cache_add(const struct statx *st)
{
	struct checked *c = &cache[cache_next++ % CACHE_SIZE];
	*c = (struct checked){.dev = makedev(st->stx_dev_major, st->stx_dev_minor),
			      .ino = st->stx_ino,
			      .mtime = st->stx_mtime,
			      .ctime = st->stx_ctime,
			      .used = true};
}

int
rootfs_open(int templates_fd, const char *templates_dir, const char *path, char *why,
	    size_t why_size)
{
	size_t tl = strlen(templates_dir);
	if (strncmp(path, templates_dir, tl) || path[tl] != '/' || !path[tl + 1])
		return refuse(why, why_size, -EACCES, "%s is not inside %s", path, templates_dir);
	char rel[4096];
	if (snprintf(rel, sizeof rel, "%s", path + tl + 1) >= (int)sizeof rel)
		return refuse(why, why_size, -ENAMETOOLONG, "the path is too long");
	/* One component at a time, so each one's owner and mode are checked on the fd opened. */
	_cleanup_close_ int cur = dup(templates_fd);
	if (cur < 0)
		return -errno;
	char *save = NULL;
	for (char *comp = strtok_r(rel, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		if (!strcmp(comp, ".") || !strcmp(comp, ".."))
			return refuse(why, why_size, -EACCES, "%s is not a canonical path", path);
		struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
				       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
						  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
		int next = (int)syscall(SYS_openat2, cur, comp, &how, sizeof how);
		if (next < 0)
			return refuse(why, why_size, -errno,
				      "%s: cannot open %s beneath %s without symlinks or mount "
				      "crossings: %m",
				      path, comp, templates_dir);
		close(cur);
		cur = next;
		struct statx st;
		int r = do_statx(cur, "", &st);
		if (r < 0)
			return refuse(why, why_size, r, "%s: %s", comp, strerror(-r));
		const char *problem = mode_problem(&st);
		if (problem)
			return refuse(why, why_size, -EPERM, "%s: the component %s %s", path, comp,
				      problem);
	}
	struct statx st;
	int r = do_statx(cur, "", &st);
	if (r < 0)
		return r;
	if (!cache_has(&st)) {
		char reason[512];
		r = rootfs_check_tree(cur, reason, sizeof reason);
		if (r < 0)
			return refuse(why, why_size, r, "%s: %s", path, reason);
		cache_add(&st);
		log_info("Template rootfs %s checked: no device node, every entry root's and "
			 "writable by root only",
			 path);
	}
	return TAKE_FD(cur);
}

int
rootfs_clone(int rootfd)
{
	/* a clone of this one mount (no AT_RECURSIVE: nothing mounted below comes along) */
	_cleanup_close_ int tree =
		open_tree(rootfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (tree < 0)
		return -errno;
	struct mount_attr attr = {.attr_set =
					  MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
		return -errno;
	return TAKE_FD(tree);
}

int
rootfs_attach(int tree, const char *target)
{
	if (move_mount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

int
rootfs_program_check(int rootfd, const char *program, char *why, size_t why_size)
{
	if (!program || program[0] != '/')
		return 0; /* looked up in PATH by the agent: its exit status says what went wrong */
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve =
				       RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, rootfd, program + 1, &how, sizeof how);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		snprintf(why, why_size, "cannot start %s: %s in the template's root filesystem",
			 program, strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode) || !(st.st_mode & 0111)) {
		snprintf(why, why_size, "cannot start %s: not an executable file", program);
		return -EACCES;
	}
	return 0;
}

int
rootfs_agent_mountpoint(int rootfd, const char *path)
{
	/* runsc's gofer makes a bind mount's missing mount point itself, in the host's view of the
	 * tree, which is read-only here: the sandbox would die at boot ("cannot read client sync
	 * file: EOF"). So the point must be there already, a plain file and no symlink on the way
	 * (the gofer would follow one inside the tree, to where the agent was not meant to be). */
	struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV};
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, rootfd, path + 1, &how, sizeof how);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	return S_ISREG(st.st_mode) ? 0 : -EINVAL;
}
