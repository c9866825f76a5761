/* The unprivileged stage of an import: runs in a child of importd's job that became the import
 * user (warren-import: no capabilities, no_new_privs, its own work directory inside a
 * root-owned staging directory). Everything that reads the hostile image runs here: the source
 * copied from the caller's fd, skopeo (any transport to an OCI layout in a blob store shared by
 * digest), `umoci unpack --rootless` (no device nodes, no foreign owners), and the parse of the
 * runtime config umoci derived from the image config. What it sends back is checked again by
 * importd and by the supervisor. */
#include "importd.h"
#include "log.h"
#include "macro.h"
#include "names.h"

#include "warren/v1/importd.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define CONFIG_MAX_BYTES (1 << 20)
#define CONFIG_MAX_STRINGS 256
#define CONFIG_STRING_MAX 4096

int
job_msg_send(int fd, int kind, const void *data, size_t len)
{
	if (len > JOB_MSG_MAX)
		return -EMSGSIZE;
	uint8_t head[5] = {(uint8_t)kind, (uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
			   (uint8_t)(len >> 24)};
	struct iovec iov[2] = {{head, sizeof head}, {(void *)data, len}};
	/* one writev: messages of the job are < PIPE_BUF only when small; the reader reassembles */
	size_t total = sizeof head + len, done = 0;
	while (done < total) {
		ssize_t n = writev(fd, iov, 2);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
		for (int i = 0; i < 2; i++) {
			size_t take = (size_t)n < iov[i].iov_len ? (size_t)n : iov[i].iov_len;
			iov[i].iov_base = (uint8_t *)iov[i].iov_base + take;
			iov[i].iov_len -= take;
			n -= (ssize_t)take;
		}
	}
	return 0;
}

int
job_progress(int fd, const char *name, const char *phase, uint64_t done, uint64_t total)
{
	Warren__V1__ImportProgressEvent ev = WARREN__V1__IMPORT_PROGRESS_EVENT__INIT;
	ev.name = (char *)name;
	ev.phase = (char *)phase;
	ev.done = done;
	ev.total = total;
	uint8_t buf[512];
	size_t len = warren__v1__import_progress_event__get_packed_size(&ev);
	if (len > sizeof buf)
		return -EMSGSIZE;
	warren__v1__import_progress_event__pack(&ev, buf);
	return job_msg_send(fd, JOB_MSG_PROGRESS, buf, len);
}

int
job_error(int fd, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	job_msg_send(fd, JOB_MSG_ERROR, buf, strlen(buf));
	return 1;
}

/* Run argv with stdout and stderr into a pipe; each line is handed to on_line; the last lines
 * are kept for the reason of a failure. */
static int
run(char *const *argv, void (*on_line)(const char *line, void *ud), void *ud, char *tail,
    size_t tail_size)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	FILE *f = fdopen(p[0], "r");
	char line[2048];
	tail[0] = 0;
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (on_line)
			on_line(line, ud);
		/* the tail: the last line that says something, without control characters */
		if (line[0]) {
			size_t o = 0;
			for (const char *c = line; *c && o + 1 < tail_size; c++)
				tail[o++] = (unsigned char)*c < 0x20 || *c == 0x7f ? ' ' : *c;
			tail[o] = 0;
		}
	}
	if (f)
		fclose(f);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	return -EIO;
}

struct unpack_progress {
	int out;
	const char *name;
	unsigned done, total;
};

static void
on_umoci_line(const char *line, void *ud)
{
	struct unpack_progress *u = ud;
	if (strstr(line, "unpack layer:")) {
		u->done++;
		job_progress(u->out, u->name, "layers", u->done, u->total);
	}
}

static json_t *
load_json(int dirfd, const char *path, char *why, size_t size)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > CONFIG_MAX_BYTES) {
		snprintf(why, size, "%s is missing, not a file or larger than %d bytes", path,
			 CONFIG_MAX_BYTES);
		return NULL;
	}
	json_error_t err;
	json_t *j = json_loadfd(fd, JSON_REJECT_DUPLICATES, &err);
	if (!j)
		snprintf(why, size, "%s: %s", path, err.text);
	return j;
}

/* How many layers the manifest tagged `name` in the store has (for progress only). */
static unsigned
manifest_layers(const char *store, const char *name, char *digest, size_t dsize)
{
	char why[256];
	_cleanup_close_ int sfd = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	json_t *idx = sfd >= 0 ? load_json(sfd, "index.json", why, sizeof why) : NULL;
	unsigned n = 0;
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(idx, "manifests"), i, m)
	{
		const char *ref = json_string_value(json_object_get(
			json_object_get(m, "annotations"), "org.opencontainers.image.ref.name"));
		const char *dg = json_string_value(json_object_get(m, "digest"));
		if (!ref || strcmp(ref, name) || !dg || strncmp(dg, "sha256:", 7) ||
		    strspn(dg + 7, "0123456789abcdef") != 64 || dg[71])
			continue;
		snprintf(digest, dsize, "%s", dg);
		char path[128];
		snprintf(path, sizeof path, "blobs/sha256/%s", dg + 7);
		json_t *man = load_json(sfd, path, why, sizeof why);
		n = (unsigned)json_array_size(json_object_get(man, "layers"));
		json_decref(man);
		break;
	}
	json_decref(idx);
	return n;
}

/* A JSON array of strings into v (checked: count, length, no control character). */
static int
string_array(json_t *a, char ***v, size_t *n, const char *what, char *why, size_t size)
{
	*v = NULL;
	*n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > CONFIG_MAX_STRINGS) {
		snprintf(why, size, "the image's %s is not a list of at most %d strings", what,
			 CONFIG_MAX_STRINGS);
		return -EINVAL;
	}
	*v = calloc(json_array_size(a) + 1, sizeof **v);
	if (!*v) {
		snprintf(why, size, "out of memory");
		return -ENOMEM;
	}
	size_t i;
	json_t *s;
	json_array_foreach(a, i, s)
	{
		const char *str = json_string_value(s);
		if (!str || !string_valid(str, CONFIG_STRING_MAX)) {
			snprintf(why, size,
				 "the image's %s[%zu] is not a string of at most %d bytes without "
				 "control characters",
				 what, i, CONFIG_STRING_MAX);
			return -EINVAL;
		}
		if (!((*v)[*n] = strdup(str))) {
			snprintf(why, size, "out of memory");
			return -ENOMEM;
		}
		(*n)++;
	}
	return 0;
}

static int
parse_config(const char *bundle, Warren__V1__ImportTemplateResponse *res, char *why, size_t size)
{
	_cleanup_close_ int bfd = open(bundle, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd < 0) {
		snprintf(why, size, "no bundle: %m");
		return -errno;
	}
	json_t *c = load_json(bfd, "config.json", why, size);
	if (!c)
		return -EINVAL;
	json_t *proc = json_object_get(c, "process");
	int r = string_array(json_object_get(proc, "args"), &res->argv, &res->n_argv, "command",
			     why, size);
	if (r == 0)
		r = string_array(json_object_get(proc, "env"), &res->env, &res->n_env,
				 "environment", why, size);
	const char *cwd = json_string_value(json_object_get(proc, "cwd"));
	if (r == 0 && cwd) {
		if (cwd[0] != '/' || !string_valid(cwd, CONFIG_STRING_MAX)) {
			snprintf(why, size,
				 "the image's working directory is not an absolute path");
			r = -EINVAL;
		} else if (!(res->cwd = strdup(cwd))) {
			snprintf(why, size, "out of memory");
			r = -ENOMEM;
		}
	}
	json_t *user = json_object_get(proc, "user");
	json_int_t uid = json_integer_value(json_object_get(user, "uid"));
	json_int_t gid = json_integer_value(json_object_get(user, "gid"));
	if (r == 0 && (uid < 0 || uid > 65534 || gid < 0 || gid > 65534)) {
		snprintf(why, size, "the image's user is not uid/gid 0-65534");
		r = -EINVAL;
	}
	res->uid = (uint32_t)uid;
	res->gid = (uint32_t)gid;
	/* umoci keeps the exposed ports as an annotation: "8080/tcp,53/udp" */
	const char *ports = json_string_value(json_object_get(
		json_object_get(c, "annotations"), "org.opencontainers.image.exposedPorts"));
	for (const char *p = ports; r == 0 && p && *p;) {
		char *end;
		unsigned long port = strtoul(p, &end, 10);
		bool tcp = end != p && (!strncmp(end, "/tcp", 4) || *end == ',' || !*end);
		if (tcp && port_valid((unsigned)port) && !res->port)
			res->port = (uint32_t)port;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	json_decref(c);
	return r;
}

/* The caller's archive, read through the fd it sent, into a file of the import user: skopeo
 * opens paths, and /proc/self/fd of a file the import user may not open would not reopen. */
static int
copy_source(int fd, const char *path, uint64_t max, int out, const char *name)
{
	struct stat st;
	/* a file, or a pipe (warrenctl streams a layout directory as a tar, read with the
	 * caller's rights) */
	if (fstat(fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)))
		return job_error(out, "the source is not a regular file or a pipe");
	if (S_ISFIFO(st.st_mode))
		st.st_size = 0;
	if ((uint64_t)st.st_size > max)
		return job_error(out, "the source is larger than %llu bytes",
				 (unsigned long long)max);
	_cleanup_close_ int dst =
		open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (dst < 0)
		return job_error(out, "cannot write the staging copy: %m");
	char buf[1 << 16];
	uint64_t done = 0, last = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return job_error(out, "reading the source: %m");
		if (n == 0)
			break;
		done += (uint64_t)n;
		if (done > max)
			return job_error(out, "the source is larger than %llu bytes",
					 (unsigned long long)max);
		if (write(dst, buf, (size_t)n) != n)
			return job_error(out, "writing the staging copy: %m");
		if (done - last >= (8u << 20)) {
			job_progress(out, name, "reading", done, (uint64_t)st.st_size);
			last = done;
		}
	}
	job_progress(out, name, "reading", done, done);
	return 0;
}

int
import_stage_run(const struct importd *d, const char *workdir, const char *store, int source_fd,
		 const char *format, const char *reference, const char *name, int out)
{
	char src[PATH_MAX + 160], dst[PATH_MAX + 64], path[PATH_MAX], tail[512];
	if (chdir(workdir) < 0)
		return job_error(out, "cannot enter the staging directory: %m");
	mkdir("tmp", 0700);
	setenv("TMPDIR", "tmp", 1);
	setenv("HOME", workdir, 1);
	if (!strcmp(format, "oci")) {
		/* a layout directory: read through the fd, with the import user's rights */
		snprintf(src, sizeof src, "oci:/proc/self/fd/%d%s%s", source_fd,
			 reference[0] ? ":" : "", reference);
	} else {
		snprintf(path, sizeof path, "%s/source.tar", workdir);
		int r = copy_source(source_fd, path, d->max_bytes, out, name);
		if (r)
			return r;
		snprintf(src, sizeof src, "%s:%s%s%s", format, path, reference[0] ? ":" : "",
			 reference);
		close(source_fd); /* copied; a layout directory stays open for skopeo */
	}
	job_progress(out, name, "fetching", 0, 1);
	snprintf(dst, sizeof dst, "oci:%s:%s", store, name);
	char *skopeo[] = {
		(char *)d->skopeo, "--insecure-policy", "copy", "--quiet", src, dst, NULL};
	if (run(skopeo, NULL, NULL, tail, sizeof tail) < 0)
		return job_error(out, "skopeo could not read the image: %s", tail);
	char digest[80] = "";
	struct unpack_progress u = {.out = out, .name = name};
	u.total = manifest_layers(store, name, digest, sizeof digest);
	job_progress(out, name, "layers", 0, u.total);
	char image[PATH_MAX + 64];
	snprintf(image, sizeof image, "%s:%s", store, name);
	char *umoci[] = {(char *)d->umoci, "--log=info", "unpack", "--rootless",
			 "--image",	   image,	 "bundle", NULL};
	if (run(umoci, on_umoci_line, &u, tail, sizeof tail) < 0)
		return job_error(out, "umoci could not unpack the image: %s", tail);
	Warren__V1__ImportTemplateResponse res = WARREN__V1__IMPORT_TEMPLATE_RESPONSE__INIT;
	char why[512];
	if (parse_config("bundle", &res, why, sizeof why) < 0)
		return job_error(out, "%s", why);
	res.layers = u.done;
	res.digest = digest;
	size_t len = warren__v1__import_template_response__get_packed_size(&res);
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf)
		return job_error(out, "out of memory");
	warren__v1__import_template_response__pack(&res, buf);
	int r = job_msg_send(out, JOB_MSG_CONFIG, buf, len);
	free(buf);
	return r < 0 ? job_error(out, "the image's configuration is too large") : 0;
}
