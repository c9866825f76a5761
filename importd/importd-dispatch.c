/* importd's requests (ImportTemplate, RemoveTemplate, ImportStatus): each checked here, the
 * side that holds the privilege; an import forks its job (import-job.c) and is answered when
 * the job's pipe says it is done. */
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
		snprintf(d->job_name, sizeof d->job_name, "%s", q->name);
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
	return ipc_call_reply_status(call, &st);
}

const struct ipc_handler importd_handlers[] = {
	{WARREN__V1__REQUEST__BODY_STATUS, 0, 0, handle_status},
	{WARREN__V1__REQUEST__BODY_IMPORT_TEMPLATE, 1, IPC_NEEDS_READY, handle_import},
	{WARREN__V1__REQUEST__BODY_REMOVE_IMPORTED, 0, IPC_NEEDS_READY, handle_remove},
};

/* A directory of root's that no one else may write (the templates directory, the staging
 * base): what importd writes beneath it cannot be swapped by another user. */
const size_t importd_n_handlers = sizeof importd_handlers / sizeof importd_handlers[0];
