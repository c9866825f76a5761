/* snapshotd's request table. Requests come only from the supervisor (SO_PEERCRED at accept),
 * which may be compromised: every handler checks every field of its request before it acts
 * (tags and temporary names in the store's alphabet, ids, backends, bounded strings; no request
 * carries fds, which the table's count of 0 enforces), and any field no honest supervisor sends
 * closes the peer (ipc_call_violation). What an honest supervisor may get wrong (an absent tag,
 * a tag that exists) is an error reply. */
#include "backend.h"
#include "image-header.h"
#include "names.h"
#include "snapshotd.h"

#include <string.h>
#include <unistd.h>

/* The longest string any snapshotd request needs (a zswap compressor name is the only free one). */
#define COMPRESSOR_MAX 32

static bool
compressor_valid(const char *c)
{
	return string_valid(c, COMPRESSOR_MAX) &&
	       strspn(c, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(c);
}

/* The temporary directory of a commit was prepared for that very tag. */
static bool
temp_matches_tag(const char *temp, const char *tag)
{
	size_t n = strlen(tag);
	return image_temp_name_valid(temp) && !strncmp(temp + 5, tag, n) && temp[5 + n] == '.' &&
	       strlen(temp + 5 + n) == 9;
}

/* Every field of a request, by body: NULL when it may be acted on, else what is wrong. A
 * missing body (a oneof case with no message) is wrong for every request. */
const char *
snapshotd_request_invalid(const IpcRequest *req)
{
	switch (req->body_case) {
	case WARREN__V1__REQUEST__BODY_STATUS:
	case WARREN__V1__REQUEST__BODY_LIST_IMAGES:
		return NULL;
	case WARREN__V1__REQUEST__BODY_RECLAIM:
		return !req->reclaim || !sandbox_id_valid(req->reclaim->id) ? "bad sandbox id"
									    : NULL;
	case WARREN__V1__REQUEST__BODY_SETUP_RECLAIM:
		if (!req->setup_reclaim || !compressor_valid(req->setup_reclaim->compressor))
			return "bad zswap compressor name";
		return req->setup_reclaim->max_pool_percent > 100 ? "pool percent above 100" : NULL;
	case WARREN__V1__REQUEST__BODY_PREPARE_IMAGE:
		return !req->prepare_image || !tag_name_valid(req->prepare_image->tag) ? "bad tag"
										       : NULL;
	case WARREN__V1__REQUEST__BODY_COMMIT_IMAGE: {
		const Warren__V1__CommitImageRequest *q = req->commit_image;
		if (!q || !tag_name_valid(q->tag))
			return "bad tag";
		if (!temp_matches_tag(q->temp_name, q->tag))
			return "bad temporary name";
		if (q->parent[0] && !sandbox_id_valid(q->parent))
			return "bad parent id";
		if (q->template_name[0] && !template_name_valid(q->template_name))
			return "bad template name";
		if (!backend_valid(q->backend))
			return "bad backend"; /* a number outside the enum */
		return compression_valid(q->compression) ? NULL : "bad compression"; /* likewise */
	}
	case WARREN__V1__REQUEST__BODY_OPEN_IMAGE:
		return !req->open_image || !tag_name_valid(req->open_image->tag) ? "bad tag" : NULL;
	case WARREN__V1__REQUEST__BODY_REMOVE_IMAGE:
		return !req->remove_image || !tag_name_valid(req->remove_image->tag) ? "bad tag"
										     : NULL;
	case WARREN__V1__REQUEST__BODY_ABORT_IMAGE:
		return !req->abort_image || !image_temp_name_valid(req->abort_image->temp_name)
			       ? "bad temporary name"
			       : NULL;
	default:
		return "request not served here";
	}
}

/* First thing in every handler. */
#define REQUEST_CHECK(call)                                                                        \
	do {                                                                                       \
		const char *why_ = snapshotd_request_invalid((call)->req);                         \
		if (why_)                                                                          \
			return ipc_call_violation((call), -EINVAL, why_);                          \
	} while (0)

static int
handle_status(struct ipc_call *call, void *ud)
{
	REQUEST_CHECK(call);
	Warren__V1__StatusResponse st;
	ipc_status_init(&st, "snapshotd", true);
	return ipc_call_reply_status(call, &st);
}

static int
handle_list_images(struct ipc_call *call, void *ud)
{
	REQUEST_CHECK(call);
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
	REQUEST_CHECK(call);
	return reclaim_start(ud, call);
}

static int
handle_setup_reclaim(struct ipc_call *call, void *ud)
{
	REQUEST_CHECK(call);
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
	REQUEST_CHECK(call);
	char temp[128], why[300];
	int dirfd = -1;
	const char *id = call->req->prepare_image->sandbox_id;
	int r = store_space_check(ud, id ? id : "", why, sizeof why);
	if (r < 0)
		return ipc_call_error(call, r, "%s", why);
	r = image_prepare(ud, call->req->prepare_image->tag, temp, sizeof temp, &dirfd);
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
	REQUEST_CHECK(call);
	const Warren__V1__CommitImageRequest *q = call->req->commit_image;
	uint64_t total = 0;
	int r = image_commit(ud, q, &total);
	if (r < 0)
		return ipc_call_error(call, r, "cannot commit image %s: %s", q->tag, strerror(-r));
	Warren__V1__ImageInfo info;
	r = image_read(ud, q->tag, false, &info, NULL);
	if (r < 0) {
		image_info_free(&info);
		return ipc_call_error(call, r, "image %s committed but unreadable: %s", q->tag,
				      strerror(-r));
	}
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
	REQUEST_CHECK(call);
	const char *tag = call->req->open_image->tag;
	Warren__V1__ImageInfo info;
	int dirfd = -1;
	int r = image_read(ud, tag, true, &info, &dirfd);
	if (r < 0) {
		image_info_free(&info);
		return ipc_call_error(call, r,
				      r == -EBADMSG ? "image %s is corrupt or truncated"
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
	REQUEST_CHECK(call);
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
	REQUEST_CHECK(call);
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
