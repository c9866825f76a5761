/* snapshotd's request table. Requests come only from the supervisor (SO_PEERCRED at accept);
 * any protocol violation closes the peer. */
#include "snapshotd.h"

#include <string.h>

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

const struct ipc_handler snapshotd_handlers[] = {
	{WARREN__V1__REQUEST__BODY_STATUS, 0, 0, handle_status},
	{WARREN__V1__REQUEST__BODY_LIST_IMAGES, 0, IPC_NEEDS_READY, handle_list_images},
	{WARREN__V1__REQUEST__BODY_RECLAIM, 0, IPC_NEEDS_READY, handle_reclaim},
	{WARREN__V1__REQUEST__BODY_SETUP_RECLAIM, 0, IPC_NEEDS_READY, handle_setup_reclaim},
};
const unsigned snapshotd_n_handlers = sizeof snapshotd_handlers / sizeof snapshotd_handlers[0];
