/* netnsd's request table and handlers. Every request comes from the supervisor (checked by
 * SO_PEERCRED at accept), which may be compromised: each is validated here (field checks and
 * a first look at image fds in netnsd-validate.c) before anything privileged happens; runsc and
 * VMM work is forwarded to the spawner only after validation, with netnsd's own slot fds. An
 * image directory fd goes to the spawner as the supervisor sent it: the spawner, which writes
 * there as root, proves it is snapshotd's (spawner/image-proof.c) before it acts. */
#include "backend.h"
#include "cgroup.h"
#include "clock.h"
#include "egress-policy.h"
#include "fault.h"
#include "fileio.h"
#include "image-layout.h"
#include "log.h"
#include "macro.h"
#include "netnsd.h"
#include "netnsd-validate.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

struct claim_waiter {
	struct netnsd *n;
	struct ipc_call *call;
	struct egress_policy egress; /* checked when the claim came */
	struct event *timer;
	struct claim_waiter *next;
};

static struct netnsd_sandbox *
sandbox_find(struct netnsd *n, const char *id)
{
	for (struct netnsd_sandbox *s = n->sandboxes; s; s = s->next)
		if (!strcmp(s->id, id))
			return s;
	return NULL;
}

static void
sandbox_remove(struct netnsd *n, const char *id)
{
	for (struct netnsd_sandbox **pp = &n->sandboxes; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->id, id)) {
			struct netnsd_sandbox *s = *pp;
			*pp = s->next;
			free(s);
			return;
		}
}

static int
handle_status(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	Warren__V1__StatusResponse st;
	ipc_status_init(&st, "netnsd", ipc_server_ready(n->server));
	st.pool_size = pool_size(n->pool);
	st.pool_free = pool_free_count(n->pool);
	char *backends[2];
	st.backends = backends;
	if (access(n->runsc, X_OK) == 0)
		backends[st.n_backends++] = (char *)backend_to_string(BACKEND_GVISOR);
	char why[300];
	if (microvm_available(&n->vm, why, sizeof why))
		backends[st.n_backends++] = (char *)backend_to_string(BACKEND_MICROVM);
	for (struct netnsd_sandbox *s = n->sandboxes; s; s = s->next)
		st.sandboxes++;
	return ipc_call_reply_status(call, &st);
}

void
netnsd_claim_reply(struct netnsd *n, struct ipc_call *call, struct slot *s)
{
	char addr[INET_ADDRSTRLEN], gw[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &s->sandbox_addr, addr, sizeof addr);
	inet_ntop(AF_INET, &s->host_addr, gw, sizeof gw);
	Warren__V1__ClaimSlotResponse cr = WARREN__V1__CLAIM_SLOT_RESPONSE__INIT;
	cr.slot = s->index;
	cr.address = addr;
	cr.gateway = gw;
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_CLAIM_SLOT;
	resp.claim_slot = &cr;
	if (ipc_call_reply(call, &resp, &s->nsfd, 1) < 0) {
		/* The supervisor is gone: the slot goes straight back the way a release does
		 * (an allow-list's chain first, so no next tenant finds it; the claimed-slot
		 * file and link group put back). */
		log_warning("Slot %u: claimant gone, releasing", s->index);
		netnsd_egress_release(n, s->index, NULL);
	}
}

static void
waiter_free(struct netnsd *n, struct claim_waiter *w)
{
	for (struct claim_waiter **pp = &n->waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	event_free(w->timer);
	ipc_call_free(w->call);
	free(w);
}

static void
waiter_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct claim_waiter *w = arg;
	ipc_call_error(w->call, -EAGAIN, "no free namespace slot (pool of %u)",
		       pool_size(w->n->pool));
	waiter_free(w->n, w);
}

/* A claimed slot to its claimant: at once, or once its allow-list is in force (the claim is then
 * answered by netnsd-egress.c; this call stays the waiter's to free). */
static void
claim_finish(struct netnsd *n, struct ipc_call *call, struct slot *s, const struct egress_policy *p)
{
	s->claimant = call->peer_serial;
	if (p->mode != EGRESS_LIST) {
		netnsd_claim_reply(n, call, s);
		return;
	}
	int r = netnsd_egress_claim(n, call, s, p);
	if (r < 0)
		ipc_call_error(call, r, "slot %u: egress allow-list: %s", s->index, strerror(-r));
}

void
netnsd_pool_available(struct pool *p, void *ud)
{
	struct netnsd *n = ud;
	/* Oldest waiter first: the list is kept in arrival order. */
	while (n->waiters) {
		struct slot *s;
		struct claim_waiter *w = n->waiters;
		if (pool_claim(p, w->egress.mode == EGRESS_ON, &s) < 0)
			return;
		claim_finish(n, w->call, s, &w->egress);
		waiter_free(n, w);
	}
}

static int
handle_claim(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	const Warren__V1__ClaimSlotRequest *q = call->req->claim_slot;
	if (q->timeout_ms > 600000)
		return ipc_call_error(call, -EINVAL, "timeout_ms above 600000");
	/* the policy the claim carries, parsed here again; empty: allow_outbound, as before */
	struct egress_policy egress = {.mode = q->allow_outbound ? EGRESS_ON : EGRESS_OFF};
	char why[200];
	if (q->egress && q->egress[0] &&
	    egress_policy_parse(q->egress, &egress, why, sizeof why) < 0)
		return ipc_call_error(call, -EINVAL, "%s", why);
	/* the host's memory is the bound of a growing pool: a create it cannot hold without
	 * swapping is refused now rather than pushing every sandbox into swap */
	const struct pool_policy *pol = pool_policy(n->pool);
	uint64_t avail = 0;
	if (pol->slot_bytes && meminfo_bytes("MemAvailable", &avail) == 0 &&
	    pool_policy_admit(pol, avail) < 0)
		return ipc_call_error(
			call, -ENOMEM,
			"host full: %llu MiB available, %llu MiB kept for the host and "
			"%llu MiB counted for a sandbox",
			(unsigned long long)(avail >> 20),
			(unsigned long long)(pol->reserve_bytes >> 20),
			(unsigned long long)(pol->slot_bytes >> 20));
	struct slot *s;
	int r = n->waiters ? -EAGAIN : pool_claim(n->pool, egress.mode == EGRESS_ON, &s);
	if (r == 0) {
		fault_point("claim");
		s->claimant = call->peer_serial;
		if (egress.mode == EGRESS_LIST)
			return netnsd_egress_claim(n, call, s, &egress);
		netnsd_claim_reply(n, call, s);
		return 0;
	}
	if (r != -EAGAIN)
		return r;
	if (q->timeout_ms == 0)
		return ipc_call_error(call, -EAGAIN, "no free namespace slot (pool of %u)",
				      pool_size(n->pool));
	unsigned queued = 0;
	for (struct claim_waiter *o = n->waiters; o; o = o->next)
		queued++;
	if (queued >= POOL_MAX_WAITERS)
		return ipc_call_error(call, -EAGAIN,
				      "no free namespace slot and %u creates already wait for one",
				      queued);
	struct claim_waiter *w = calloc(1, sizeof *w);
	if (!w)
		return -ENOMEM;
	w->n = n;
	w->egress = egress;
	w->call = ipc_call_defer(call);
	w->timer = evtimer_new(n->dc.base, waiter_timeout, w);
	struct timeval tv = {q->timeout_ms / 1000, (q->timeout_ms % 1000) * 1000};
	evtimer_add(w->timer, &tv);
	struct claim_waiter **pp = &n->waiters;
	while (*pp)
		pp = &(*pp)->next;
	*pp = w;
	return IPC_DEFER;
}

/* A fork of count children announces its creates before it opens its image: the slots are built
 * while snapshotd verifies the image instead of one batch at a time behind the claims. */
static int
handle_pool_reserve(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	const Warren__V1__PoolReserveRequest *q = call->req->pool_reserve;
	char why[100];
	int r = netnsd_validate_pool_reserve(q, why, sizeof why);
	if (r < 0)
		return ipc_call_error(call, r, "%s", why);
	/* unreadable: reserve nothing rather than build past what the claims will admit */
	uint64_t avail = 0;
	if (meminfo_bytes("MemAvailable", &avail) < 0)
		avail = 0;
	Warren__V1__PoolReserveResponse pr = WARREN__V1__POOL_RESERVE_RESPONSE__INIT;
	pr.reserved = pool_reserve(n->pool, q->count, avail, &pr.target);
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_POOL_RESERVE;
	resp.pool_reserve = &pr;
	return ipc_call_reply(call, &resp, NULL, 0);
}

/* a runtime runs, or is being started, in slot idx */
static bool
slot_runs_sandbox(struct netnsd *n, unsigned idx)
{
	for (struct netnsd_sandbox *sb = n->sandboxes; sb; sb = sb->next)
		if (sb->slot == idx)
			return true;
	return false;
}

static int
handle_release(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	unsigned idx = call->req->release_slot->slot;
	struct slot *s = pool_slot(n->pool, idx);
	if (!s || !s->claimed)
		return ipc_call_error(call, -ENOENT, "slot %u is not claimed", idx);
	fault_point("slot-scrub");
	for (struct netnsd_sandbox *sb = n->sandboxes; sb; sb = sb->next)
		if (sb->slot == idx)
			return ipc_call_error(call, -EBUSY, "slot %u still runs sandbox %s", idx,
					      sb->id);
	/* a slot with an allow-list loses its chain before it is free (netnsd-egress.c) */
	return netnsd_egress_release(n, idx, call);
}

/* Forward a validated request to the spawner and relay its answer (with any fds). */
struct forward {
	struct netnsd *n;
	struct ipc_call *call;
	int kind;
	char id[SANDBOX_ID_LEN + 1];
	unsigned slot;
};

static void
forward_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct forward *f = ud;
	struct netnsd *n = f->n;
	if (!resp) {
		ipc_call_error(f->call, r, "spawner did not answer: %s", strerror(-r));
	} else {
		bool start = f->kind == WARREN__V1__REQUEST__BODY_SPAWN_SANDBOX ||
			     f->kind == WARREN__V1__REQUEST__BODY_RESTORE_SANDBOX;
		if (start && resp->error == 0 &&
		    (resp->body_case == WARREN__V1__RESPONSE__BODY_SPAWN_SANDBOX ||
		     resp->body_case == WARREN__V1__RESPONSE__BODY_RESTORE_SANDBOX)) {
			struct netnsd_sandbox *s = sandbox_find(n, f->id);
			if (s)
				s->pid = resp->body_case == WARREN__V1__RESPONSE__BODY_SPAWN_SANDBOX
						 ? resp->spawn_sandbox->pid
						 : resp->restore_sandbox->pid;
		} else if (start)
			sandbox_remove(n, f->id);
		if (f->kind == WARREN__V1__REQUEST__BODY_CHECKPOINT_SANDBOX && resp->error == 0 &&
		    !(resp->body_case == WARREN__V1__RESPONSE__BODY_CHECKPOINT_SANDBOX &&
		      resp->checkpoint_sandbox->still_running)) {
			/* runsc checkpoint stops the container: its runtime is gone until a restore
			 * (a microVM resumes in place) */
			struct netnsd_sandbox *s = sandbox_find(n, f->id);
			if (s)
				s->exited = true;
		} else if (f->kind == WARREN__V1__REQUEST__BODY_CHECKPOINT_SANDBOX &&
			   resp->error == 0 &&
			   resp->body_case == WARREN__V1__RESPONSE__BODY_CHECKPOINT_SANDBOX &&
			   resp->checkpoint_sandbox->pid > 0) {
			/* a gVisor sandbox restored in place: a new runtime process */
			struct netnsd_sandbox *s = sandbox_find(n, f->id);
			if (s)
				s->pid = resp->checkpoint_sandbox->pid;
		}
		if (f->kind == WARREN__V1__REQUEST__BODY_DESTROY_SANDBOX)
			sandbox_remove(n, f->id);
		ipc_call_reply(f->call, (IpcResponse *)resp, fds, n_fds);
	}
	ipc_close_fds(fds, n_fds);
	ipc_call_free(f->call);
	free(f);
}

static int
forward(struct netnsd *n, struct ipc_call *call, const char *id, const int *fds, size_t n_fds,
	unsigned timeout_ms)
{
	struct forward *f = calloc(1, sizeof *f);
	if (!f)
		return -ENOMEM;
	f->n = n;
	f->kind = (int)call->req->body_case;
	snprintf(f->id, sizeof f->id, "%s", id);
	int r = ipc_client_call(n->spawner, (IpcRequest *)call->req, fds, n_fds, timeout_ms,
				forward_done, f);
	if (r < 0) {
		free(f);
		return r;
	}
	f->call = ipc_call_defer(call);
	return IPC_DEFER;
}

/* Validate a spawn or restore and forward it with netnsd's own fd for the slot (and, for a
 * restore, the supervisor's image fd, which the spawner proves before use). */
static int
validate_and_forward_spawn(struct netnsd *n, struct ipc_call *call,
			   const Warren__V1__SpawnSandboxRequest *q, bool restore)
{
	char why[300];
	uint64_t mem = 0;
	meminfo_bytes("MemTotal", &mem);
	int r = netnsd_validate_spawn(q, mem, why, sizeof why);
	if (r < 0)
		return ipc_call_error(call, r, "%s", why);
	if (sandbox_find(n, q->id))
		return ipc_call_error(call, -EEXIST, "sandbox %s exists", q->id);
	bool vm = q->backend == (int)BACKEND_MICROVM;
	if (vm && !microvm_available(&n->vm, why, sizeof why))
		return ipc_call_error(call, -EOPNOTSUPP, "the microVM backend is not usable: %s",
				      why);
	struct slot *s = pool_slot(n->pool, q->slot);
	if (!s || !s->claimed)
		return ipc_call_error(call, -EINVAL, "slot %u is not claimed", q->slot);
	if (slot_runs_sandbox(n, q->slot))
		return ipc_call_error(call, -EBUSY, "slot %u is in use", q->slot);
	struct stat st;
	if (fstat(call->fds[0], &st) < 0 || st.st_ino != s->ns_ino)
		return ipc_call_error(call, -EINVAL, "fd is not the namespace of slot %u", q->slot);
	char real[PATH_MAX];
	if (!realpath(q->rootfs, real) || !path_is_inside(real, n->templates_dir) ||
	    stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
		return ipc_call_error(call, -EACCES, "rootfs %s is not a directory inside %s",
				      q->rootfs, n->templates_dir);
	if (vm) {
		/* the guest boots the template's initramfs, next to its rootfs */
		char initrd[PATH_MAX + 32];
		char ireal[PATH_MAX];
		if (image_layout_template_file(real, IMAGE_LAYOUT_VM_INITRAMFS, initrd,
					       sizeof initrd) < 0 ||
		    !realpath(initrd, ireal) || !path_is_inside(ireal, n->templates_dir) ||
		    stat(ireal, &st) < 0 || !S_ISREG(st.st_mode))
			return ipc_call_error(call, -ENOENT,
					      "no microVM image for %s (build it with "
					      "warren-vm-image)",
					      q->rootfs);
		/* and its root disk, if it has one, is a file inside the templates dir too */
		if (image_layout_template_file(real, IMAGE_LAYOUT_VM_ROOT_DISK, initrd,
					       sizeof initrd) == 0 &&
		    lstat(initrd, &st) == 0 &&
		    (!realpath(initrd, ireal) || !path_is_inside(ireal, n->templates_dir) ||
		     stat(ireal, &st) < 0 || !S_ISREG(st.st_mode)))
			return ipc_call_error(call, -EACCES,
					      "the root disk of %s is not a file inside %s",
					      q->rootfs, n->templates_dir);
	}
	if (restore && (r = netnsd_validate_image_fd(call->fds[1], why, sizeof why)) < 0) {
		log_warning("Restore of %s refused: %s", q->id, why);
		return ipc_call_error(call, r, "%s", why);
	}
	/* A restore takes the address the namespace has when it starts; a slot that ran gVisor
	 * before (the parent of a snapshot) lost it. */
	int rr = restore && !vm ? pool_slot_refresh(n->pool, q->slot) : 0;
	if (rr < 0)
		return ipc_call_error(call, rr, "slot %u: cannot set its address again", q->slot);
	/* The spawner gets canonical values, netnsd's own fd for the slot and the supervisor's
	 * image fd as it came: the spawner proves that one is snapshotd's before using it. */
	Warren__V1__SpawnSandboxRequest fwd = *q;
	fwd.rootfs = real;
	IpcRequest req = *call->req;
	Warren__V1__RestoreSandboxRequest rfwd = WARREN__V1__RESTORE_SANDBOX_REQUEST__INIT;
	rfwd.spawn = &fwd;
	if (restore)
		req.restore_sandbox = &rfwd;
	else
		req.spawn_sandbox = &fwd;
	const IpcRequest *orig = call->req;
	call->req = &req;
	struct netnsd_sandbox *sb = calloc(1, sizeof *sb);
	if (!sb) {
		call->req = orig;
		return -ENOMEM;
	}
	snprintf(sb->id, sizeof sb->id, "%s", q->id);
	sb->slot = q->slot;
	sb->vm = vm;
	sb->next = n->sandboxes;
	n->sandboxes = sb;
	/* whoever starts a runtime in a quarantined slot holds it: no longer nobody's */
	s->quarantined = s->resynced = false;
	s->claimant = call->peer_serial;
	int fds[2] = {s->nsfd, restore ? call->fds[1] : -1};
	r = forward(n, call, q->id, fds, restore ? 2 : 1, 120000);
	call->req = orig;
	if (r < 0)
		sandbox_remove(n, q->id);
	return r;
}

static int
handle_spawn(struct ipc_call *call, void *ud)
{
	return validate_and_forward_spawn(ud, call, call->req->spawn_sandbox, false);
}

static int
handle_restore(struct ipc_call *call, void *ud)
{
	return validate_and_forward_spawn(ud, call, call->req->restore_sandbox->spawn, true);
}

static int
handle_checkpoint(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	const char *id = call->req->checkpoint_sandbox->id;
	struct netnsd_sandbox *sb = sandbox_id_valid(id) ? sandbox_find(n, id) : NULL;
	if (!sb || sb->exited || !sb->pid)
		return ipc_call_error(call, -ENOENT, "no running sandbox %s", id);
	/* the spawner creates the image's files in it as root: it proves the directory is an
	 * empty new one of snapshotd's store itself (spawner/image-proof.c) before runsc or the
	 * VMM writes there; here only what can be seen without the store */
	char why[300];
	int r = netnsd_validate_image_fd(call->fds[0], why, sizeof why);
	if (r < 0) {
		log_warning("Checkpoint of %s refused: %s", id, why);
		return ipc_call_error(call, r, "%s", why);
	}
	/* a gVisor sandbox restored in place after its checkpoint needs its slot's address and
	 * route in the namespace again: netnsd's own values, never the supervisor's */
	Warren__V1__CheckpointSandboxRequest fwd = *call->req->checkpoint_sandbox;
	struct slot *s = pool_slot(n->pool, sb->slot);
	fwd.sandbox_addr = s ? s->sandbox_addr : 0;
	fwd.host_addr = s ? s->host_addr : 0;
	if (!s)
		fwd.resume = false;
	/* the rootfs for a restore in place, canonical and inside the templates dir as a spawn's;
	 * the spawner opens and checks the tree itself */
	char real[PATH_MAX];
	const char *rootfs = fwd.rootfs && *fwd.rootfs ? fwd.rootfs : NULL;
	struct stat st;
	if (rootfs && (!realpath(rootfs, real) || !path_is_inside(real, n->templates_dir) ||
		       stat(real, &st) < 0 || !S_ISDIR(st.st_mode))) {
		log_warning("Checkpoint of %s: rootfs %s is not a directory inside %s: no "
			    "restore in place",
			    id, rootfs, n->templates_dir);
		rootfs = NULL;
	}
	fwd.rootfs = rootfs ? real : (char *)"";
	IpcRequest req = *call->req;
	req.checkpoint_sandbox = &fwd;
	const IpcRequest *orig = call->req;
	call->req = &req;
	r = forward(n, call, id, call->fds, 1, 120000);
	call->req = orig;
	return r;
}

static int
handle_destroy(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	const char *id = call->req->destroy_sandbox->id;
	if (!sandbox_id_valid(id) || !sandbox_find(n, id))
		return ipc_call_error(call, -ENOENT, "no sandbox %s", id);
	return forward(n, call, id, NULL, 0, 60000);
}

static int
handle_exec(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	const Warren__V1__ExecRequest *q = call->req->exec;
	struct netnsd_sandbox *sb = sandbox_id_valid(q->id) ? sandbox_find(n, q->id) : NULL;
	if (!sb || sb->exited || !sb->pid)
		return ipc_call_error(call, -ENOENT, "no running sandbox %s", q->id);
	char why[100];
	int r = netnsd_validate_exec(q, why, sizeof why);
	if (r < 0)
		return ipc_call_error(call, r, "%s", why);
	return forward(n, call, q->id, NULL, 0, (q->timeout_ms ? q->timeout_ms : 30000) + 5000);
}

/* 10 s after the last re-sync: what was quarantined before it and is still neither released nor
 * used is nobody's. It goes back the way a release does (an allow-list's chain first), never
 * while a runtime or a chain job is in it. */
static void
quarantine_end(evutil_socket_t fd, short what, void *arg)
{
	struct netnsd *n = arg;
	bool left = false;
	for (unsigned i = 0; i < pool_size(n->pool); i++) {
		struct slot *s = pool_slot(n->pool, i);
		if (!s || !s->claimed || !s->quarantined || !s->resynced)
			continue;
		if (slot_runs_sandbox(n, i)) {
			s->quarantined = s->resynced = false;
			continue;
		}
		if (netnsd_egress_busy(i)) {
			left = true;
			continue;
		}
		log_info("Slot %u: held by no runtime and not released by the re-sync; freeing it",
			 i);
		int r = netnsd_egress_release(n, i, NULL);
		if (r < 0)
			log_error_errno(r, "Slot %u: cannot free it: %m", i);
	}
	struct timeval tv = {10, 0};
	if (left)
		evtimer_add(n->quarantine_timer, &tv);
}

/* A peer hung up: the slots it claimed that hold no runtime (a supervisor killed between a claim
 * and its spawn, or before it recorded the claim) are quarantined, so its successor's re-sync
 * either releases them or, 10 s after it, they are freed; never left claimed for nobody. */
void
netnsd_peer_gone(void *ud, uint64_t peer_serial)
{
	struct netnsd *n = ud;
	for (unsigned i = 0; i < pool_size(n->pool); i++) {
		struct slot *s = pool_slot(n->pool, i);
		if (!s || !s->claimed || s->quarantined || s->claimant != peer_serial)
			continue;
		if (slot_runs_sandbox(n, i))
			continue;
		log_info("Slot %u: its claimant hung up before using it; quarantined until the "
			 "next re-sync",
			 i);
		s->quarantined = true;
		s->resynced = false;
	}
}

static int
handle_list(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	/* The supervisor re-syncs with a List and releases, in the same breath, the slots its
	 * failed sandboxes held; what is still quarantined 10 s later nobody holds. */
	bool any = false;
	for (unsigned i = 0; i < pool_size(n->pool); i++) {
		struct slot *s = pool_slot(n->pool, i);
		if (s && s->quarantined)
			any = s->resynced = true;
	}
	if (!n->quarantine_timer)
		n->quarantine_timer = evtimer_new(n->dc.base, quarantine_end, n);
	/* (re)armed: 10 s after the latest re-sync, not an earlier one */
	struct timeval tv = {10, 0};
	if (any && n->quarantine_timer)
		evtimer_add(n->quarantine_timer, &tv);
	size_t count = 0;
	for (struct netnsd_sandbox *s = n->sandboxes; s; s = s->next)
		count++;
	Warren__V1__SandboxInfo *infos = calloc(count + 1, sizeof *infos);
	Warren__V1__SandboxInfo **ptrs = calloc(count + 1, sizeof *ptrs);
	if (!infos || !ptrs) {
		free(infos);
		free(ptrs);
		return -ENOMEM;
	}
	char(*rel)[CGROUP_PATH_MAX] = calloc(count + 1, sizeof *rel);
	if (!rel) {
		free(infos);
		free(ptrs);
		return -ENOMEM;
	}
	size_t i = 0;
	for (struct netnsd_sandbox *s = n->sandboxes; s; s = s->next, i++) {
		warren__v1__sandbox_info__init(&infos[i]);
		infos[i].id = s->id;
		infos[i].slot = s->slot;
		infos[i].pid = s->exited ? 0 : s->pid;
		if (cgroup_sandbox_path(n->cgroup_parent, s->id, rel[i], sizeof rel[i]) == 0) {
			infos[i].frozen = cgroup_frozen(rel[i]) == 1;
			infos[i].cgroup = rel[i];
		}
		ptrs[i] = &infos[i];
	}
	Warren__V1__ListSandboxesResponse lr = WARREN__V1__LIST_SANDBOXES_RESPONSE__INIT;
	lr.sandboxes = ptrs;
	lr.n_sandboxes = count;
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_LIST_SANDBOXES;
	resp.list_sandboxes = &lr;
	int r = ipc_call_reply(call, &resp, NULL, 0);
	free(infos);
	free(ptrs);
	free(rel);
	return r;
}

/* Only the sandbox's own slot, only while netnsd runs that sandbox in it: the fd is the one the
 * claim handed out, nothing a claimant could not have kept. */
static int
handle_slot_namespace(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	const Warren__V1__SlotNamespaceRequest *q = call->req->slot_namespace;
	struct netnsd_sandbox *sb = sandbox_id_valid(q->id) ? sandbox_find(n, q->id) : NULL;
	struct slot *s = pool_slot(n->pool, q->slot);
	if (!sb || sb->slot != q->slot || !s || !s->claimed || s->nsfd < 0)
		return ipc_call_error(call, -ENOENT, "no such sandbox in slot %u", q->slot);
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	return ipc_call_reply(call, &resp, &s->nsfd, 1);
}

static int
handle_freeze(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	const Warren__V1__FreezeSandboxRequest *q = call->req->freeze_sandbox;
	struct netnsd_sandbox *sb = sandbox_id_valid(q->id) ? sandbox_find(n, q->id) : NULL;
	if (!sb || sb->exited || !sb->pid)
		return ipc_call_error(call, -ENOENT, "no running sandbox %s", q->id);
	char rel[CGROUP_PATH_MAX];
	int cr = cgroup_sandbox_path(n->cgroup_parent, q->id, rel, sizeof rel);
	if (cr < 0)
		return ipc_call_error(call, cr, "no cgroup for %s", q->id);
	uint64_t t0 = now_usec();
	fault_point(q->freeze ? "freeze" : "thaw");
	int r = cgroup_freeze(rel, q->freeze);
	if (r < 0)
		return ipc_call_error(call, r, "%s %s: %s", q->freeze ? "freeze" : "thaw", q->id,
				      strerror(-r));
	Warren__V1__FreezeSandboxResponse fr = WARREN__V1__FREEZE_SANDBOX_RESPONSE__INIT;
	fr.frozen = q->freeze;
	fr.elapsed_us = now_usec() - t0;
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_FREEZE_SANDBOX;
	resp.freeze_sandbox = &fr;
	return ipc_call_reply(call, &resp, NULL, 0);
}

void
netnsd_spawner_event(const IpcResponse *ev, void *ud)
{
	struct netnsd *n = ud;
	if (ev->body_case != WARREN__V1__RESPONSE__BODY_SANDBOX_EXITED)
		return;
	struct netnsd_sandbox *sb = sandbox_find(n, ev->sandbox_exited->id);
	if (sb)
		sb->exited = true;
	log_info("Sandbox %s exited (status %d, signal %d)", ev->sandbox_exited->id,
		 ev->sandbox_exited->exit_status, ev->sandbox_exited->signal);
	ipc_server_broadcast(n->server, (IpcResponse *)ev);
}

/* AddTemplate's check: the path canonicalised inside the templates dir here, the tree checked by
 * the spawner (rootfs_open), which is where the privilege it guards is. */
static int
handle_check_rootfs(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	const char *p = call->req->check_rootfs->rootfs;
	char *one[] = {(char *)p};
	if (!p || !p[0] || strlen(p) >= PATH_MAX || p[0] != '/' ||
	    !netnsd_strings_valid(one, 1, 1, false))
		return ipc_call_error(call, -EINVAL, "bad rootfs");
	char real[PATH_MAX];
	struct stat st;
	if (!realpath(p, real) || !path_is_inside(real, n->templates_dir) || stat(real, &st) < 0 ||
	    !S_ISDIR(st.st_mode))
		return ipc_call_error(call, -EACCES, "rootfs %s is not a directory inside %s", p,
				      n->templates_dir);
	Warren__V1__CheckRootfsRequest q = WARREN__V1__CHECK_ROOTFS_REQUEST__INIT;
	q.rootfs = real;
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_CHECK_ROOTFS;
	req.check_rootfs = &q;
	/* forward() sends call->req: point it at the canonical path for the spawner */
	const IpcRequest *orig = call->req;
	call->req = &req;
	int r = forward(n, call, "", NULL, 0, 120000);
	call->req = orig;
	return r;
}

/* A sandbox's console log: to the spawner, whose fd comes back through here. */
static int
handle_open_logs(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	const Warren__V1__OpenLogsRequest *q = call->req->open_logs;
	/* also for a sandbox already removed: the spawner keeps the log of one whose program
	 * ended (and answers -ENOENT for any other id) */
	if (!sandbox_id_valid(q->id))
		return ipc_call_error(call, -ENOENT, "no sandbox %s", q->id);
	return forward(n, call, q->id, NULL, 0, 5000);
}

/* Traffic of each claimed slot, from its host veth's counters in sysfs (the supervisor, in a
 * private network namespace, cannot see them): for the metrics endpoint. Reads only. */
static int
handle_slot_counters(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	unsigned size = pool_size(n->pool), count = 0;
	Warren__V1__SlotCounters *cs = calloc(size + 1, sizeof *cs);
	Warren__V1__SlotCounters **ptrs = calloc(size + 1, sizeof *ptrs);
	if (!cs || !ptrs) {
		free(cs);
		free(ptrs);
		return -ENOMEM;
	}
	static const char *const names[4] = {"rx_bytes", "tx_bytes", "rx_packets", "tx_packets"};
	for (unsigned i = 0; i < size; i++) {
		struct slot *sl = pool_slot(n->pool, i);
		if (!sl || !sl->claimed || !sl->host_ifname[0])
			continue;
		uint64_t v[4] = {0, 0, 0, 0};
		for (int k = 0; k < 4; k++) {
			char path[128];
			snprintf(path, sizeof path, "/sys/class/net/%s/statistics/%s",
				 sl->host_ifname, names[k]);
			file_read_u64(path, &v[k]);
		}
		Warren__V1__SlotCounters *c = &cs[count];
		warren__v1__slot_counters__init(c);
		c->slot = i;
		/* the host side's receive is what the sandbox sent */
		c->tx_bytes = v[0];
		c->rx_bytes = v[1];
		c->tx_packets = v[2];
		c->rx_packets = v[3];
		ptrs[count++] = c;
	}
	Warren__V1__SlotCountersResponse sr = WARREN__V1__SLOT_COUNTERS_RESPONSE__INIT;
	sr.slots = ptrs;
	sr.n_slots = count;
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_SLOT_COUNTERS;
	resp.slot_counters = &sr;
	int r = ipc_call_reply(call, &resp, NULL, 0);
	free(cs);
	free(ptrs);
	return r;
}

const struct ipc_handler netnsd_handlers[] = {
	{WARREN__V1__REQUEST__BODY_STATUS, 0, 0, handle_status},
	{WARREN__V1__REQUEST__BODY_CLAIM_SLOT, 0, IPC_NEEDS_READY, handle_claim},
	{WARREN__V1__REQUEST__BODY_RELEASE_SLOT, 0, IPC_NEEDS_READY, handle_release},
	{WARREN__V1__REQUEST__BODY_POOL_RESERVE, 0, IPC_NEEDS_READY, handle_pool_reserve},
	{WARREN__V1__REQUEST__BODY_SET_EGRESS, 0, IPC_NEEDS_READY, netnsd_handle_set_egress},
	{WARREN__V1__REQUEST__BODY_SPAWN_SANDBOX, 1, IPC_NEEDS_READY, handle_spawn},
	{WARREN__V1__REQUEST__BODY_DESTROY_SANDBOX, 0, IPC_NEEDS_READY, handle_destroy},
	{WARREN__V1__REQUEST__BODY_EXEC, 0, IPC_NEEDS_READY, handle_exec},
	{WARREN__V1__REQUEST__BODY_LIST_SANDBOXES, 0, 0, handle_list},
	{WARREN__V1__REQUEST__BODY_FREEZE_SANDBOX, 0, IPC_NEEDS_READY, handle_freeze},
	{WARREN__V1__REQUEST__BODY_SLOT_NAMESPACE, 0, IPC_NEEDS_READY, handle_slot_namespace},
	{WARREN__V1__REQUEST__BODY_CHECKPOINT_SANDBOX, 1, IPC_NEEDS_READY, handle_checkpoint},
	{WARREN__V1__REQUEST__BODY_RESTORE_SANDBOX, 2, IPC_NEEDS_READY, handle_restore},
	{WARREN__V1__REQUEST__BODY_CHECK_ROOTFS, 0, 0, handle_check_rootfs},
	{WARREN__V1__REQUEST__BODY_SLOT_COUNTERS, 0, 0, handle_slot_counters},
	{WARREN__V1__REQUEST__BODY_OPEN_LOGS, 0, IPC_NEEDS_READY, handle_open_logs},
};
const unsigned netnsd_n_handlers = sizeof netnsd_handlers / sizeof netnsd_handlers[0];
