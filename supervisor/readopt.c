/* Re-adoption after a restart (supervisor): at start the sandbox records under
 * <state-dir>/sandboxes are read back (every field checked again), and once netnsd answers
 * ListSandboxes each record is matched with the runtime netnsd runs: re-adopted (its route pushed
 * again, its namespace fd asked for again), failed when its runtime went away, released when it
 * was being destroyed; runtimes nobody remembers are removed. The records are written by
 * state-file.c; the state machine they feed is sandbox.c's. */
#include "fileio.h"
#include "log.h"
#include "netnsd-client.h"
#include "macro.h"
#include "state-file.h"
#include "supervisor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every field is checked again on load: a record no supervisor wrote is refused, not applied. */
static int
sandbox_kv(const char *k, const char *v, void *ud)
{
	struct sandbox *sb = ud;
	if (!strcmp(k, "template")) {
		if (v[0] && !template_name_valid(v))
			return -EBADMSG;
		snprintf(sb->template_name, sizeof sb->template_name, "%s", v);
	} else if (!strcmp(k, "backend")) {
		if (v[0] && backend_from_string(v) < 0)
			return -EBADMSG;
		sb->backend = v[0] ? backend_from_string(v) : BACKEND_GVISOR;
	} else if (!strcmp(k, "address") &&
		   (strlen(v) >= sizeof sb->address || strspn(v, "0123456789.") != strlen(v)))
		return -EBADMSG;
	else if (!strcmp(k, "standby"))
		sb->standby = atoi(v) != 0;
	else if (!strcmp(k, "slot"))
		sb->slot = atoi(v);
	else if (!strcmp(k, "address"))
		snprintf(sb->address, sizeof sb->address, "%s", v);
	else if (!strcmp(k, "created"))
		sb->created_usec = strtoull(v, NULL, 10);
	else if (!strcmp(k, "state")) {
		int st = sandbox_state_from_string(v);
		sb->state = st < 0 ? SANDBOX_FAILED : (enum sandbox_state)st;
	}
	return 0;
}

static void
sandbox_record_load(int dfd, const char *name, const char *path, void *ctx)
{
	(void)dfd;
	if (!sandbox_id_valid(name))
		return;
	struct sandbox *sb = sandbox_new(ctx, name, "");
	if (!sb) {
		log_error("Sandbox record %s: out of memory, not read back", path);
		return;
	}
	if (file_read_kv(path, sandbox_kv, sb) < 0) {
		log_warning("Ignoring sandbox record %s: unreadable or not valid", path);
		sandbox_forget(sb);
		return;
	}
	sb->runtime_alive = true; /* until netnsd says otherwise */
	log_info("Found sandbox %s (%s) from before the restart", sb->id,
		 sandbox_state_to_string(sb->state));
}

void
sandboxes_load(struct supervisor *s)
{
	state_file_each_record(s->state_dir, "sandboxes", sandbox_record_load, s);
}

struct namespace_ask {
	char id[SANDBOX_ID_LEN + 1];
	int slot;
};

static void
slot_namespace_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct namespace_ask *a = ud;
	struct sandbox *sb = sandbox_find(sup, a->id);
	if (r < 0 || n_fds != 1)
		log_warning_errno(
			r < 0 ? r : -EPROTO,
			"Sandbox %s: netnsd did not give back its namespace (%s): it cannot "
			"be snapshotted",
			a->id, helper_message(resp, "no answer"));
	else if (sb && sb->slot == a->slot && sb->nsfd < 0 && sb->state != SANDBOX_DESTROYING) {
		sb->nsfd = fds[0];
		fds[0] = -1;
	}
	ipc_close_fds(fds, n_fds);
	free(a);
}

/* The fd of the namespace a claim gave: a restarted supervisor asks netnsd for it again, so a
 * re-adopted sandbox can still be snapshotted (a gVisor checkpoint ends the runtime, and its
 * restore into the same slot must show the slot's namespace). */
static void
namespace_reopen(struct sandbox *sb)
{
	if (sb->nsfd >= 0 || sb->slot < 0)
		return;
	struct namespace_ask *a = calloc(1, sizeof *a);
	if (!a)
		return;
	snprintf(a->id, sizeof a->id, "%s", sb->id);
	a->slot = sb->slot;
	Warren__V1__SlotNamespaceRequest q = WARREN__V1__SLOT_NAMESPACE_REQUEST__INIT;
	q.id = sb->id;
	q.slot = (uint32_t)sb->slot;
	if (netnsd_client_slot_namespace(&q, 10000, slot_namespace_done, a) < 0)
		free(a);
}

static void
reconcile_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	ipc_close_fds(fds, n_fds);
	if (r < 0 || !resp || resp->body_case != WARREN__V1__RESPONSE__BODY_LIST_SANDBOXES) {
		log_warning_errno(r, "Could not list netnsd's sandboxes: %m");
		return;
	}
	const Warren__V1__ListSandboxesResponse *l = resp->list_sandboxes;
	for (struct sandbox *sb = sup->sandboxes, *next; sb; sb = next) {
		next = sb->next;
		if (sb->state == SANDBOX_CREATING || sb->spawning)
			continue;
		const Warren__V1__SandboxInfo *info = NULL;
		for (size_t i = 0; i < l->n_sandboxes; i++)
			if (!strcmp(l->sandboxes[i]->id, sb->id))
				info = l->sandboxes[i];
		if (sb->state == SANDBOX_DESTROYING) {
			sb->runtime_alive = info != NULL;
			sandbox_release(sb, true);
		} else if (info && info->pid > 0) {
			sb->runtime_alive = true;
			sb->pid = info->pid;
			sandbox_set_cgroup(sb, info->cgroup);
			/* a runtime that came up while its answer was lost (netnsd restarted): the
			 * sandbox had given its slot up as failed; netnsd's slot is the truth, or a
			 * Destroy would never release it */
			if (sb->slot < 0)
				sb->slot = (int)info->slot;
			if (info->frozen)
				sandbox_transition(sb, SANDBOX_EVENT_READOPT_FROZEN, NULL);
			else if (sb->state != SANDBOX_RUNNING)
				sandbox_transition(sb, SANDBOX_EVENT_READOPT_ALIVE, NULL);
			log_info("Re-adopted sandbox %s (%s)", sb->id,
				 sandbox_state_to_string(sb->state));
			route_push(sb, NULL, NULL);
			namespace_reopen(sb);
		} else if (sb->state == SANDBOX_STARTING || sb->state == SANDBOX_RUNNING ||
			   sb->state == SANDBOX_FROZEN) {
			sb->runtime_alive = info != NULL;
			sandbox_fail(sb, SANDBOX_FAILED,
				     "its runtime went away while Warren restarted");
		} else {
			sb->runtime_alive = info != NULL;
			route_push(sb, NULL, NULL);
			if (sb->runtime_alive || sb->slot >= 0)
				sandbox_release(sb, false);
		}
	}
	/* Runtimes nobody remembers (a crash between spawn and record) are removed. */
	for (size_t i = 0; i < l->n_sandboxes; i++) {
		if (sandbox_find(sup, l->sandboxes[i]->id))
			continue;
		log_warning("Removing orphan sandbox %s", l->sandboxes[i]->id);
		struct sandbox *sb = sandbox_new(sup, l->sandboxes[i]->id, "");
		if (!sb) {
			log_error("Orphan sandbox %s: out of memory, left to the next re-sync",
				  l->sandboxes[i]->id);
			continue;
		}
		sb->slot = (int)l->sandboxes[i]->slot;
		sb->runtime_alive = true;
		sb->state = SANDBOX_DESTROYING;
		sandbox_release(sb, true);
	}
	sup->readopted = true;
}

void
sandboxes_reconcile(struct supervisor *s)
{
	Warren__V1__ListSandboxesRequest q = WARREN__V1__LIST_SANDBOXES_REQUEST__INIT;
	netnsd_client_list_sandboxes(&q, 10000, reconcile_done, NULL);
}
