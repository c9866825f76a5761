/* warren-netnsd: the privileged namespace-pool daemon. Shared state of its files. */
#pragma once
#include <stdbool.h>

#include "daemon.h"
#include "ipc-client.h"
#include "ipc-server.h"
#include "isolation.h"
#include "microvm.h"
#include "names.h"
#include "netnsd-validate.h"
#include "pool.h"

struct netnsd_sandbox {
	char id[SANDBOX_ID_LEN + 1];
	unsigned slot;
	int pid;
	bool exited;
	bool vm; /* microVM backend: its images hold state and ram */
	struct netnsd_sandbox *next;
};

struct netnsd {
	struct daemon_common dc;
	struct pool *pool;
	struct ipc_server *server;
	struct ipc_client *spawner;
	char *templates_dir; /* canonical */
	const char *cgroup_parent;
	const char *runsc;
	struct microvm_config vm;
	struct netnsd_sandbox *sandboxes;
	struct claim_waiter *waiters;
	int slots_fd; /* the claimed-slot file (adopt.h) */
	struct event *quarantine_timer;
};

extern const struct ipc_handler netnsd_handlers[];
extern const unsigned netnsd_n_handlers;
void netnsd_pool_available(struct pool *p, void *ud);
void netnsd_peer_gone(void *ud, uint64_t peer_serial);
void netnsd_spawner_event(const IpcResponse *ev, void *ud);

/* netnsd-dispatch.c: answer a claim with the slot (and its namespace fd) */
void netnsd_claim_reply(struct netnsd *n, struct ipc_call *call, struct slot *s);
/* netnsd-egress.c: SetEgress; a claim's allow-list (loaded before the claim is answered, then
 * the slot may leave); a release that removes the slot's allow-list chain first (call NULL:
 * nobody waits). Each returns IPC_DEFER, 0, or -errno with call unanswered. */
int netnsd_handle_set_egress(struct ipc_call *call, void *ud);
struct egress_policy;
int netnsd_egress_claim(struct netnsd *n, struct ipc_call *call, struct slot *s,
			const struct egress_policy *p);
int netnsd_egress_release(struct netnsd *n, unsigned idx, struct ipc_call *call);
/* the spawner is loading or removing the slot's chain */
bool netnsd_egress_busy(unsigned idx);

/* netnsd-remove.c: --remove-all */
int netnsd_remove_all(const char *runtime_dir, const char *cgroup_parent, const char *prefix,
		      const struct isolation_config *iso);

/* netnsd-lockdown.c */
extern const char netnsd_user[];
extern const int netnsd_caps[];
extern const unsigned netnsd_n_caps;
extern const struct seccomp_policy netnsd_seccomp;
