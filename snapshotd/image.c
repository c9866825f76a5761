/* Tag images in snapshotd's store. An image is a directory <store>/<tag>/ holding what
 * `runsc checkpoint` wrote plus a header ("warren-image": format, parent, template, created,
 * compression, and every file's size and XXH3-64 checksum). It is written under a temporary
 * name (.tmp.<tag>.<n>), fsynced, sealed with its header and renamed at snapshot time; a restore
 * only opens and verifies it (no rename, delete or copy on the start path). Temporary
 * directories left by a crash are removed when snapshotd starts, so after a crash at any point
 * an image is whole or absent. */
#include "backend.h"
#include "fault.h"
#include "clock.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "image-header.h"
#include "names.h"
#include "snapshotd.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <xxhash.h>

#define HEADER IMAGE_HEADER_NAME
#define FORMAT IMAGE_HEADER_FORMAT

/* Exactly what image_prepare makes: .tmp.<tag>.<8 hex digits>. An abort or commit names one
 * of these and nothing else in the store. */
bool
image_temp_name_valid(const char *name)
{
	size_t n = name ? strnlen(name, 80) : 0;
	if (n < 5 + 1 + 9 || n >= 80 || strncmp(name, ".tmp.", 5))
		return false;
	const char *hex = name + n - 8;
	if (hex[-1] != '.')
		return false;
	for (int i = 0; i < 8; i++)
		if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
			return false;
	char tag[80];
	size_t tn = (size_t)(hex - 1 - (name + 5));
	memcpy(tag, name + 5, tn);
	tag[tn] = 0;
	return tag_name_valid(tag);
}

/* A file's size and checksum as the header's format has it: XXH3-64 (at memory speed: a
 * restore checks every byte of its image), or for an image an earlier version sealed, FNV-1a
 * 64 (a byte at a time, ~1 GB/s). */
static int
file_checksum(int dirfd, const char *name, unsigned format, uint64_t *size, uint64_t *hash)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	static unsigned char buf[1 << 20];
	static XXH3_state_t *xxh;
	if (!xxh && !(xxh = XXH3_createState()))
		return -ENOMEM;
	XXH3_64bits_reset(xxh);
	uint64_t fnv = 0xcbf29ce484222325ull, n = 0;
	for (;;) {
		ssize_t k = read(fd, buf, sizeof buf);
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		if (format == IMAGE_HEADER_FORMAT_FNV)
			for (ssize_t i = 0; i < k; i++) {
				fnv ^= buf[i];
				fnv *= 0x100000001b3ull;
			}
		else
			XXH3_64bits_update(xxh, buf, (size_t)k);
		n += (uint64_t)k;
	}
	*size = n;
	*hash = format == IMAGE_HEADER_FORMAT_FNV ? fnv : XXH3_64bits_digest(xxh);
	return 0;
}

/* A file of an image is as its header says: a regular file of that size and checksum. Every
 * restore checks every byte (XXH3 reads a 128 MiB microVM RAM file from the page cache in
 * ~30 ms here): until format 2, a cache by inode and change times skipped files checked once,
 * which let a bit flipped on disk (no write, no new mtime) through. */
static bool
verified_file(int dirfd, const char *name, unsigned format, uint64_t size, uint64_t hash)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != size)
		return false;
	uint64_t rs, rh;
	return file_checksum(dirfd, name, format, &rs, &rh) == 0 && rs == size && rh == hash;
}

int
image_prepare(struct snapshotd *s, const char *tag, char *temp, size_t size, int *dirfd)
{
	if (!tag_name_valid(tag))
		return -EINVAL;
	struct stat st;
	if (fstatat(s->store_fd, tag, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST; /* refused before the checkpoint, which would stop the sandbox */
	uint32_t rnd;
	getrandom(&rnd, sizeof rnd, 0);
	snprintf(temp, size, ".tmp.%s.%08x", tag, rnd);
	if (mkdirat(s->store_fd, temp, 0700) < 0)
		return -errno;
	*dirfd = openat(s->store_fd, temp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return *dirfd < 0 ? -errno : 0;
}

int
image_abort(struct snapshotd *s, const char *temp)
{
	if (!image_temp_name_valid(temp))
		return -EINVAL;
	char path[600];
	snprintf(path, sizeof path, "%s/%s", s->store_dir, temp);
	return rm_rf(path);
}

int
image_commit(struct snapshotd *s, const Warren__V1__CommitImageRequest *q, uint64_t *total)
{
	if (!image_temp_name_valid(q->temp_name) || !tag_name_valid(q->tag) ||
	    !backend_valid(q->backend) || !compression_valid(q->compression) ||
	    (q->parent[0] && !sandbox_id_valid(q->parent)) ||
	    (q->template_name[0] && !template_name_valid(q->template_name)))
		return -EINVAL;
	struct stat st;
	if (fstatat(s->store_fd, q->tag, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	_cleanup_close_ int dfd =
		openat(s->store_fd, q->temp_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	bool zstd = compress_wanted(s, q->compression);
	if (zstd) {
		int cr = compress_image_files(s, dfd);
		if (cr < 0) {
			image_abort(s, q->temp_name);
			return cr;
		}
	}
	char *hdr = NULL;
	size_t hlen = 0;
	FILE *f = open_memstream(&hdr, &hlen);
	fprintf(f, "format=%d\ncreated=%llu\nparent=%s\ntemplate=%s\nbackend=%s\ncompression=%s\n",
		FORMAT, (unsigned long long)realtime_usec(), q->parent, q->template_name,
		backend_to_string(q->backend), zstd ? "zstd" : "none");
	DIR *d = fdopendir(dup(dfd));
	if (d)
		rewinddir(d); /* a dup shares the offset a previous walk left at the end */
	struct dirent *de;
	int r = 0;
	*total = 0;
	while (d && (de = readdir(d)) && r == 0) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, HEADER))
			continue;
		/* a name the header cannot hold as one plain word is refused, not written: the
		 * files were written by the spawner, which is not trusted with the header */
		if (!image_file_name_valid(de->d_name)) {
			log_warning("Image %s: a file name is not [A-Za-z0-9._-]; refused", q->tag);
			r = -EINVAL;
			break;
		}
		uint64_t size, hash;
		r = file_checksum(dfd, de->d_name, IMAGE_HEADER_FORMAT, &size, &hash);
		if (r == 0) {
			_cleanup_close_ int fd = openat(dfd, de->d_name, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || fsync(fd) < 0)
				r = -errno;
		}
		fprintf(f, "file=%s %llu %016llx\n", de->d_name, (unsigned long long)size,
			(unsigned long long)hash);
		*total += size;
	}
	if (d)
		closedir(d);
	fclose(f);
	if (r == 0) {
		char path[700];
		snprintf(path, sizeof path, "%s/%s/" HEADER, s->store_dir, q->temp_name);
		r = file_write_atomic(path, hdr, hlen, 0600, true);
	}
	free(hdr);
	if (r == 0)
		fault_point("image-seal");
	if (r == 0 &&
	    (fsync(dfd) < 0 || renameat(s->store_fd, q->temp_name, s->store_fd, q->tag) < 0 ||
	     fsync(s->store_fd) < 0))
		r = -errno;
	if (r < 0)
		image_abort(s, q->temp_name);
	return r;
}

/* Check each file the header lists: size always, checksum with verify. */
static bool
header_files_ok(const struct image_header *h, int dfd, bool verify)
{
	for (size_t i = 0; i < h->n_files; i++) {
		const struct image_file *f = &h->files[i];
		if (verify) {
			if (!verified_file(dfd, f->name, h->format, f->size, f->hash))
				return false;
		} else {
			struct stat st;
			if (fstatat(dfd, f->name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISREG(st.st_mode) || (uint64_t)st.st_size != f->size)
				return false;
		}
	}
	return true;
}

/* Read (and with verify, check every checksum of) a tag's header. info is initialised before
 * anything can fail, so a caller frees it whatever this returns. */
int
image_read(struct snapshotd *s, const char *tag, bool verify, Warren__V1__ImageInfo *info,
	   int *dirfd_out)
{
	warren__v1__image_info__init(info);
	info->name = info->parent = info->template_name = (char *)"";
	info->backend = WARREN__V1__BACKEND__BACKEND_GVISOR;
	if (!tag_name_valid(tag))
		return -EINVAL;
	_cleanup_close_ int dfd =
		openat(s->store_fd, tag, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return -errno;
	_cleanup_close_ int hfd = openat(dfd, HEADER, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (hfd < 0)
		return errno == ENOENT ? -EBADMSG : -errno;
	static char buf[IMAGE_HEADER_MAX_BYTES + 1];
	size_t len = 0;
	for (;;) {
		ssize_t k = read(hfd, buf + len, sizeof buf - len);
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		len += (size_t)k;
		if (len == sizeof buf)
			break;
	}
	static struct image_header h;
	char why[128];
	int r = image_header_parse(buf, len, &h, why, sizeof why);
	if (r < 0) {
		log_warning("Image %s: bad header: %s", tag, why);
		return r;
	}
	if (!header_files_ok(&h, dfd, verify))
		return -EBADMSG;
	info->name = strdup(tag);
	info->parent = h.parent[0] ? strdup(h.parent) : (char *)"";
	info->template_name = h.template_name[0] ? strdup(h.template_name) : (char *)"";
	info->backend = backend_from_string(h.backend); /* the parser admits only names */
	info->compressed = h.compressed;
	info->created_usec = h.created_usec;
	for (size_t i = 0; i < h.n_files; i++)
		info->size += h.files[i].size;
	if (!info->name || !info->parent || !info->template_name)
		return -ENOMEM;
	if (dirfd_out)
		*dirfd_out = TAKE_FD(dfd);
	return 0;
}

/* Strings are either strdup'd or protobuf-c's / our static "" (never freed). */
void
image_info_free(Warren__V1__ImageInfo *info)
{
	if (info->name && info->name[0])
		free(info->name);
	if (info->parent && info->parent[0])
		free(info->parent);
	if (info->template_name && info->template_name[0])
		free(info->template_name);
}

int
image_remove(struct snapshotd *s, const char *tag)
{
	if (!tag_name_valid(tag))
		return -EINVAL;
	struct stat st;
	if (fstatat(s->store_fd, tag, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -ENOENT;
	image_cache_remove(s, tag);
	/* rename first: a crash mid-delete leaves a temporary name, removed at start */
	char temp[128], path[700];
	snprintf(temp, sizeof temp, ".tmp.removing.%s", tag);
	if (renameat(s->store_fd, tag, s->store_fd, temp) < 0)
		return -errno;
	snprintf(path, sizeof path, "%s/%s", s->store_dir, temp);
	return rm_rf(path);
}

void
image_clean_temporaries(struct snapshotd *s)
{
	DIR *d = fdopendir(dup(s->store_fd));
	if (!d)
		return;
	struct dirent *de;
	char path[700];
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, ".tmp.", 5)) {
			snprintf(path, sizeof path, "%s/%s", s->store_dir, de->d_name);
			log_info("Removing %s left by an interrupted snapshot", path);
			rm_rf(path);
		}
	closedir(d);
}
