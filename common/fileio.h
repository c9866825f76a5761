/* Small kernel-file and state-file helpers (sysfs, cgroupfs, /proc, Warren's own state). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Read a whole (small) file; NUL-terminated; *out freed by the caller. */
int file_read_all(const char *path, char **out, size_t *len);
/* First line without the newline. */
int file_read_line(const char *path, char *buf, size_t size);
int file_read_u64(const char *path, uint64_t *v);
/* Write a string to an existing kernel file (no O_CREAT). */
int file_write_string(const char *path, const char *s);
/* Replace a file atomically: write a temporary, rename. With durable, fsync the file before and
 * the directory after the rename, so the new content also survives a power loss. */
int file_write_atomic(const char *path, const void *data, size_t len, int mode, bool durable);
/* Write the 4 KiB pages of buf (len bytes, at offset off of fd) that are not all zero, so a
 * file sized with ftruncate keeps holes for the zero pages (guest RAM images). */
int pwrite_nonzero_pages(int fd, const void *buf, size_t len, off_t off);
/* Call cb for each key=value line of a small file; stops at the first negative return. */
int file_read_kv(const char *path, int (*cb)(const char *k, const char *v, void *ud), void *ud);
int mkdir_p(const char *path, int mode);
/* Remove a directory tree (no symlink following). */
int rm_rf(const char *path);
/* Bytes in a /proc/meminfo field such as "MemTotal". */
int meminfo_bytes(const char *field, uint64_t *v);
/* Memory usage of a cgroup path relative to the hierarchy root ("/warren/<id>"): v2 memory.current
 * first, then v1 memory.usage_in_bytes. dir gets the directory that answered. */
int cgroup_memory_dir(const char *rel, char *dir, size_t size, int *v2);
int cgroup_memory_usage(const char *rel, uint64_t *v);
