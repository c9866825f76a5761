/* Tag images in snapshotd's store. An image is a directory <store>/<tag>/ holding what
 * `runsc checkpoint` wrote plus a header ("warren-image": format, parent, template, created,
 * compression, and every file's size and FNV-1a 64 checksum). It is written under a temporary
 * name (.tmp.<tag>.<n>), fsynced, sealed with its header and renamed at snapshot time; a restore
 * only opens and verifies it (no rename, delete or copy on the start path). Temporary
 * directories left by a crash are removed when snapshotd starts, so after a crash at any point
 * an image is whole or absent. */
#include "clock.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "names.h"
#include "snapshotd.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#define HEADER "warren-image"
#define FORMAT 1

static bool
temp_name_valid(const char *name)
{
	return !strncmp(name, ".tmp.", 5) && !strchr(name, '/') && strlen(name) < 80 &&
	       strcmp(name, ".tmp.");
}

static int
file_checksum(int dirfd, const char *name, uint64_t *size, uint64_t *hash)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	static unsigned char buf[1 << 20];
	uint64_t h = 0xcbf29ce484222325ull, n = 0;
	for (;;) {
		ssize_t k = read(fd, buf, sizeof buf);
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		for (ssize_t i = 0; i < k; i++) {
			h ^= buf[i];
			h *= 0x100000001b3ull;
		}
		n += (uint64_t)k;
	}
	*size = n;
	*hash = h;
	return 0;
}

/* Files whose checksum this snapshotd has already checked, by identity and change times: an
 * image is verified in full once, and a restore after that (a microVM's RAM file is 128 MiB
 * and more) only looks at the inode. Any write to a file changes its mtime and ctime. */
struct verified {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	uint64_t hash;
	struct verified *next;
};
static struct verified *verified;

static bool
same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static void verified_remember(const struct stat *st, uint64_t hash);

static bool
verified_file(int dirfd, const char *name, uint64_t size, uint64_t hash)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != size)
		return false;
	for (struct verified *v = verified; v; v = v->next)
		if (v->dev == st.st_dev && v->ino == st.st_ino && v->size == st.st_size &&
		    v->hash == hash && same_time(&v->mtime, &st.st_mtim) &&
		    same_time(&v->ctime, &st.st_ctim))
			return true;
	uint64_t rs, rh;
	if (file_checksum(dirfd, name, &rs, &rh) < 0 || rs != size || rh != hash)
		return false;
	verified_remember(&st, hash);
	return true;
}

static void
verified_remember(const struct stat *st, uint64_t hash)
{
	struct verified *v = calloc(1, sizeof *v);
	*v = (struct verified){st->st_dev, st->st_ino, st->st_size, st->st_mtim, st->st_ctim, hash,
			       verified};
	verified = v;
}

int
image_prepare(struct snapshotd *s, const char *tag, char *temp, size_t size, int *dirfd)
{
	if (!template_name_valid(tag))
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
	if (!temp_name_valid(temp))
		return -EINVAL;
	char path[600];
	snprintf(path, sizeof path, "%s/%s", s->store_dir, temp);
	return rm_rf(path);
}

int
image_commit(struct snapshotd *s, const Warren__V1__CommitImageRequest *q, uint64_t *total)
{
	if (!temp_name_valid(q->temp_name) || !template_name_valid(q->tag) ||
	    (q->backend[0] && strcmp(q->backend, "gvisor") && strcmp(q->backend, "microvm")) ||
	    (q->parent[0] && !sandbox_id_valid(q->parent)) ||
	    (q->template_name[0] && !template_name_valid(q->template_name)))
		return -EINVAL;
	struct stat st;
	if (fstatat(s->store_fd, q->tag, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	_cleanup_close_ int dfd = openat(s->store_fd, q->temp_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	bool zstd = compress_wanted(s, q->tag);
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
	fprintf(f,
		"format=%d\ncreated=%llu\nparent=%s\ntemplate=%s\nbackend=%s\ncompression=%s\n",
		FORMAT, (unsigned long long)realtime_usec(), q->parent, q->template_name,
		q->backend[0] ? q->backend : "gvisor", zstd ? "zstd" : "none");
	DIR *d = fdopendir(dup(dfd));
	if (d)
		rewinddir(d); /* a dup shares the offset a previous walk left at the end */
	struct dirent *de;
	int r = 0;
	*total = 0;
	while (d && (de = readdir(d)) && r == 0) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, HEADER))
			continue;
		uint64_t size, hash;
		r = file_checksum(dfd, de->d_name, &size, &hash);
		if (r == 0) {
			_cleanup_close_ int fd = openat(dfd, de->d_name, O_RDONLY | O_CLOEXEC);
			struct stat fst;
			if (fd < 0 || fsync(fd) < 0 || fstat(fd, &fst) < 0)
				r = -errno;
			else
				verified_remember(&fst, hash); /* its checksum was just taken */
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
	if (r == 0 && (fsync(dfd) < 0 || renameat(s->store_fd, q->temp_name, s->store_fd, q->tag) < 0 ||
		       fsync(s->store_fd) < 0))
		r = -errno;
	if (r < 0)
		image_abort(s, q->temp_name);
	return r;
}

struct header {
	Warren__V1__ImageInfo *info;
	int dirfd;
	int files;
	int bad;
	bool verify;
};

static int
header_kv(const char *k, const char *v, void *ud)
{
	struct header *h = ud;
	static char parent[64], tmpl[64];
	if (!strcmp(k, "format") && atoi(v) != FORMAT)
		h->bad = 1;
	else if (!strcmp(k, "created"))
		h->info->created_usec = strtoull(v, NULL, 10);
	else if (!strcmp(k, "parent")) {
		snprintf(parent, sizeof parent, "%s", v);
		h->info->parent = strdup(parent);
	} else if (!strcmp(k, "template")) {
		snprintf(tmpl, sizeof tmpl, "%s", v);
		h->info->template_name = strdup(tmpl);
	} else if (!strcmp(k, "backend")) {
		h->info->backend = (char *)(!strcmp(v, "microvm") ? "microvm" : "gvisor");
	} else if (!strcmp(k, "compression"))
		h->info->compressed = strcmp(v, "none") != 0;
	else if (!strcmp(k, "file")) {
		char name[256];
		unsigned long long size, hash;
		if (sscanf(v, "%255s %llu %llx", name, &size, &hash) != 3 || strchr(name, '/')) {
			h->bad = 1;
			return 0;
		}
		h->files++;
		h->info->size += size;
		if (h->verify) {
			if (!verified_file(h->dirfd, name, size, hash))
				h->bad = 1;
		} else {
			struct stat st;
			if (fstatat(h->dirfd, name, &st, 0) < 0 || (uint64_t)st.st_size != size)
				h->bad = 1;
		}
	}
	return 0;
}

/* Read (and with verify, check every checksum of) a tag's header. */
int
image_read(struct snapshotd *s, const char *tag, bool verify, Warren__V1__ImageInfo *info,
	   int *dirfd_out)
{
	if (!template_name_valid(tag))
		return -EINVAL;
	warren__v1__image_info__init(info);
	info->parent = info->template_name = (char *)"";
	info->backend = (char *)"gvisor";
	int dfd = openat(s->store_fd, tag, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return -errno;
	char path[700];
	snprintf(path, sizeof path, "%s/%s/" HEADER, s->store_dir, tag);
	struct header h = {.info = info, .dirfd = dfd, .verify = verify};
	int r = file_read_kv(path, header_kv, &h);
	if (r == 0 && (h.bad || h.files == 0))
		r = -EBADMSG;
	info->name = strdup(tag);
	if (r < 0 || !dirfd_out)
		close(dfd);
	else
		*dirfd_out = dfd;
	return r;
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
	if (!template_name_valid(tag))
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
