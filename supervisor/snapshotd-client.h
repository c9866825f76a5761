/* The supervisor's typed client of warren-snapshotd: one function per request snapshotd serves
 * (docs/PROTOCOL.md). Each builds the envelope and sends it on snapshotd's link (helper-client.c);
 * the caller fills the request body and gets the reply in cb. -ENOTCONN while snapshotd is down. */
#pragma once
#include "ipc-client.h"

int snapshotd_client_reclaim(Warren__V1__ReclaimRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			     void *ud);
int snapshotd_client_setup_reclaim(Warren__V1__SetupReclaimRequest *q, unsigned timeout_ms,
				   ipc_reply_fn cb, void *ud);
int snapshotd_client_open_image(Warren__V1__OpenImageRequest *q, unsigned timeout_ms,
				ipc_reply_fn cb, void *ud);
int snapshotd_client_remove_image(Warren__V1__RemoveImageRequest *q, unsigned timeout_ms,
				  ipc_reply_fn cb, void *ud);
int snapshotd_client_abort_image(Warren__V1__AbortImageRequest *q, unsigned timeout_ms,
				 ipc_reply_fn cb, void *ud);
int snapshotd_client_commit_image(Warren__V1__CommitImageRequest *q, unsigned timeout_ms,
				  ipc_reply_fn cb, void *ud);
int snapshotd_client_prepare_image(Warren__V1__PrepareImageRequest *q, unsigned timeout_ms,
				   ipc_reply_fn cb, void *ud);
int snapshotd_client_list_images(Warren__V1__ListImagesRequest *q, unsigned timeout_ms,
				 ipc_reply_fn cb, void *ud);
