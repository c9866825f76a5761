/* Small file helpers shared by every daemon: kernel files, atomic state files, trees. */
#include "fileio.h"
#include "macro.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int
file_read_all(const char *path, char **out, size_t *len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t k = read(fd, buf + n, cap - n - 1);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			int r = -errno;
			free(buf);
			return r;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	buf[n] = 0;
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

int
file_read_line(const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t k = read(fd, buf, size - 1);
	if (k < 0)
		return -errno;
	buf[k] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int
file_read_u64(const char *path, uint64_t *v)
{
	char buf[64];
	int r = file_read_line(path, buf, sizeof buf);
	if (r < 0)
		return r;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	*v = x;
	return 0;
}

int
file_write_string(const char *path, const char *s)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = strlen(s);
	ssize_t k = write(fd, s, len);
	if (k < 0)
		return -errno;
	return (size_t)k == len ? 0 : -EIO;
}

int
file_write_atomic(const char *path, const void *data, size_t len, int mode, bool durable)
{
	char tmp[4096], dir[4096];
	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
		return -ENAMETOOLONG;
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	const char *p = data;
	while (len > 0) {
		ssize_t k = write(fd, p, len);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			int r = -errno;
			unlink(tmp);
			return r;
		}
		p += k;
		len -= (size_t)k;
	}
	if ((durable && fsync(fd) < 0) || rename(tmp, path) < 0) {
		int r = -errno;
		unlink(tmp);
		return r;
	}
	if (!durable)
		return 0;
	snprintf(dir, sizeof dir, "%s", path);
	_cleanup_close_ int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		fsync(dfd);
	return 0;
}

int
file_read_kv(const char *path, int (*cb)(const char *k, const char *v, void *ud), void *ud)
{
	_cleanup_free_ char *s = NULL;
	int r = file_read_all(path, &s, NULL);
	if (r < 0)
		return r;
	char *save = NULL;
	for (char *line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = 0;
		r = cb(line, eq + 1, ud);
		if (r < 0)
			return r;
	}
	return 0;
}

int
mkdir_p(const char *path, int mode)
{
	char buf[4096];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int
rm_rf_at(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			return unlinkat(dfd, name, 0) < 0 ? -errno : 0;
		return errno == ENOENT ? 0 : -errno;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		int k = rm_rf_at(dirfd(d), de->d_name);
		if (k < 0 && r == 0)
			r = k;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

int
rm_rf(const char *path)
{
	return rm_rf_at(AT_FDCWD, path);
}

int
meminfo_bytes(const char *field, uint64_t *v)
{
	_cleanup_free_ char *s = NULL;
	int r = file_read_all("/proc/meminfo", &s, NULL);
	if (r < 0)
		return r;
	size_t fl = strlen(field);
	for (char *line = s; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (!strncmp(line, field, fl) && line[fl] == ':') {
			*v = strtoull(line + fl + 1, NULL, 10) * 1024;
			return 0;
		}
	}
	return -ENOENT;
}

int
cgroup_memory_dir(const char *rel, char *dir, size_t size, int *v2)
{
	static const char *v2_roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
	char probe[4200];
	for (size_t i = 0; i < ELEMENTSOF(v2_roots); i++) {
		snprintf(probe, sizeof probe, "%s%s/memory.current", v2_roots[i], rel);
		if (access(probe, R_OK) == 0) {
			snprintf(dir, size, "%s%s", v2_roots[i], rel);
			*v2 = 1;
			return 0;
		}
	}
	snprintf(probe, sizeof probe, "/sys/fs/cgroup/memory%s/memory.usage_in_bytes", rel);
	if (access(probe, R_OK) == 0) {
		snprintf(dir, size, "/sys/fs/cgroup/memory%s", rel);
		*v2 = 0;
		return 0;
	}
	return -ENOENT;
}

int
cgroup_memory_usage(const char *rel, uint64_t *v)
{
	char dir[4096], path[4200];
	int v2, r = cgroup_memory_dir(rel, dir, sizeof dir, &v2);
	if (r < 0)
		return r;
	snprintf(path, sizeof path, "%s/%s", dir, v2 ? "memory.current" : "memory.usage_in_bytes");
	return file_read_u64(path, v);
}

int
pwrite_nonzero_pages(int fd, const void *buf, size_t len, off_t off)
{
	static const char zero[4096];
	const char *b = buf;
	for (size_t p = 0; p < len; p += sizeof zero) {
		size_t n = len - p < sizeof zero ? len - p : sizeof zero;
		if (!memcmp(b + p, zero, n))
			continue;
		ssize_t k = pwrite(fd, b + p, n, off + (off_t)p);
		if (k < 0)
			return -errno;
		if ((size_t)k != n)
			return -EIO;
	}
	return 0;
}
