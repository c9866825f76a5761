/* netnsd's side of egress policies (issue #15): SetEgress from the supervisor, the allow-list a
 * claim carries, and the release of a slot that had one. Runs in netnsd after its lock-down: the
 * link group ("off", "on") is set here with rtnetlink; an allow-list's chain and record are the
 * spawner's work (egress.c, root, may exec nft). The order of the two keeps every moment no
 * wider than the old or the new policy: the group is narrowed before the chain goes, widened
 * only after the chain is in force. A generation per slot keeps a late answer of the spawner
 * from undoing a newer request's group. */
#include "adopt.h"
#include "egress-policy.h"
#include "log.h"
#include "netnsd.h"
#include "netnsd-validate.h"

#include <stdlib.h>
#include <string.h>

struct egress_job {
	struct netnsd *n;
	struct ipc_call *call; /* NULL: nobody waits (a claimant gone) */
	unsigned slot;
	unsigned gen;
	enum egress_mode mode;
	enum { JOB_SET, JOB_CLAIM, JOB_RELEASE } kind;
};

static unsigned slot_gen[ADOPT_MAX_SLOTS];
/* jobs the spawner has not answered, per slot: a quarantine does not end under one */
static unsigned slot_jobs[ADOPT_MAX_SLOTS];
/* a release clears the chain: a SetEgress then would load one into a slot going free */
static bool slot_releasing[ADOPT_MAX_SLOTS];

static void
job_free(struct egress_job *j)
{
	slot_jobs[j->slot]--;
	ipc_call_free(j->call);
	free(j);
}

bool
netnsd_egress_busy(unsigned idx)
{
	return idx < ADOPT_MAX_SLOTS && slot_jobs[idx] > 0;
}

static void spawner_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud);

/* Ask the spawner for the slot's chain: p an allow-list installs it, anything else removes it. */
static int
spawner_send(struct egress_job *j, const struct egress_policy *p)
{
	char text[EGRESS_POLICY_MAX];
	int r = egress_policy_format(p, text, sizeof text);
	if (r < 0)
		return r;
	Warren__V1__SetEgressRequest q = WARREN__V1__SET_EGRESS_REQUEST__INIT;
	q.slot = j->slot;
	q.policy = text;
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	req.body_case = WARREN__V1__REQUEST__BODY_SET_EGRESS;
	req.set_egress = &q;
	return ipc_client_call(j->n->spawner, &req, NULL, 0, 30000, spawner_done, j);
}

static void
reply_ok(struct ipc_call *call)
{
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	if (call)
		ipc_call_reply(call, &resp, NULL, 0);
}

static void
spawner_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct egress_job *j = ud;
	struct slot *s = pool_slot(j->n->pool, j->slot);
	ipc_close_fds(fds, n_fds);
	if (!resp && r >= 0)
		r = -EIO;
	bool current = s && s->claimed && j->slot < ADOPT_MAX_SLOTS && slot_gen[j->slot] == j->gen;
	if (r < 0) {
		if (j->kind == JOB_RELEASE)
			slot_releasing[j->slot] = false;
		log_error_errno(r, "Slot %u: the spawner did not %s its egress chain: %m", j->slot,
				j->mode == EGRESS_LIST ? "load" : "remove");
		if (j->kind == JOB_CLAIM && s && s->claimed)
			/* the claim fails: the slot goes back through the release that clears */
			netnsd_egress_release(j->n, j->slot, NULL);
		if (j->call)
			ipc_call_error(j->call, r, "slot %u: egress chain: %s", j->slot,
				       strerror(-r));
		job_free(j);
		return;
	}
	if (j->mode != EGRESS_LIST && current)
		s->egress_list = false;
	if (j->kind == JOB_RELEASE) {
		slot_releasing[j->slot] = false;
		int rr = s ? pool_release(j->n->pool, j->slot) : -ENOENT;
		if (j->call && rr < 0)
			ipc_call_error(j->call, rr, "slot %u: release failed", j->slot);
		else
			reply_ok(j->call);
		job_free(j);
		return;
	}
	if (j->mode == EGRESS_LIST && current) {
		/* the chain is in force: now the slot may leave through it */
		int rr = pool_slot_outbound(j->n->pool, j->slot, true);
		if (rr < 0) {
			if (j->call)
				ipc_call_error(j->call, rr, "slot %u: link group: %s", j->slot,
					       strerror(-rr));
			if (j->kind == JOB_CLAIM)
				netnsd_egress_release(j->n, j->slot, NULL);
			job_free(j);
			return;
		}
	}
	if (j->kind == JOB_CLAIM && j->call) {
		/* answered here; the deferred call is the job's to free */
		if (current)
			netnsd_claim_reply(j->n, j->call, s);
		else {
			/* only a peer that named a slot it was not given gets here: the claim
			 * fails and the slot goes back */
			ipc_call_error(j->call, -EAGAIN, "slot %u changed while it was claimed",
				       j->slot);
			if (s && s->claimed)
				netnsd_egress_release(j->n, j->slot, NULL);
		}
		job_free(j);
		return;
	}
	reply_ok(j->call);
	job_free(j);
}

/* The caller sends, then defers its call into j->call (never before: a failed send answers the
 * call as it came). */
static struct egress_job *
job_new(struct netnsd *n, unsigned slot, enum egress_mode mode, int kind)
{
	struct egress_job *j = calloc(1, sizeof *j);
	if (!j)
		return NULL;
	j->n = n;
	j->slot = slot;
	j->mode = mode;
	j->kind = kind;
	j->gen = ++slot_gen[slot];
	slot_jobs[slot]++;
	return j;
}

int
netnsd_egress_claim(struct netnsd *n, struct ipc_call *call, struct slot *s,
		    const struct egress_policy *p)
{
	if (s->index >= ADOPT_MAX_SLOTS)
		return -EINVAL;
	struct egress_job *j = job_new(n, s->index, p->mode, JOB_CLAIM);
	if (!j)
		return -ENOMEM;
	s->egress_list = true; /* before the spawner may have written anything */
	int r = spawner_send(j, p);
	if (r < 0) {
		job_free(j); /* the caller answers the claim */
		netnsd_egress_release(n, s->index, NULL);
		return r;
	}
	j->call = call ? ipc_call_defer(call) : NULL;
	return IPC_DEFER;
}

int
netnsd_egress_release(struct netnsd *n, unsigned idx, struct ipc_call *call)
{
	struct slot *s = pool_slot(n->pool, idx);
	if (!s || idx >= ADOPT_MAX_SLOTS)
		return -ENOENT;
	if (!s->egress_list) {
		int r = pool_release(n->pool, idx);
		if (r < 0 || !call)
			return r;
		reply_ok(call);
		return 0;
	}
	/* nothing leaves while the chain goes: the group first (pool_release sets it again) */
	pool_slot_outbound(n->pool, idx, false);
	struct egress_job *j = job_new(n, idx, EGRESS_OFF, JOB_RELEASE);
	if (!j)
		return -ENOMEM;
	struct egress_policy off = {.mode = EGRESS_OFF};
	int r = spawner_send(j, &off);
	if (r < 0) {
		job_free(j);
		return r;
	}
	slot_releasing[idx] = true;
	j->call = call ? ipc_call_defer(call) : NULL;
	return IPC_DEFER;
}

/* SetEgress (supervisor -> netnsd): the policy parsed again, only for a claimed slot. */
int
netnsd_handle_set_egress(struct ipc_call *call, void *ud)
{
	struct netnsd *n = ud;
	const Warren__V1__SetEgressRequest *q = call->req->set_egress;
	struct egress_policy p;
	char why[200];
	int r = netnsd_validate_set_egress(q, &p, why, sizeof why);
	if (r < 0)
		return ipc_call_error(call, r, "%s", why);
	struct slot *s = pool_slot(n->pool, q->slot);
	if (!s || !s->claimed || q->slot >= ADOPT_MAX_SLOTS)
		return ipc_call_error(call, -ENOENT, "slot %u is not claimed", q->slot);
	if (slot_releasing[q->slot])
		return ipc_call_error(call, -EBUSY, "slot %u is being released", q->slot);
	if (p.mode != EGRESS_LIST) {
		/* narrow (off) or widen (on) the group now; a chain left goes after it */
		r = pool_slot_outbound(n->pool, q->slot, p.mode == EGRESS_ON);
		if (r < 0)
			return ipc_call_error(call, r, "slot %u: link group: %s", q->slot,
					      strerror(-r));
		if (!s->egress_list) {
			slot_gen[q->slot]++;
			reply_ok(call);
			return 0;
		}
	}
	struct egress_job *j = job_new(n, q->slot, p.mode, JOB_SET);
	if (!j)
		return -ENOMEM;
	if (p.mode == EGRESS_LIST)
		s->egress_list = true;
	r = spawner_send(j, &p);
	if (r < 0) {
		job_free(j);
		return ipc_call_error(call, r, "spawner: %s", strerror(-r));
	}
	j->call = ipc_call_defer(call);
	return IPC_DEFER;
}
