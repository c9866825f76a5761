/* The supervisor's typed client of warren-netnsd: one function per request netnsd serves
 * (docs/PROTOCOL.md). Each builds the envelope and sends it on netnsd's link (helper-client.c);
 * the caller fills the request body and gets the reply in cb. -ENOTCONN while netnsd is down. */
#pragma once
#include "ipc-client.h"

int netnsd_client_exec(Warren__V1__ExecRequest *q, unsigned timeout_ms, ipc_reply_fn cb, void *ud);
int netnsd_client_open_logs(Warren__V1__OpenLogsRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			    void *ud);
int netnsd_client_slot_counters(Warren__V1__SlotCountersRequest *q, unsigned timeout_ms,
				ipc_reply_fn cb, void *ud);
int netnsd_client_pool_reserve(Warren__V1__PoolReserveRequest *q, unsigned timeout_ms,
			       ipc_reply_fn cb, void *ud);
int netnsd_client_release_slot(Warren__V1__ReleaseSlotRequest *q, unsigned timeout_ms,
			       ipc_reply_fn cb, void *ud);
int netnsd_client_destroy_sandbox(Warren__V1__DestroySandboxRequest *q, unsigned timeout_ms,
				  ipc_reply_fn cb, void *ud);
int netnsd_client_spawn_sandbox(Warren__V1__SpawnSandboxRequest *q, const int *fds, size_t n_fds,
				unsigned timeout_ms, ipc_reply_fn cb, void *ud);
int netnsd_client_restore_sandbox(Warren__V1__RestoreSandboxRequest *q, const int *fds,
				  size_t n_fds, unsigned timeout_ms, ipc_reply_fn cb, void *ud);
/* late: a slot granted after timeout_ms (netnsd stalled) is handed there to be given back */
int netnsd_client_claim_slot(Warren__V1__ClaimSlotRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			     void *ud, ipc_late_fn late);
int netnsd_client_freeze_sandbox(Warren__V1__FreezeSandboxRequest *q, unsigned timeout_ms,
				 ipc_reply_fn cb, void *ud);
int netnsd_client_slot_namespace(Warren__V1__SlotNamespaceRequest *q, unsigned timeout_ms,
				 ipc_reply_fn cb, void *ud);
int netnsd_client_list_sandboxes(Warren__V1__ListSandboxesRequest *q, unsigned timeout_ms,
				 ipc_reply_fn cb, void *ud);
int netnsd_client_checkpoint_sandbox(Warren__V1__CheckpointSandboxRequest *q, const int *fds,
				     size_t n_fds, unsigned timeout_ms, ipc_reply_fn cb, void *ud);
int netnsd_client_check_rootfs(Warren__V1__CheckRootfsRequest *q, unsigned timeout_ms,
			       ipc_reply_fn cb, void *ud);
int netnsd_client_set_egress(Warren__V1__SetEgressRequest *q, unsigned timeout_ms, ipc_reply_fn cb,
			     void *ud);
