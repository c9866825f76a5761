/* Snapshots on gVisor (supervisor): Snapshot(tag) checkpoints a running sandbox into a tag
 * image through snapshotd and netnsd and restores the parent from the image just written (this
 * runsc's checkpoint stops the container and --leave-running is broken); ForkTag(tag, count)
 * restores count children side by side from the one image, each in its own slot (a restore
 * takes the address of the namespace it lands in); BranchSandbox is both; ListTags and
 * RemoveTag manage the images. A microVM is snapshotted without stopping for good: its VMM
 * pauses, writes its state and RAM and resumes in place (netnsd says so: still_running).
 * This file is the feature: the D-Bus methods that call it are in manager-dbus.c (ForkTag,
 * BranchSandbox, ListTags, RemoveTag) and sandbox-dbus.c (Snapshot). */
#include "fault.h"
#include "clock.h"
#include "log.h"
#include "netnsd-client.h"
#include "snapshotd-client.h"
#include "macro.h"
#include "exec.h"
#include "logs.h"
#include "metrics.h"
#include "owner.h"
#include "sandbox-egress.h"
#include "snapshot.h"
#include "supervisor.h"
#include "warm.h"

#include <stdio.h>
#include <string.h>

/* Long operations report progress as Manager.Progress(operation, tag, phase, done, total)
 * signals, which warrenctl shows while it waits. */
static void
progress(const char *operation, const char *tag, const char *phase, unsigned done, unsigned total)
{
	sd_bus_emit_signal(sup->bus, MANAGER_PATH, MANAGER_IFACE, "Progress", "sssuu", operation,
			   tag, phase, done, total);
}

/* Ask snapshotd to verify and open a tag's image; cb gets its directory fd. */
int
image_open_call(const char *tag, unsigned timeout_ms, ipc_reply_fn cb, void *ud)
{
	Warren__V1__OpenImageRequest q = WARREN__V1__OPEN_IMAGE_REQUEST__INIT;
	q.tag = (char *)tag;
	return snapshotd_client_open_image(&q, timeout_ms, cb, ud);
}

int
image_remove_call(const char *tag, ipc_reply_fn cb, void *ud)
{
	Warren__V1__RemoveImageRequest q = WARREN__V1__REMOVE_IMAGE_REQUEST__INIT;
	q.tag = (char *)tag;
	return snapshotd_client_remove_image(&q, 60000, cb, ud);
}

/* ---- fork jobs: count children from one image ---- */

struct fork_job {
	struct operation *op; /* ForkTag or BranchSandbox; NULL: nobody waits */
	char tag[33];
	unsigned pending, count;
	char **ids;
	unsigned n_ids;
	char error[256];
	int image_fd;
	uint64_t t0; /* monotonic, for the fork latency metric */
	struct fork_job *next;
};

/* Fork jobs under way: from ForkTag until every child answered. RemoveTag asks it. */
static struct fork_job *fork_jobs;

static void
fork_job_finish(struct fork_job *j)
{
	if (j->op) {
		if (j->n_ids == 0) {
			operation_error(&j->op, ERR("SpawnFailed"), "No child of %s started: %s",
					j->tag, j->error);
		} else {
			j->ids[j->n_ids] = NULL;
			metrics_fork_done(j->t0);
			sd_bus_message *reply = NULL;
			if (operation_new_return(j->op, &reply) >= 0 &&
			    sd_bus_message_append_strv(reply, j->ids) >= 0)
				operation_send(&j->op, reply);
			sd_bus_message_unref(reply);
		}
		operation_cancel(&j->op); /* the answer could not be built or sent */
	}
	for (unsigned i = 0; i < j->n_ids; i++)
		free(j->ids[i]);
	free(j->ids);
	safe_close(j->image_fd);
	for (struct fork_job **p = &fork_jobs; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			break;
		}
	free(j);
}

/* Called by sandbox.c when a child's create answered (ok: route set, restore under way). */
void
fork_job_child_done(struct fork_job *j, const char *id, bool ok, const char *error)
{
	char *copy = ok ? strdup(id) : NULL;
	if (ok && !copy) {
		/* it runs, but the answer cannot name it: it is reported as failed */
		log_error("Fork of %s: out of memory, child %s is not reported", j->tag, id);
		snprintf(j->error, sizeof j->error, "out of memory");
	} else if (ok) {
		j->ids[j->n_ids++] = copy;
		logs_owner_set(id, operation_message(j->op));
		sandbox_route_refresh(id);
	} else if (error)
		snprintf(j->error, sizeof j->error, "%s", error);
	progress("fork", j->tag, "children routed", j->count - j->pending + 1, j->count);
	if (--j->pending == 0)
		fork_job_finish(j);
}

static void
fork_open_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct fork_job *j = ud;
	if (r < 0 || !resp || resp->body_case != WARREN__V1__RESPONSE__BODY_OPEN_IMAGE ||
	    n_fds != 1) {
		ipc_close_fds(fds, n_fds);
		snprintf(j->error, sizeof j->error, "%s", helper_message(resp, strerror(-r)));
		fork_job_finish(j);
		return;
	}
	j->image_fd = fds[0];
	struct template *t = template_find(sup, resp->open_image->image->template_name);
	if (!t) {
		snprintf(j->error, sizeof j->error, "the tag's template %s is gone",
			 resp->open_image->image->template_name);
		fork_job_finish(j);
		return;
	}
	j->pending = j->count;
	progress("fork", j->tag, "image verified", 0, j->count);
	for (unsigned i = 0; i < j->count; i++) {
		sd_bus_error e = SD_BUS_ERROR_NULL;
		char step[32];
		snprintf(step, sizeof step, "fork-child-%u", i + 1);
		fault_point(step);
		if (sandbox_create_from_image(sup, t,
					      backend_to_string(resp->open_image->image->backend),
					      j->image_fd, j->tag, j, &e) < 0)
			fork_job_child_done(j, NULL, false, e.message);
		sd_bus_error_free(&e);
	}
}

static void
pool_reserve_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	ipc_close_fds(fds, n_fds);
	if (r == 0 && resp && resp->body_case == WARREN__V1__RESPONSE__BODY_POOL_RESERVE)
		log_debug("netnsd builds ahead for %u creates (up to %u slots)",
			  resp->pool_reserve->reserved, resp->pool_reserve->target);
}

/* Tell netnsd count creates are coming, so a growing pool builds their slots while snapshotd
 * verifies the image rather than a batch at a time behind the claims. Advisory: without an
 * answer (netnsd down, an older netnsd) the claims work as they always did. */
static void
pool_reserve_ahead(unsigned count)
{
	Warren__V1__PoolReserveRequest q = WARREN__V1__POOL_RESERVE_REQUEST__INIT;
	q.count = count;
	if (netnsd_client_pool_reserve(&q, 5000, pool_reserve_done, NULL) < 0)
		log_debug("Fork of %u: netnsd not connected, no slots reserved", count);
}

int
fork_start(struct operation **op, const char *tag, unsigned count)
{
	struct fork_job *j = calloc(1, sizeof *j);
	if (!j)
		return -ENOMEM;
	j->ids = calloc(count + 1, sizeof *j->ids);
	if (!j->ids) {
		free(j);
		return -ENOMEM;
	}
	j->op = *op; /* taken; given back below when the fork cannot start */
	*op = NULL;
	snprintf(j->tag, sizeof j->tag, "%s", tag);
	j->count = count;
	j->image_fd = -1;
	j->t0 = now_usec();
	j->next = fork_jobs;
	fork_jobs = j;
	/* a single child finds a spare slot; more would wait for the pool to grow */
	if (count > 1)
		pool_reserve_ahead(count);
	int r = image_open_call(tag, 60000, fork_open_done, j);
	if (r < 0) {
		*op = TAKE_PTR(j->op); /* the caller answers */
		fork_job_finish(j);
	}
	return r;
}

/* ---- snapshot of a running sandbox ---- */

struct snap {
	char id[SANDBOX_ID_LEN + 1];
	char tag[33];
	char temp[128];
	struct operation *op; /* NULL: a warm template's image, nobody waits */
	unsigned fork_count;  /* BranchSandbox: children to fork once the image is sealed */
	bool discard_parent;  /* a warm template's image: the parent is not restored */
	bool still_running;   /* a microVM resumed in place: nothing to restore */
	uint64_t t0;
	uint64_t size;
};

static void
snap_reply_error(struct snap *sn, const char *name, const char *msg)
{
	operation_error(&sn->op, name, "Snapshot %s: %s", sn->tag, msg);
}

static void
snap_free(struct snap *sn)
{
	operation_cancel(&sn->op);
	free(sn);
}

static void
parent_restore_open_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct snap *sn = ud;
	struct sandbox *sb = sandbox_find(sup, sn->id);
	if (!sb) {
		ipc_close_fds(fds, n_fds);
		snap_free(sn);
		return;
	}
	if (r < 0 || n_fds != 1) {
		ipc_close_fds(fds, n_fds);
		sandbox_restore_failed(sb, helper_message(resp, strerror(-r)));
		snap_free(sn);
		return;
	}
	sandbox_restore(sb, fds[0], sn->tag, sn->t0);
	close(fds[0]);
	snap_free(sn);
}

static void
old_runtime_gone(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct snap *sn = ud;
	ipc_close_fds(fds, n_fds);
	if (image_open_call(sn->tag, 60000, parent_restore_open_done, sn) < 0)
		parent_restore_open_done(NULL, -ENOTCONN, NULL, 0, sn);
}

static void
commit_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct snap *sn = ud;
	ipc_close_fds(fds, n_fds);
	struct sandbox *sb = sandbox_find(sup, sn->id);
	if (r == 0 && resp && resp->body_case == WARREN__V1__RESPONSE__BODY_COMMIT_IMAGE) {
		sn->size = resp->commit_image->image->size;
		progress("snapshot", sn->tag, "sealed", 3, 3);
		metrics_snapshot_done(backend_to_string(sb ? sb->backend : BACKEND_GVISOR), sn->t0);
		if (sn->op)
			tag_owner_set(sn->tag, operation_message(sn->op));
		/* unknown (the sandbox went during the snapshot): its children get none */
		if (!sn->discard_parent)
			sandbox_egress_tag_record(sn->tag, sb ? sandbox_egress_of(sb) : "off");
		log_info("Sandbox %s: image %s sealed (%llu KiB) %llu ms after the pause began",
			 sn->id, sn->tag, (unsigned long long)(sn->size >> 10),
			 (unsigned long long)((now_usec() - sn->t0) / 1000));
		if (sn->fork_count) {
			/* BranchSandbox: when fork_start cannot ask snapshotd it leaves the
			 * operation here: answer it, or the caller waits forever */
			if (fork_start(&sn->op, sn->tag, sn->fork_count) < 0)
				snap_reply_error(sn, ERR("HelperUnavailable"),
						 "sealed, but snapshotd could not open it to fork");
		} else
			operation_return(&sn->op, "st", sn->tag, sn->size);
	} else
		snap_reply_error(sn, ERR("SnapshotFailed"), helper_message(resp, strerror(-r)));
	if (sn->discard_parent) {
		if (sb) {
			sb->warmer = false;
			warm_done(sb->template_name, backend_to_string(sb->backend), r == 0);
			sandbox_destroy(sb);
		}
		snap_free(sn);
		return;
	}
	if (!sb || sn->still_running) {
		snap_free(sn);
		return;
	}
	/* The parent goes on: its old runtime is cleaned up, then it is restored in its slot
	 * from the image just written. */
	Warren__V1__DestroySandboxRequest q = WARREN__V1__DESTROY_SANDBOX_REQUEST__INIT;
	q.id = sb->id;
	if (r < 0) {
		sandbox_restore_failed(sb, "its image could not be sealed");
		snap_free(sn);
		return;
	}
	if (netnsd_client_destroy_sandbox(&q, 60000, old_runtime_gone, sn) < 0)
		old_runtime_gone(NULL, -ENOTCONN, NULL, 0, sn);
}

static void
checkpoint_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct snap *sn = ud;
	ipc_close_fds(fds, n_fds);
	struct sandbox *sb = sandbox_find(sup, sn->id);
	if (r < 0) {
		char msg[300];
		snprintf(msg, sizeof msg, "checkpoint failed: %s",
			 helper_message(resp, strerror(-r)));
		Warren__V1__AbortImageRequest q = WARREN__V1__ABORT_IMAGE_REQUEST__INIT;
		q.temp_name = sn->temp;
		snapshotd_client_abort_image(&q, 10000, ipc_ignore_reply, NULL);
		snap_reply_error(sn, ERR("SnapshotFailed"), msg);
		/* a failed checkpoint kills the container in this runsc; a microVM resumes */
		if (sb && sb->backend == BACKEND_MICROVM)
			sandbox_snapshot_aborted(sb);
		else if (sb)
			sandbox_restore_failed(sb, msg);
		snap_free(sn);
		return;
	}
	progress("snapshot", sn->tag, "checkpointed", 2, 3);
	sn->still_running = resp &&
			    resp->body_case == WARREN__V1__RESPONSE__BODY_CHECKPOINT_SANDBOX &&
			    resp->checkpoint_sandbox->still_running;
	if (sn->still_running && sb && resp->checkpoint_sandbox->pid > 0)
		sb->pid = resp->checkpoint_sandbox->pid;
	if (sn->still_running && sb && !sn->discard_parent) {
		/* the parent answers again while the image is sealed */
		sb->last_pause_us = now_usec() - sn->t0; /* Timings.snapshot_pause_us */
		log_info("Sandbox %s: resumed in place %llu ms after the pause began", sb->id,
			 (unsigned long long)(sb->last_pause_us / 1000));
		sandbox_snapshot_aborted(sb);
	}
	Warren__V1__CommitImageRequest q = WARREN__V1__COMMIT_IMAGE_REQUEST__INIT;
	q.temp_name = sn->temp;
	q.tag = sn->tag;
	q.parent = sn->id;
	q.template_name = sb ? sb->template_name : "";
	q.backend = sb ? (Warren__V1__Backend)sb->backend : WARREN__V1__BACKEND__BACKEND_GVISOR;
	/* a warm template's image (warm.c) is read at every warm create: never compressed */
	q.compression = sn->discard_parent ? WARREN__V1__COMPRESSION__COMPRESSION_NONE
					   : WARREN__V1__COMPRESSION__COMPRESSION_AUTO;
	if (snapshotd_client_commit_image(&q, 120000, commit_done, sn) < 0)
		commit_done(NULL, -ENOTCONN, NULL, 0, sn);
}

static void
prepare_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct snap *sn = ud;
	struct sandbox *sb = sandbox_find(sup, sn->id);
	if (r < 0 || !resp || n_fds != 1 || !sb) {
		ipc_close_fds(fds, n_fds);
		snap_reply_error(sn, r == -EEXIST ? ERR("TagExists") : ERR("SnapshotFailed"),
				 helper_message(resp, strerror(-r)));
		if (sb)
			sandbox_snapshot_aborted(sb);
		snap_free(sn);
		return;
	}
	snprintf(sn->temp, sizeof sn->temp, "%s", resp->prepare_image->temp_name);
	Warren__V1__CheckpointSandboxRequest q = WARREN__V1__CHECKPOINT_SANDBOX_REQUEST__INIT;
	q.id = sb->id;
	/* gVisor: the spawner restores it in place before answering, so the sandbox runs again
	 * whatever becomes of the image (a seal that fails, snapshotd dying); a warm template's
	 * sandbox is dropped afterwards and stays stopped */
	q.resume = !sn->discard_parent;
	struct template *t = template_find(sup, sb->template_name);
	q.rootfs = t ? t->rootfs : "";
	sn->t0 = now_usec();
	progress("snapshot", sn->tag, "checkpointing", 1, 3);
	r = netnsd_client_checkpoint_sandbox(&q, fds, 1, 120000, checkpoint_done, sn);
	close(fds[0]);
	if (r < 0)
		checkpoint_done(NULL, r, NULL, 0, sn);
}

int
snapshot_start(struct sandbox *sb, sd_bus_message *m, const char *tag, unsigned fork_count,
	       bool discard_parent, sd_bus_error *err)
{
	if (!template_name_valid(tag))
		return sd_bus_error_setf(err, ERR("InvalidArgument"),
					 "Tag '%s' must be 1-32 of [a-z0-9_-]", tag);
	if (sb->state != SANDBOX_RUNNING)
		return sd_bus_error_setf(err, ERR("BadState"), "Sandbox %s is %s, not running",
					 sb->id, sandbox_state_to_string(sb->state));
	if (exec_running(sb))
		return sd_bus_error_setf(
			err, ERR("BadState"),
			"Sandbox %s runs an exec: a checkpoint would end it; snapshot "
			"it when the exec is done",
			sb->id);
	if (sb->nsfd < 0)
		return sd_bus_error_setf(
			err, ERR("BadState"),
			"Sandbox %s was re-adopted after a restart; Warren no longer "
			"holds its namespace and cannot restore it after a checkpoint",
			sb->id);
	struct snap *sn = calloc(1, sizeof *sn);
	if (!sn)
		return sd_bus_error_set_errno(err, ENOMEM);
	sn->op = operation_new(m);
	if (m && !sn->op) {
		free(sn);
		return sd_bus_error_set_errno(err, ENOMEM);
	}
	snprintf(sn->id, sizeof sn->id, "%s", sb->id);
	snprintf(sn->tag, sizeof sn->tag, "%s", tag);
	sn->fork_count = fork_count;
	sn->discard_parent = discard_parent;
	sandbox_snapshot_begin(sb);
	Warren__V1__PrepareImageRequest q = WARREN__V1__PREPARE_IMAGE_REQUEST__INIT;
	q.tag = (char *)tag;
	q.sandbox_id = sb->id; /* snapshotd refuses at once when the store has no room */
	if (snapshotd_client_prepare_image(&q, 10000, prepare_done, sn) < 0) {
		sandbox_snapshot_aborted(sb);
		snap_free(sn);
		return sd_bus_error_setf(err, ERR("HelperUnavailable"),
					 "snapshotd is not connected");
	}
	return 1;
}

/* ---- tags ---- */

/* RemoveTag's guard: the tag's image is not removed under a fork or a restore that reads it. */
int
tag_busy_check(const char *tag, sd_bus_error *err)
{
	/* An image is a directory: removing it empties it under a restore that holds its fd, and
	 * a sandbox holds that fd from its create (slot claim, route) until its runtime runs, not
	 * only while netnsd restores it; a fork holds it from before its children exist. */
	for (struct fork_job *j = fork_jobs; j; j = j->next)
		if (!strcmp(j->tag, tag))
			return sd_bus_error_setf(err, ERR("TagBusy"),
						 "A fork of %s is under way; try again once its "
						 "children run",
						 tag);
	for (struct sandbox *sb = sup->sandboxes; sb; sb = sb->next)
		if (sb->image_fd >= 0 && !strcmp(sb->restoring_tag, tag))
			return sd_bus_error_setf(err, ERR("TagBusy"),
						 "Sandbox %s is being restored from %s; try again "
						 "once it runs",
						 sb->id, tag);
	return 0;
}
