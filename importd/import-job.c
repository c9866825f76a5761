/* The import job: a forked child of importd, root with importd's capabilities. It forks the
 * unprivileged stage (import-stage.c) and relays its messages, kills every process of the import
 * user, copies the unpacked tree into the templates directory as root's (import-copy.c), and runs
 * warren-vm-image on it; progress and the result go back to importd over a framed pipe. */
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

#define VM_DISK_ABOVE (96ull << 20) /* trees larger than this boot from a root disk */

/* the template being copied, for copy_progress (set by job_main: one job per process) */
static const char *copy_name = "";

static void
copy_progress(uint64_t done, void *ud)
{
	job_progress(*(int *)ud, copy_name, "copying", done, 0);
}

static int
job_fail(int out, const char *dest_tmp, const char *fmt, const char *why)
{
	if (dest_tmp)
		rm_rf(dest_tmp);
	return job_error(out, fmt, why);
}

int
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

int
job_main(const struct importd *d, const Warren__V1__ImportTemplateRequest *q, int source_fd,
	 int out)
{
	char jobdir[PATH_MAX - 64], work[PATH_MAX], store[PATH_MAX], why[1024] = "";
	copy_name = q->name;
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
