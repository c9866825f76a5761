/* snapshotd's request table. Requests come only from the supervisor (SO_PEERCRED at accept);
 * any protocol violation closes the peer. */
#include "snapshotd.h"

#include <string.h>
#include <unistd.h>

static int
handle_status(struct ipc_call *call, void *ud)
{
	Warren__V1__StatusResponse st;
	ipc_status_init(&st, "snapshotd", true);
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_STATUS;
	resp.status = &st;
	return ipc_call_reply(call, &resp, NULL, 0);
}

static int
handle_list_images(struct ipc_call *call, void *ud)
{
	struct snapshotd *s = ud;
	Warren__V1__ListImagesResponse lr;
	int r = store_list(s, &lr);
	if (r < 0)
		return r;
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_LIST_IMAGES;
	resp.list_images = &lr;
	r = ipc_call_reply(call, &resp, NULL, 0);
	store_list_free(&lr);
	return r;
}

static int
handle_reclaim(struct ipc_call *call, void *ud)
{
	return reclaim_start(ud, call);
}

static int
handle_setup_reclaim(struct ipc_call *call, void *ud)
{
	Warren__V1__SetupReclaimResponse out;
	char err[256] = "";
	int r = reclaim_setup(ud, call->req->setup_reclaim, &out, err, sizeof err);
	if (r < 0)
		return ipc_call_error(call, r, "%s", err[0] ? err : strerror(-r));
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_SETUP_RECLAIM;
	resp.setup_reclaim = &out;
	return ipc_call_reply(call, &resp, NULL, 0);
}

static int
handle_prepare_image(struct ipc_call *call, void *ud)
{
	char temp[128];
	int dirfd = -1;
	int r = image_prepare(ud, call->req->prepare_image->tag, temp, sizeof temp, &dirfd);
	if (r < 0)
		return ipc_call_error(call, r, "cannot prepare image %s: %s",
				      call->req->prepare_image->tag, strerror(-r));
	Warren__V1__PrepareImageResponse pr = WARREN__V1__PREPARE_IMAGE_RESPONSE__INIT;
	pr.temp_name = temp;
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_PREPARE_IMAGE;
	resp.prepare_image = &pr;
	r = ipc_call_reply(call, &resp, &dirfd, 1);
	close(dirfd);
	return r;
}

static int
handle_commit_image(struct ipc_call *call, void *ud)
{
	const Warren__V1__CommitImageRequest *q = call->req->commit_image;
	uint64_t total = 0;
	int r = image_commit(ud, q, &total);
	if (r < 0)
		return ipc_call_error(call, r, "cannot commit image %s: %s", q->tag, strerror(-r));
	Warren__V1__ImageInfo info;
	r = image_read(ud, q->tag, false, &info, NULL);
	Warren__V1__CommitImageResponse cr = WARREN__V1__COMMIT_IMAGE_RESPONSE__INIT;
	cr.image = &info;
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_COMMIT_IMAGE;
	resp.commit_image = &cr;
	r = ipc_call_reply(call, &resp, NULL, 0);
	image_info_free(&info);
	return r;
}

static int
handle_open_image(struct ipc_call *call, void *ud)
{
	const char *tag = call->req->open_image->tag;
	Warren__V1__ImageInfo info;
	int dirfd = -1;
	int r = image_read(ud, tag, true, &info, &dirfd);
	if (r < 0) {
		image_info_free(&info);
		return ipc_call_error(call, r, r == -EBADMSG ? "image %s is corrupt or truncated"
							      : "no image %s: %s",
				      tag, strerror(-r));
	}
	if (info.compressed) {
		/* restores need plain files: the first open decompresses into the cache */
		int cfd = -1;
		r = image_decompressed(ud, tag, dirfd, &cfd);
		close(dirfd);
		if (r < 0) {
			image_info_free(&info);
			return ipc_call_error(call, r, "image %s cannot be decompressed: %s", tag,
					      strerror(-r));
		}
		dirfd = cfd;
	}
	Warren__V1__OpenImageResponse orsp = WARREN__V1__OPEN_IMAGE_RESPONSE__INIT;
	orsp.image = &info;
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_OPEN_IMAGE;
	resp.open_image = &orsp;
	r = ipc_call_reply(call, &resp, &dirfd, 1);
	close(dirfd);
	image_info_free(&info);
	return r;
}

static int
handle_remove_image(struct ipc_call *call, void *ud)
{
	int r = image_remove(ud, call->req->remove_image->tag);
	if (r < 0)
		return ipc_call_error(call, r, "cannot remove image %s: %s",
				      call->req->remove_image->tag, strerror(-r));
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	return ipc_call_reply(call, &resp, NULL, 0);
}

static int
handle_abort_image(struct ipc_call *call, void *ud)
{
	int r = image_abort(ud, call->req->abort_image->temp_name);
	if (r < 0)
		return ipc_call_error(call, r, "cannot drop %s", call->req->abort_image->temp_name);
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	return ipc_call_reply(call, &resp, NULL, 0);
}

const struct ipc_handler snapshotd_handlers[] = {
	{WARREN__V1__REQUEST__BODY_STATUS, 0, 0, handle_status},
	{WARREN__V1__REQUEST__BODY_LIST_IMAGES, 0, IPC_NEEDS_READY, handle_list_images},
	{WARREN__V1__REQUEST__BODY_RECLAIM, 0, IPC_NEEDS_READY, handle_reclaim},
	{WARREN__V1__REQUEST__BODY_SETUP_RECLAIM, 0, IPC_NEEDS_READY, handle_setup_reclaim},
	{WARREN__V1__REQUEST__BODY_PREPARE_IMAGE, 0, IPC_NEEDS_READY, handle_prepare_image},
	{WARREN__V1__REQUEST__BODY_COMMIT_IMAGE, 0, IPC_NEEDS_READY, handle_commit_image},
	{WARREN__V1__REQUEST__BODY_OPEN_IMAGE, 0, IPC_NEEDS_READY, handle_open_image},
	{WARREN__V1__REQUEST__BODY_REMOVE_IMAGE, 0, IPC_NEEDS_READY, handle_remove_image},
	{WARREN__V1__REQUEST__BODY_ABORT_IMAGE, 0, IPC_NEEDS_READY, handle_abort_image},
};
const unsigned snapshotd_n_handlers = sizeof snapshotd_handlers / sizeof snapshotd_handlers[0];
