/* warren-importd: imports OCI images (an image layout directory, an oci-archive or a
 * docker-archive, given as an fd the D-Bus caller opened) as template root filesystems, for the
 * supervisor, which has no privilege to write the templates directory. One import at a time,
 * each in a forked job process:
 *   job (root, importd's capabilities)
 *     -> stage child: becomes warren-import, no capabilities, no_new_privs; skopeo, umoci unpack
 *        --rootless and the config parse (import-stage.c) in <staging>/<job>/work, its own;
 *     -> every process of warren-import killed; the unpacked tree copied as root's into
 *        <templates>/.import-<name>.<pid> (import-copy.c), renamed to <templates>/<name>;
 *     -> warren-vm-image builds the microVM initramfs (or root disk) from the copied tree.
 * Progress and the result come back over a pipe, framed; importd relays progress as events. */
#include "importd.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "names.h"
#include "notify.h"
#include "privdrop.h"

#include "warren/v1/importd.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define IMPORT_MARKER "imported"
#define VM_DISK_ABOVE (96ull << 20) /* trees larger than this boot from a root disk */

static struct importd D;

/* ---- the job (a forked child of importd, root) -------------------------------------------- */

/* Become the import user in a child: no supplementary groups, every id, no capabilities left
 * (a switch from root to another uid in all three clears them), no_new_privs. */
static int
become_import_user(const struct importd *d)
{
	if (setgroups(0, NULL) < 0 || setresgid(d->import_gid, d->import_gid, d->import_gid) < 0 ||
	    setresuid(d->import_uid, d->import_uid, d->import_uid) < 0)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (setresuid(0, 0, 0) == 0)
		return -EPERM; /* the switch did not hold */
	return 0;
}

/* Every process of the import user, killed (from a child that became it: kill(-1) reaches
 * exactly that user's processes). A subverted unpacker leaves nothing running during the copy. */
static void
kill_import_user(const struct importd *d)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (become_import_user(d) == 0)
			kill(-1, SIGKILL);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* Remove the stage's work directory as its owner, then the job directory as root. */
static void
clean_staging(const struct importd *d, const char *jobdir)
{
	char work[PATH_MAX];
	snprintf(work, sizeof work, "%s/work", jobdir);
	pid_t pid = fork();
	if (pid == 0)
		_exit(become_import_user(d) == 0 && rm_rf(work) == 0 ? 0 : 1);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	rmdir(work);
	rmdir(jobdir);
}

/* Forward the stage's progress; keep its config; an error ends the import with its reason.
 * The stage may only send PROGRESS, CONFIG and ERROR: a RESULT is the job's. */
static int
relay_stage(int in, int out, uint8_t **config, size_t *config_len, char *why, size_t size)
{
	uint8_t head[5];
	for (;;) {
		ssize_t n = read(in, head, sizeof head);
		if (n == 0)
			return *config ? 0 : -EIO;
		if (n != (ssize_t)sizeof head)
			return -EPROTO; /* pipe writes of 5 bytes are atomic */
		size_t len = head[1] | head[2] << 8 | (size_t)head[3] << 16 | (size_t)head[4] << 24;
		if (len > JOB_MSG_MAX || (head[0] != JOB_MSG_PROGRESS &&
					  head[0] != JOB_MSG_CONFIG && head[0] != JOB_MSG_ERROR))
			return -EPROTO;
		uint8_t *buf = malloc(len + 1);
		size_t got = 0;
		while (buf && got < len) {
			n = read(in, buf + got, len - got);
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		if (!buf || got < len) {
			free(buf);
			return -EPROTO;
		}
		if (head[0] == JOB_MSG_PROGRESS)
			job_msg_send(out, JOB_MSG_PROGRESS, buf, len);
		else if (head[0] == JOB_MSG_ERROR) {
			buf[len] = 0;
			snprintf(why, size, "%s", (char *)buf);
			free(buf);
			return -EINVAL;
		} else if (!*config) {
			*config = buf;
			*config_len = len;
			continue;
		}
		free(buf);
	}
}

static int
run_vm_image(const struct importd *d, const char *tdir, bool disk)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);
		dup2(devnull, 0);
		dup2(devnull, 1);
		if (d->agent)
			setenv("WARREN_AGENT", d->agent, 1);
		execlp(d->vm_image, d->vm_image, tdir, "--force", disk ? "--disk" : NULL,
		       (char *)NULL);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

static void
copy_progress(uint64_t done, void *ud)
{
	job_progress(*(int *)ud, D.job_name, "copying", done, 0);
}

static int
job_fail(int out, const char *dest_tmp, const char *fmt, const char *why)
{
	if (dest_tmp)
		rm_rf(dest_tmp);
	return job_error(out, fmt, why);
}

static int
open_beneath(int dirfd, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
	return fd < 0 ? -errno : fd;
}

/* The agent's mount point (/.warren/agent, an empty root-owned file), as warren-template-build
 * makes it: runsc cannot make a bind mount's point in the read-only tree, and without it a
 * gVisor sandbox runs the program without the agent (no envd API, exec -i/-t, cp). An image
 * that brings its own .warren keeps it (the spawner checks the point: a regular file reached
 * without a symlink), so nothing here follows or replaces what the image made. */
static void
agent_mountpoint(int rootfd, const char *name)
{
	int dfd = -1, fd = -1, r = 0;
	if (mkdirat(rootfd, ".warren", 0755) < 0 && errno != EEXIST)
		r = -errno;
	if (r == 0 && ((dfd = openat(rootfd, ".warren",
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
		       fchmod(dfd, 0755) < 0))
		r = -errno;
	if (r == 0 &&
	    (fd = openat(dfd, "agent", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			 0755)) < 0 &&
	    errno != EEXIST)
		r = -errno;
	if (r == 0 && fd >= 0 && fchmod(fd, 0755) < 0)
		r = -errno;
	safe_close(fd);
	safe_close(dfd);
	if (r < 0)
		log_warning_errno(r,
				  "Import %s: no agent mount point (/.warren/agent): %m; its "
				  "gVisor sandboxes run without the agent",
				  name);
}

static int
job_main(const struct importd *d, const Warren__V1__ImportTemplateRequest *q, int source_fd,
	 int out)
{
	char jobdir[PATH_MAX - 64], work[PATH_MAX], store[PATH_MAX], why[1024] = "";
	snprintf(jobdir, sizeof jobdir, "%s/job-%s.%d", d->staging_dir, q->name, (int)getpid());
	snprintf(work, sizeof work, "%s/work", jobdir);
	snprintf(store, sizeof store, "%s/store", d->staging_dir);
	/* the job directory is root's: the import user writes only its own work subtree */
	if (mkdir(jobdir, 0755) < 0 || mkdir(work, 0700) < 0 ||
	    chown(work, d->import_uid, d->import_gid) < 0)
		return job_error(out, "cannot make the staging directory %s: %m", jobdir);
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return job_error(out, "pipe: %m");
	pid_t stage = fork();
	if (stage < 0)
		return job_error(out, "fork: %m");
	if (stage == 0) {
		close(p[0]);
		close(out);
		if (become_import_user(d) < 0)
			_exit(job_error(p[1], "cannot become %s", d->import_user));
		struct rlimit fsize = {d->max_bytes, d->max_bytes};
		setrlimit(RLIMIT_FSIZE, &fsize);
		/* the source fd must survive the execs of skopeo (oci layouts are read through it)
		 */
		int fl = fcntl(source_fd, F_GETFD);
		fcntl(source_fd, F_SETFD, fl & ~FD_CLOEXEC);
		_exit(import_stage_run(d, work, store, source_fd, q->format, q->reference, q->name,
				       p[1]));
	}
	close(p[1]);
	close(source_fd);
	uint8_t *config = NULL;
	size_t config_len = 0;
	int r = relay_stage(p[0], out, &config, &config_len, why, sizeof why);
	close(p[0]);
	int status = 0;
	waitpid(stage, &status, 0);
	kill_import_user(d);
	if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		clean_staging(d, jobdir);
		free(config);
		return job_error(out, "%s", why[0] ? why : "the unpacker failed");
	}
	Warren__V1__ImportTemplateResponse *res =
		warren__v1__import_template_response__unpack(NULL, config_len, config);
	free(config);
	if (!res) {
		clean_staging(d, jobdir);
		return job_error(out, "the unpacker's answer does not decode");
	}
	/* the copy: from the stage's tree (opened beneath the root-owned job directory, no
	 * symlinks) into a fresh directory of root's */
	_cleanup_close_ int jfd = open(jobdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int src =
		jfd < 0 ? -EBADF : open_beneath(jfd, "work/bundle/rootfs", O_RDONLY | O_DIRECTORY);
	char tmpname[NAME_MAX], dest_tmp[PATH_MAX], dest[PATH_MAX - 64];
	snprintf(tmpname, sizeof tmpname, ".import-%s.%d", q->name, (int)getpid());
	snprintf(dest_tmp, sizeof dest_tmp, "%s/%s", d->templates_dir, tmpname);
	snprintf(dest, sizeof dest, "%s/%s", d->templates_dir, q->name);
	if (src < 0) {
		clean_staging(d, jobdir);
		return job_error(out, "the unpacked tree cannot be opened: %s", strerror(-src));
	}
	if (mkdirat(d->templates_fd, tmpname, 0700) < 0) {
		close(src);
		clean_staging(d, jobdir);
		return job_error(out, "cannot create %s: %m", dest_tmp);
	}
	_cleanup_close_ int tfd = open_beneath(d->templates_fd, tmpname, O_RDONLY | O_DIRECTORY);
	int rootfd = -1;
	if (tfd >= 0 && mkdirat(tfd, "rootfs", 0700) == 0)
		rootfd = open_beneath(tfd, "rootfs", O_RDONLY | O_DIRECTORY);
	if (rootfd < 0) {
		close(src);
		clean_staging(d, jobdir);
		return job_fail(out, dest_tmp, "cannot create the template directory: %s",
				strerror(errno));
	}
	struct import_counts c = {.max_bytes = d->max_bytes, .progress = copy_progress, .ud = &out};
	job_progress(out, q->name, "copying", 0, 0);
	r = import_copy_tree(src, rootfd, d->import_uid, &c, why, sizeof why);
	if (r >= 0)
		agent_mountpoint(rootfd, q->name);
	close(src);
	close(rootfd);
	clean_staging(d, jobdir);
	if (r < 0)
		return job_fail(out, dest_tmp, "the image was refused: %s", why);
	job_progress(out, q->name, "copying", c.bytes, c.bytes);
	/* importd's marker: RemoveImported removes only trees that carry it */
	int mfd = openat(tfd, IMPORT_MARKER, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			 0644);
	if (mfd < 0 || dprintf(mfd, "%s\n", res->digest ? res->digest : "") < 0) {
		safe_close(mfd);
		return job_fail(out, dest_tmp, "cannot write the marker: %s", strerror(errno));
	}
	close(mfd);
	if (fchmod(tfd, 0755) < 0 ||
	    renameat2(d->templates_fd, tmpname, d->templates_fd, q->name, RENAME_NOREPLACE) < 0)
		return job_fail(out, dest_tmp, "cannot put the template in place: %s",
				strerror(errno));
	if (q->vm_image) {
		job_progress(out, q->name, "vm-image", 0, 1);
		r = run_vm_image(d, dest, c.bytes > VM_DISK_ABOVE);
		if (r < 0)
			log_warning("Import %s: the microVM image was not built (%s); the "
				    "template runs on gVisor",
				    q->name, d->vm_image);
		job_progress(out, q->name, "vm-image", 1, 1);
	}
	char rootfs[PATH_MAX + 16];
	snprintf(rootfs, sizeof rootfs, "%s/rootfs", dest);
	res->rootfs = rootfs;
	res->bytes = c.bytes;
	res->files = c.files;
	res->dropped = c.dropped;
	res->modes_fixed = c.modes_fixed;
	size_t len = warren__v1__import_template_response__get_packed_size(res);
	uint8_t *buf = malloc(len ? len : 1);
	r = buf ? 0 : -ENOMEM;
	if (buf)
		warren__v1__import_template_response__pack(res, buf);
	if (r == 0)
		r = job_msg_send(out, JOB_MSG_RESULT, buf, len);
	free(buf);
	res->rootfs = NULL;
	warren__v1__import_template_response__free_unpacked(res, NULL);
	return r < 0 ? 1 : 0;
}

/* ---- importd's side of the job ------------------------------------------------------------ */

static void
job_finish(struct importd *d, int error, const char *why, Warren__V1__ImportTemplateResponse *res)
{
	if (d->job_ev) {
		event_free(d->job_ev);
		d->job_ev = NULL;
	}
	d->job_pipe = safe_close(d->job_pipe);
	if (d->job_pid > 0) {
		kill(d->job_pid, SIGKILL);
		waitpid(d->job_pid, NULL, 0);
		d->job_pid = 0;
	}
	if (d->job_call) {
		if (error)
			ipc_call_error(d->job_call, error, "%s", why);
		else {
			IpcResponse resp = WARREN__V1__RESPONSE__INIT;
			resp.body_case = WARREN__V1__RESPONSE__BODY_IMPORT_TEMPLATE;
			resp.import_template = res;
			ipc_call_reply(d->job_call, &resp, NULL, 0);
		}
		ipc_call_free(d->job_call);
		d->job_call = NULL;
	}
	if (error)
		log_warning("Import %s failed: %s", d->job_name, why);
	else
		log_info("Template %s imported: %s, %u entries, %llu bytes, %u left out, %u "
			 "modes fixed",
			 d->job_name, res->rootfs, res->files, (unsigned long long)res->bytes,
			 res->dropped, res->modes_fixed);
	free(d->job_buf);
	d->job_buf = NULL;
	d->job_len = 0;
}

/* Messages from the job: progress becomes an event for every peer, the result the answer. */
static void
job_readable(evutil_socket_t fd, short what, void *arg)
{
	struct importd *d = arg;
	uint8_t chunk[8192];
	ssize_t n = read(fd, chunk, sizeof chunk);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		job_finish(d, -EIO, "the import ended without a result", NULL);
		return;
	}
	uint8_t *nb = realloc(d->job_buf, d->job_len + (size_t)n);
	if (!nb) {
		job_finish(d, -ENOMEM, "out of memory", NULL);
		return;
	}
	d->job_buf = nb;
	memcpy(d->job_buf + d->job_len, chunk, (size_t)n);
	d->job_len += (size_t)n;
	while (d->job_len >= 5) {
		uint8_t *h = d->job_buf;
		size_t len = h[1] | h[2] << 8 | (size_t)h[3] << 16 | (size_t)h[4] << 24;
		if (len > JOB_MSG_MAX) {
			job_finish(d, -EPROTO, "the import job sent garbage", NULL);
			return;
		}
		if (d->job_len < 5 + len)
			return;
		int kind = h[0];
		if (kind == JOB_MSG_PROGRESS) {
			Warren__V1__ImportProgressEvent *ev =
				warren__v1__import_progress_event__unpack(NULL, len, h + 5);
			if (ev && ev->name && !strcmp(ev->name, d->job_name) && ev->phase &&
			    string_valid(ev->phase, 32)) {
				IpcResponse resp = WARREN__V1__RESPONSE__INIT;
				resp.body_case = WARREN__V1__RESPONSE__BODY_IMPORT_PROGRESS;
				resp.import_progress = ev;
				ipc_server_broadcast(d->server, &resp);
			}
			if (ev)
				warren__v1__import_progress_event__free_unpacked(ev, NULL);
		} else if (kind == JOB_MSG_ERROR) {
			char why[1100];
			snprintf(why, sizeof why, "%.*s", (int)(len > 1024 ? 1024 : len),
				 (char *)h + 5);
			for (char *c = why; *c; c++)
				if ((unsigned char)*c < 0x20 || *c == 0x7f)
					*c = ' ';
			job_finish(d, -EINVAL, why, NULL);
			return;
		} else if (kind == JOB_MSG_RESULT) {
			Warren__V1__ImportTemplateResponse *res =
				warren__v1__import_template_response__unpack(NULL, len, h + 5);
			if (!res)
				job_finish(d, -EPROTO, "the import's result does not decode", NULL);
			else {
				job_finish(d, 0, NULL, res);
				warren__v1__import_template_response__free_unpacked(res, NULL);
			}
			return;
		} else {
			job_finish(d, -EPROTO, "the import job sent garbage", NULL);
			return;
		}
		memmove(d->job_buf, d->job_buf + 5 + len, d->job_len - 5 - len);
		d->job_len -= 5 + len;
	}
}

static bool
reference_valid(const char *s)
{
	size_t n = strlen(s);
	return n <= IMPORT_REF_MAX &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-") == n;
}

static int
handle_import(struct ipc_call *call, void *ud)
{
	struct importd *d = ud;
	const Warren__V1__ImportTemplateRequest *q = call->req->import_template;
	/* from the supervisor, which may be compromised: every field checked here */
	if (!q || !q->name || !template_name_valid(q->name) || !q->format || !q->reference ||
	    !reference_valid(q->reference) ||
	    (strcmp(q->format, "oci") && strcmp(q->format, "oci-archive") &&
	     strcmp(q->format, "docker-archive")))
		return ipc_call_violation(call, -EINVAL, "bad import request");
	struct stat st;
	if (fstat(call->fds[0], &st) < 0 ||
	    (!strcmp(q->format, "oci") ? !S_ISDIR(st.st_mode)
				       : !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))))
		return ipc_call_error(call, -EINVAL,
				      "the source must be a directory for oci and a regular file "
				      "or a pipe for an archive");
	if (d->job_call)
		return ipc_call_error(call, -EBUSY,
				      "another import (%s) is running; try again "
				      "when it is done",
				      d->job_name);
	if (faccessat(d->templates_fd, q->name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return ipc_call_error(call, -EEXIST, "%s/%s exists already", d->templates_dir,
				      q->name);
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return ipc_call_error(call, -errno, "pipe: %m");
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return ipc_call_error(call, -errno, "fork: %m");
	}
	if (pid == 0) {
		close(p[0]);
		int fl = fcntl(p[1], F_GETFL);
		fcntl(p[1], F_SETFL, fl & ~O_NONBLOCK);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		snprintf(D.job_name, sizeof D.job_name, "%s", q->name);
		_exit(job_main(d, q, call->fds[0], p[1]));
	}
	close(p[1]);
	snprintf(d->job_name, sizeof d->job_name, "%s", q->name);
	d->job_pid = pid;
	d->job_pipe = p[0];
	d->job_ev = event_new(d->dc.base, p[0], EV_READ | EV_PERSIST, job_readable, d);
	event_add(d->job_ev, NULL);
	d->job_call = ipc_call_defer(call);
	log_info("Importing %s (%s%s%s)", q->name, q->format, q->reference[0] ? ":" : "",
		 q->reference);
	return IPC_DEFER;
}

static int
handle_remove(struct ipc_call *call, void *ud)
{
	struct importd *d = ud;
	const Warren__V1__RemoveImportedRequest *q = call->req->remove_imported;
	if (!q || !q->name || !template_name_valid(q->name))
		return ipc_call_violation(call, -EINVAL, "bad remove request");
	if (d->job_call && !strcmp(d->job_name, q->name))
		return ipc_call_error(call, -EBUSY, "%s is being imported", q->name);
	_cleanup_close_ int tfd = open_beneath(d->templates_fd, q->name, O_RDONLY | O_DIRECTORY);
	if (tfd < 0)
		return ipc_call_error(call, tfd, "no imported template %s", q->name);
	struct stat st;
	if (fstatat(tfd, IMPORT_MARKER, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != 0)
		return ipc_call_error(call, -EPERM, "%s/%s was not made by an import",
				      d->templates_dir, q->name);
	/* out of the way first (a new import of the name may start at once), then removed */
	char gone[NAME_MAX], path[PATH_MAX];
	snprintf(gone, sizeof gone, ".remove-%s.%d", q->name, (int)getpid());
	if (renameat(d->templates_fd, q->name, d->templates_fd, gone) < 0)
		return ipc_call_error(call, -errno, "cannot remove %s: %m", q->name);
	snprintf(path, sizeof path, "%s/%s", d->templates_dir, gone);
	int r = rm_rf(path);
	if (r < 0)
		log_warning_errno(r, "Removing %s: %m", path);
	log_info("Imported template %s removed", q->name);
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	return ipc_call_reply(call, &resp, NULL, 0);
}

static int
handle_status(struct ipc_call *call, void *ud)
{
	Warren__V1__StatusResponse st;
	ipc_status_init(&st, "importd", true);
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_STATUS;
	resp.status = &st;
	return ipc_call_reply(call, &resp, NULL, 0);
}

static const struct ipc_handler handlers[] = {
	{WARREN__V1__REQUEST__BODY_STATUS, 0, 0, handle_status},
	{WARREN__V1__REQUEST__BODY_IMPORT_TEMPLATE, 1, IPC_NEEDS_READY, handle_import},
	{WARREN__V1__REQUEST__BODY_REMOVE_IMPORTED, 0, IPC_NEEDS_READY, handle_remove},
};

/* A directory of root's that no one else may write (the templates directory, the staging
 * base): what importd writes beneath it cannot be swapped by another user. */
static int
dir_check(const char *path, int mode, bool create)
{
	if (create)
		mkdir(path, (mode_t)mode);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return log_error_errno(-errno, "%s: %m", path);
	if (st.st_uid != 0 || (st.st_mode & 022)) {
		close(fd);
		return log_error_errno(-EPERM, "%s must be root's and writable by root only", path);
	}
	return fd;
}

int
main(int argc, char **argv)
{
	struct importd *d = &D;
	daemon_common_init(&d->dc, "importd");
	d->templates_dir = "/var/lib/warren/templates";
	d->staging_dir = "/var/lib/warren/import";
	d->import_user = importd_user;
	d->skopeo = "/usr/bin/skopeo";
	d->umoci = "/usr/bin/umoci";
	d->vm_image = "warren-vm-image";
	d->max_bytes = IMPORTD_MAX_BYTES_DEFAULT;
	d->job_pipe = -1;
	static const struct option opts[] = {{"templates-dir", required_argument, NULL, 't'},
					     {"staging-dir", required_argument, NULL, 's'},
					     {"import-user", required_argument, NULL, 'u'},
					     {"skopeo", required_argument, NULL, 'S'},
					     {"umoci", required_argument, NULL, 'U'},
					     {"vm-image", required_argument, NULL, 'v'},
					     {"agent", required_argument, NULL, 'a'},
					     {"max-bytes", required_argument, NULL, 'm'},
					     {"help", no_argument, NULL, 'h'},
					     DAEMON_COMMON_OPTIONS,
					     {}};
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		int r = daemon_common_option(&d->dc, c, optarg);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		switch (c) {
		case 't':
			d->templates_dir = optarg;
			break;
		case 's':
			d->staging_dir = optarg;
			break;
		case 'u':
			d->import_user = optarg;
			break;
		case 'S':
			d->skopeo = optarg;
			break;
		case 'U':
			d->umoci = optarg;
			break;
		case 'v':
			d->vm_image = optarg;
			break;
		case 'a':
			d->agent = optarg;
			break;
		case 'm':
			d->max_bytes = strtoull(optarg, NULL, 10) << 20;
			break;
		default:
			printf("Usage: warren-importd [OPTIONS]\n"
			       "  --templates-dir DIR  where imported trees go "
			       "(/var/lib/warren/templates)\n"
			       "  --staging-dir DIR    root's; the import user's work directories "
			       "(/var/lib/warren/import)\n"
			       "  --import-user USER   the unprivileged unpacker (warren-import)\n"
			       "  --skopeo PATH, --umoci PATH, --vm-image CMD, --agent PATH\n"
			       "  --max-bytes MIB      largest source and unpacked tree "
			       "(4096)\n" DAEMON_COMMON_HELP);
			return c == 'h' ? 0 : 2;
		}
	}
	if (geteuid() != 0)
		return log_error_errno(-EPERM, "warren-importd runs as root (its trees must be "
					       "root's)"),
		       1;
	char agent[PATH_MAX];
	if (!d->agent) {
		/* next to this binary, as installed (libexec/warren) */
		ssize_t n = readlink("/proc/self/exe", agent, sizeof agent - 20);
		if (n > 0) {
			agent[n] = 0;
			char *slash = strrchr(agent, '/');
			strcpy(slash ? slash + 1 : agent, "warren-agent");
			d->agent = agent;
		}
	}
	if (privdrop_lookup_user(d->import_user, &d->import_uid, &d->import_gid) < 0 ||
	    d->import_uid == 0)
		return log_error_errno(-ENOENT,
				       "No unprivileged user %s (scripts/setup.sh makes it)",
				       d->import_user),
		       1;
	d->templates_fd = dir_check(d->templates_dir, 0755, false);
	/* 0711: the import user may pass through to its work directory, list nothing */
	d->staging_fd = dir_check(d->staging_dir, 0711, true);
	if (d->templates_fd < 0 || d->staging_fd < 0)
		return 1;
	fchmod(d->staging_fd, 0711);
	/* the blob store, shared by digest between imports: the import user's */
	if (mkdirat(d->staging_fd, "store", 0700) < 0 && errno != EEXIST)
		return log_error_errno(-errno, "%s/store: %m", d->staging_dir), 1;
	if (fchownat(d->staging_fd, "store", d->import_uid, d->import_gid, AT_SYMLINK_NOFOLLOW) < 0)
		return log_error_errno(-errno, "%s/store: %m", d->staging_dir), 1;
	d->dc.base = event_base_new();
	int lfd = daemon_listen(&d->dc);
	if (lfd < 0)
		return 1;
	if (privdrop_apply(NULL, importd_caps, importd_n_caps) < 0)
		return log_error("Cannot drop to importd's capabilities"), 1;
	struct ipc_server_config cfg = {.name = "importd",
					.table = handlers,
					.n_table = ELEMENTSOF(handlers),
					.allowed_uids = d->dc.peer_uids,
					.n_allowed_uids = d->dc.n_peer_uids,
					.drop_on_violation = true,
					.userdata = d};
	d->server = ipc_server_new(d->dc.base, lfd, &cfg);
	ipc_server_set_ready(d->server, true);
	notify_send("READY=1");
	log_info("Ready, templates %s, staging %s, unpacking as %s", d->templates_dir,
		 d->staging_dir, d->import_user);
	daemon_run(&d->dc);
	if (d->job_pid > 0)
		kill(d->job_pid, SIGKILL);
	ipc_server_free(d->server);
	return 0;
}
