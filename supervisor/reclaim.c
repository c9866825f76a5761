/* Reclaim in the supervisor: after a sandbox is frozen, ask snapshotd to push its memory out
 * to (z)swap, and hold any thaw until that is done; the swap/zswap set-up over D-Bus. */
#include "fileio.h"
#include "log.h"
#include "snapshotd-client.h"
#include "macro.h"
#include "metrics.h"
#include "reclaim.h"
#include "supervisor.h"

#include <string.h>

struct reclaim_ctx {
	char id[SANDBOX_ID_LEN + 1];
};

static void
reclaim_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct reclaim_ctx *c = ud;
	ipc_close_fds(fds, n_fds);
	struct sandbox *sb = sandbox_find(sup, c->id);
	free(c);
	if (!sb)
		return;
	sb->reclaiming = false;
	if (r == 0 && resp && resp->body_case == WARREN__V1__RESPONSE__BODY_RECLAIM) {
		const Warren__V1__ReclaimResponse *rr = resp->reclaim;
		sb->reclaimed_bytes = rr->before > rr->after ? rr->before - rr->after : 0;
		metrics_reclaimed(sb->reclaimed_bytes);
		log_info("Sandbox %s: reclaimed %llu MiB (%llu -> %llu MiB) in %llu ms", sb->id,
			 (unsigned long long)(sb->reclaimed_bytes >> 20),
			 (unsigned long long)(rr->before >> 20),
			 (unsigned long long)(rr->after >> 20),
			 (unsigned long long)(rr->elapsed_us / 1000));
		sd_bus_emit_properties_changed(sup->bus, sb->path, SANDBOX_IFACE, "ReclaimedBytes",
					       NULL);
	} else
		log_warning("Sandbox %s: reclaim failed: %s", sb->id,
			    helper_message(resp, strerror(-r)));
	if (sb->thaw_pending) {
		sb->thaw_pending = false;
		sd_bus_message *m = TAKE_PTR(sb->thaw_msg);
		int r2 = freeze_request(sb, false, m);
		if (r2 < 0 && m)
			sd_bus_reply_method_errno(m, -r2, NULL);
		sd_bus_message_unref(m);
	}
}

void
reclaim_after_freeze(struct sandbox *sb)
{
	/* Without swap only page cache could go, and gVisor's memory is shmem: not worth it. */
	uint64_t swap = 0;
	if (meminfo_bytes("SwapTotal", &swap) < 0 || swap == 0 || sb->reclaiming)
		return;
	struct reclaim_ctx *c = calloc(1, sizeof *c);
	if (!c)
		return; /* reclaim is best effort: the next idle period tries again */
	snprintf(c->id, sizeof c->id, "%s", sb->id);
	Warren__V1__ReclaimRequest q = WARREN__V1__RECLAIM_REQUEST__INIT;
	q.id = sb->id;
	sb->reclaiming = true;
	if (snapshotd_client_reclaim(&q, 10000, reclaim_done, c) < 0)
		reclaim_done(NULL, -ENOTCONN, NULL, 0, c);
}

static void
setup_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct operation *op = ud;
	ipc_close_fds(fds, n_fds);
	if (r == 0 && resp && resp->body_case == WARREN__V1__RESPONSE__BODY_SETUP_RECLAIM) {
		const Warren__V1__SetupReclaimResponse *o = resp->setup_reclaim;
		operation_return(&op, "tbtts", o->swap_bytes, o->zswap_enabled, o->zswap_pool_bytes,
				 o->zswapped_bytes, o->compressor);
		sd_bus_emit_properties_changed(sup->bus, MANAGER_PATH, MANAGER_IFACE, "SwapBytes",
					       "ZswapEnabled", NULL);
	} else {
		operation_error(&op, ERR("ReclaimSetupFailed"), "%s",
				helper_message(resp, strerror(-r)));
	}
}

int
reclaim_setup_call(struct supervisor *s, sd_bus_message *m, uint64_t swap_bytes, bool zswap,
		   const char *compressor, uint32_t max_pool_percent, bool undo)
{
	Warren__V1__SetupReclaimRequest q = WARREN__V1__SETUP_RECLAIM_REQUEST__INIT;
	q.swap_bytes = swap_bytes;
	q.zswap = zswap;
	q.compressor = (char *)compressor;
	q.max_pool_percent = max_pool_percent;
	q.undo = undo;
	struct operation *op = operation_new(m);
	if (!op)
		return -ENOMEM;
	/* writing the swap file takes a few seconds */
	int r = snapshotd_client_setup_reclaim(&q, 120000, setup_done, op);
	if (r < 0) {
		operation_cancel(&op);
		return r;
	}
	return 1;
}
