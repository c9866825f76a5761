/* The supervisor's typed client of warren-netnsd: one function per request netnsd serves
 * (docs/PROTOCOL.md). Each builds the envelope and sends it on netnsd's link (helper-client.c);
 * the caller fills the request body and gets the reply in cb. -ENOTCONN while netnsd is down. */
#include "netnsd-client.h"
#include "helper-client.h"

int
netnsd_client_exec(Warren__V1__ExecRequest *q, unsigned timeout_ms, ipc_reply_fn cb, void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_EXEC;
	req.exec = q;
	return helper_call(HELPER_NETNSD, &req, NULL, 0, timeout_ms, cb, ud);
}

int
netnsd_client_open_logs(Warren__V1__OpenLogsRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_OPEN_LOGS;
	req.open_logs = q;
	return helper_call(HELPER_NETNSD, &req, NULL, 0, timeout_ms, cb, ud);
}

int
netnsd_client_slot_counters(Warren__V1__SlotCountersRequest *q, unsigned timeout_ms,
			    ipc_reply_fn cb, void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_SLOT_COUNTERS;
	req.slot_counters = q;
	return helper_call(HELPER_NETNSD, &req, NULL, 0, timeout_ms, cb, ud);
}

int
netnsd_client_pool_reserve(Warren__V1__PoolReserveRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			   void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_POOL_RESERVE;
	req.pool_reserve = q;
	return helper_call(HELPER_NETNSD, &req, NULL, 0, timeout_ms, cb, ud);
}

int
netnsd_client_release_slot(Warren__V1__ReleaseSlotRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			   void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_RELEASE_SLOT;
	req.release_slot = q;
	return helper_call(HELPER_NETNSD, &req, NULL, 0, timeout_ms, cb, ud);
}

int
netnsd_client_destroy_sandbox(Warren__V1__DestroySandboxRequest *q, unsigned timeout_ms,
			      ipc_reply_fn cb, void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_DESTROY_SANDBOX;
	req.destroy_sandbox = q;
	return helper_call(HELPER_NETNSD, &req, NULL, 0, timeout_ms, cb, ud);
}

int
netnsd_client_spawn_sandbox(Warren__V1__SpawnSandboxRequest *q, const int *fds, size_t n_fds,
			    unsigned timeout_ms, ipc_reply_fn cb, void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_SPAWN_SANDBOX;
	req.spawn_sandbox = q;
	return helper_call(HELPER_NETNSD, &req, fds, n_fds, timeout_ms, cb, ud);
}

int
netnsd_client_restore_sandbox(Warren__V1__RestoreSandboxRequest *q, const int *fds, size_t n_fds,
			      unsigned timeout_ms, ipc_reply_fn cb, void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_RESTORE_SANDBOX;
	req.restore_sandbox = q;
	return helper_call(HELPER_NETNSD, &req, fds, n_fds, timeout_ms, cb, ud);
}

int
netnsd_client_claim_slot(Warren__V1__ClaimSlotRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			 void *ud, ipc_late_fn late)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_CLAIM_SLOT;
	req.claim_slot = q;
	return helper_call_late(HELPER_NETNSD, &req, NULL, 0, timeout_ms, cb, ud, late);
}

int
netnsd_client_freeze_sandbox(Warren__V1__FreezeSandboxRequest *q, unsigned timeout_ms,
			     ipc_reply_fn cb, void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_FREEZE_SANDBOX;
	req.freeze_sandbox = q;
	return helper_call(HELPER_NETNSD, &req, NULL, 0, timeout_ms, cb, ud);
}

int
netnsd_client_list_sandboxes(Warren__V1__ListSandboxesRequest *q, unsigned timeout_ms,
			     ipc_reply_fn cb, void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_LIST_SANDBOXES;
	req.list_sandboxes = q;
	return helper_call(HELPER_NETNSD, &req, NULL, 0, timeout_ms, cb, ud);
}

int
netnsd_client_slot_namespace(Warren__V1__SlotNamespaceRequest *q, unsigned timeout_ms,
			     ipc_reply_fn cb, void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_SLOT_NAMESPACE;
	req.slot_namespace = q;
	return helper_call(HELPER_NETNSD, &req, NULL, 0, timeout_ms, cb, ud);
}

int
netnsd_client_checkpoint_sandbox(Warren__V1__CheckpointSandboxRequest *q, const int *fds,
				 size_t n_fds, unsigned timeout_ms, ipc_reply_fn cb, void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_CHECKPOINT_SANDBOX;
	req.checkpoint_sandbox = q;
	return helper_call(HELPER_NETNSD, &req, fds, n_fds, timeout_ms, cb, ud);
}

int
netnsd_client_check_rootfs(Warren__V1__CheckRootfsRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			   void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_CHECK_ROOTFS;
	req.check_rootfs = q;
	return helper_call(HELPER_NETNSD, &req, NULL, 0, timeout_ms, cb, ud);
}

int
netnsd_client_set_egress(Warren__V1__SetEgressRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			 void *ud)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_SET_EGRESS;
	req.set_egress = q;
	return helper_call(HELPER_NETNSD, &req, NULL, 0, timeout_ms, cb, ud);
}
