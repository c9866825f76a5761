/* Sandbox lifecycle in the supervisor: the state machine, the create flow (claim a slot from
 * netnsd -> route in the gateway -> reply -> spawn in netnsd -> ready from the gateway's probe),
 * exits, destroy, freeze/thaw. Records are written by state-file.c and read back, with the
 * runtimes netnsd still runs re-adopted, by readopt.c. */
#include "fault.h"
#include "clock.h"
#include "log.h"
#include "netnsd-client.h"
#include "gateway-client.h"
#include "macro.h"
#include "agent-token.h"
#include "logs.h"
#include "sandbox-egress.h"
#include "state-file.h"
#include "supervisor.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define DEFAULT_POOL_TIMEOUT_MS 30000
#define DEFAULT_START_TIMEOUT_MS 60000

struct supervisor *sup;
static const struct sandbox_hooks *hooks;

void
sandbox_hooks_set(const struct sandbox_hooks *h)
{
	hooks = h;
}

/* The D-Bus layer's signals and the features' news (warm, fork jobs, reclaim, exec, metrics) go
 * through the hooks main.c registers: sandbox.c calls nothing above. */
static void
announce(struct sandbox *sb, bool added)
{
	if (hooks && hooks->announced)
		hooks->announced(sb, added);
}

struct sandbox *
sandbox_find(struct supervisor *s, const char *id)
{
	for (struct sandbox *sb = s->sandboxes; sb; sb = sb->next)
		if (!strcmp(sb->id, id))
			return sb;
	return NULL;
}

struct template *
template_find(struct supervisor *s, const char *name)
{
	for (struct template *t = s->templates; t; t = t->next)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

bool
sandbox_visible(const struct sandbox *sb)
{
	return sb->state != SANDBOX_CREATING && !sb->standby;
}

unsigned
sandbox_count(struct supervisor *s)
{
	unsigned n = 0;
	for (struct sandbox *sb = s->sandboxes; sb; sb = sb->next)
		n++;
	return n;
}

char *
sandbox_url(struct sandbox *sb)
{
	char *url = NULL;
	const char *port = strrchr(sup->gateway_url, ':');
	if (asprintf(&url, "http://%s.%s%s/", sb->id, sup->gateway_domain,
		     port && port > strchr(sup->gateway_url, ':') ? port : "") < 0)
		return NULL;
	return url;
}

struct sandbox *
sandbox_new(struct supervisor *s, const char *id, const char *template_name)
{
	struct sandbox *sb = calloc(1, sizeof *sb);
	if (!sb)
		return NULL;
	snprintf(sb->id, sizeof sb->id, "%s", id);
	snprintf(sb->path, sizeof sb->path, SANDBOX_PREFIX "/%s", id);
	snprintf(sb->template_name, sizeof sb->template_name, "%s", template_name);
	sb->backend = BACKEND_GVISOR;
	sb->slot = -1;
	sb->nsfd = -1;
	sb->image_fd = -1;
	sb->created_usec = realtime_usec();
	sb->t_create_us = now_usec();
	sb->next = s->sandboxes;
	s->sandboxes = sb;
	return sb;
}

void
sandbox_forget(struct sandbox *sb)
{
	for (struct sandbox **pp = &sup->sandboxes; *pp; pp = &(*pp)->next)
		if (*pp == sb) {
			*pp = sb->next;
			break;
		}
	if (hooks && hooks->forgotten)
		hooks->forgotten(sb);
	safe_close(sb->nsfd);
	safe_close(sb->image_fd);
	if (sb->fork_job && hooks && hooks->fork_child_done)
		hooks->fork_child_done(sb->fork_job, sb->id, false, "removed while starting");
	if (sb->start_timer)
		event_free(sb->start_timer);
	sd_bus_message_unref(sb->create_msg);
	sd_bus_message_unref(sb->thaw_msg);
	free(sb);
}

static void
reply_create(struct sandbox *sb)
{
	if (sb->fork_job) {
		struct fork_job *j = TAKE_PTR(sb->fork_job);
		if (hooks && hooks->fork_child_done)
			hooks->fork_child_done(j, sb->id, true, NULL);
	}
	if (!sb->create_msg)
		return;
	_cleanup_free_ char *url = sandbox_url(sb);
	sd_bus_reply_method_return(sb->create_msg, "sos", sb->id, sb->path, url ? url : "");
	sb->create_msg = sd_bus_message_unref(sb->create_msg);
}

static void
fail_create(struct sandbox *sb, const char *name, const char *fmt, const char *arg)
{
	if (sb->fork_job) {
		struct fork_job *j = TAKE_PTR(sb->fork_job);
		char msg[300];
		snprintf(msg, sizeof msg, fmt, arg);
		if (hooks && hooks->fork_child_done)
			hooks->fork_child_done(j, sb->id, false, msg);
	}
	if (!sb->create_msg)
		return;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_error_setf(&e, name, fmt, arg);
	sd_bus_reply_method_error(sb->create_msg, &e);
	sd_bus_error_free(&e);
	sb->create_msg = sd_bus_message_unref(sb->create_msg);
}

void
ipc_ignore_reply(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	ipc_close_fds(fds, n_fds);
	if (r < 0)
		log_debug_errno(r, "Helper call %s: %s", (const char *)ud,
				helper_message(resp, ""));
}

/* Tell the gateway how to reach the sandbox and in which state it is. */
void
route_push(struct sandbox *sb, ipc_reply_fn cb, void *ud)
{
	struct template *t = template_find(sup, sb->template_name);
	Warren__V1__SetRouteRequest q = WARREN__V1__SET_ROUTE_REQUEST__INIT;
	q.id = sb->id;
	q.address = sb->address;
	q.port = t ? t->port : 8080;
	q.reason = sb->reason;
	q.start_timeout_ms = sb->start_timeout_ms ? sb->start_timeout_ms : DEFAULT_START_TIMEOUT_MS;
	q.idle_ms = t && t->idle_ms ? t->idle_ms : sup->idle_ms;
	q.probe_http = sb->backend == BACKEND_MICROVM;
	q.runtime_up = sb->runtime_alive;
	char tok[AGENT_TOKEN_LEN + 1] = "";
	q.agent_api = agent_token_api_route(sb->id);
	if (agent_token_get(sb->id, tok) < 0)
		tok[0] = 0; /* no token: only agent_api opens the agent's port */
	q.agent_token = tok;
	switch (sb->state) {
	case SANDBOX_CREATING:
	case SANDBOX_STARTING:
		q.state = WARREN__V1__ROUTE_STATE__ROUTE_STARTING;
		break;
	case SANDBOX_RUNNING:
		q.state = WARREN__V1__ROUTE_STATE__ROUTE_RUNNING;
		break;
	case SANDBOX_FROZEN:
	case SANDBOX_SNAPSHOTTING: /* requests are held while it is checkpointed */
		q.state = WARREN__V1__ROUTE_STATE__ROUTE_FROZEN;
		break;
	default:
		q.state = WARREN__V1__ROUTE_STATE__ROUTE_FAILED;
		if (!sb->reason[0])
			q.reason = (char *)sandbox_state_to_string(sb->state);
	}
	if (gateway_client_set_route(&q, 5000, cb ? cb : ipc_ignore_reply,
				     cb ? ud : (void *)"set_route") < 0 &&
	    cb)
		cb(NULL, -ENOTCONN, NULL, 0, ud);
}

/* The owner changed after the route was pushed (a fork child): push again, agent_api follows. */
void
sandbox_route_refresh(const char *id)
{
	struct sandbox *sb = sandbox_find(sup, id);
	if (sb)
		route_push(sb, NULL, NULL);
}

static void
route_remove(struct sandbox *sb)
{
	Warren__V1__RemoveRouteRequest q = WARREN__V1__REMOVE_ROUTE_REQUEST__INIT;
	q.id = sb->id;
	gateway_client_remove_route(&q, 5000, ipc_ignore_reply, "remove_route");
}

static void
sandbox_set_state(struct sandbox *sb, enum sandbox_state st, const char *reason)
{
	if (sb->state == st && !reason)
		return;
	sb->state = st;
	if (reason)
		snprintf(sb->reason, sizeof sb->reason, "%s", reason);
	log_info("Sandbox %s: %s%s%s", sb->id, sandbox_state_to_string(st), reason ? ": " : "",
		 reason ? reason : "");
	if (st != SANDBOX_DESTROYING && st != SANDBOX_CREATING)
		state_write_sandbox(sup, sb);
	if (hooks && hooks->state_changed)
		hooks->state_changed(sb);
}

/* Every state change goes through here: the table (sandbox-state.c) says whether the sandbox's
 * state accepts ev and what it moves to; a pair it does not list is logged and refused. */
int
sandbox_transition(struct sandbox *sb, enum sandbox_event ev, const char *reason)
{
	int st = sandbox_state_next(sb->state, ev);
	if (st < 0)
		return log_error_errno(st, "Sandbox %s: event %s refused in state %s", sb->id,
				       sandbox_event_to_string(ev),
				       sandbox_state_to_string(sb->state));
	sandbox_set_state(sb, (enum sandbox_state)st, reason);
	return 0;
}

/* ---- releasing what a sandbox holds in netnsd ---- */

struct release {
	char id[SANDBOX_ID_LEN + 1];
	int slot;
	bool forget;
};

static void
release_finish(struct release *rl)
{
	struct sandbox *sb = sandbox_find(sup, rl->id);
	if (rl->forget && sb) {
		state_remove_sandbox(sup, sb->id);
		announce(sb, false);
		log_info("Sandbox %s removed", sb->id);
		sandbox_forget(sb);
	}
	free(rl);
}

static void
release_slot_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	ipc_close_fds(fds, n_fds);
	if (r < 0 && r != -ENOENT)
		log_warning_errno(r, "Releasing slot: %s", helper_message(resp, "%m"));
	release_finish(ud);
}

static void
release_slot(struct release *rl)
{
	if (rl->slot < 0) {
		release_finish(rl);
		return;
	}
	Warren__V1__ReleaseSlotRequest q = WARREN__V1__RELEASE_SLOT_REQUEST__INIT;
	q.slot = (uint32_t)rl->slot;
	if (netnsd_client_release_slot(&q, 10000, release_slot_done, rl) < 0)
		release_finish(rl);
}

static void
destroy_runtime_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	ipc_close_fds(fds, n_fds);
	struct release *rl = ud;
	if (r < 0 && r != -ENOENT)
		log_warning_errno(r, "Destroying runtime: %s", helper_message(resp, "%m"));
	if (r < 0 && r != -ENOENT && resp) {
		/* netnsd answered that the runtime could not be removed: its slot is not free and
		 * is not given back (netnsd still lists the runtime; a re-sync removes it) */
		log_warning("Sandbox %s: keeping slot %d claimed, its runtime may live", rl->id,
			    rl->slot);
		rl->slot = -1;
	}
	release_slot(rl);
}

/* Give back the runtime and the slot; then forget the sandbox if asked. */
void
sandbox_release(struct sandbox *sb, bool forget)
{
	struct release *rl = calloc(1, sizeof *rl);
	if (!rl) {
		/* nothing given back: the record keeps its slot and runtime, and the re-sync
		 * after a restart (readopt.c) releases what is left */
		log_error("Sandbox %s: out of memory, its slot %d is not released", sb->id,
			  sb->slot);
		return;
	}
	snprintf(rl->id, sizeof rl->id, "%s", sb->id);
	rl->slot = sb->slot;
	rl->forget = forget;
	sb->slot = -1;
	sb->nsfd = safe_close(sb->nsfd);
	/* and the image it was restored from: nothing restores into a released slot, and
	 * RemoveTag waits for every sandbox that still holds its tag's image */
	sb->image_fd = safe_close(sb->image_fd);
	if (!sb->runtime_alive) {
		release_slot(rl);
		return;
	}
	sb->runtime_alive = false;
	Warren__V1__DestroySandboxRequest q = WARREN__V1__DESTROY_SANDBOX_REQUEST__INIT;
	q.id = sb->id;
	if (netnsd_client_destroy_sandbox(&q, 60000, destroy_runtime_done, rl) < 0)
		release_slot(rl);
}

/* The sandbox stopped on its own or could not start: keep the record (and a route answering
 * 502 with the reason) until Destroy(), give back everything else. */
void
sandbox_fail(struct sandbox *sb, enum sandbox_state st, const char *reason)
{
	/* Only a sandbox that has a runtime, or is getting one, can end; the first end stands: a
	 * later exit event (the runtime the first end's release killed) or failure does not
	 * replace its reason or release it twice, and a CREATING sandbox has nothing running */
	if (sb->state != SANDBOX_STARTING && sb->state != SANDBOX_RUNNING &&
	    sb->state != SANDBOX_FROZEN && sb->state != SANDBOX_SNAPSHOTTING) {
		log_debug("Sandbox %s is %s already: \"%s\" not recorded", sb->id,
			  sandbox_state_to_string(sb->state), reason);
		return;
	}
	if (sb->warmer) {
		sb->warmer = false;
		if (hooks && hooks->warmer_done)
			hooks->warmer_done(sb->template_name, backend_to_string(sb->backend),
					   false);
	}
	fail_create(sb, ERR("SpawnFailed"), "Sandbox failed: %s", reason);
	sandbox_transition(sb, st == SANDBOX_EXITED ? SANDBOX_EVENT_EXITED : SANDBOX_EVENT_FAILED,
			   reason);
	if (sb->standby) { /* nobody will see it: give everything back */
		sandbox_destroy(sb);
		return;
	}
	route_push(sb, NULL, NULL);
	if (sb->start_timer)
		evtimer_del(sb->start_timer);
	sandbox_release(sb, false);
}

int
sandbox_destroy(struct sandbox *sb)
{
	if (sb->state == SANDBOX_DESTROYING)
		return 0;
	fault_point("destroy");
	fail_create(sb, ERR("Destroyed"), "Sandbox %s was destroyed while starting", sb->id);
	sandbox_transition(sb, SANDBOX_EVENT_DESTROY, NULL);
	route_remove(sb);
	if (sb->spawning) {
		sb->destroy_wanted = true; /* finished when the spawn answers */
		return 0;
	}
	sandbox_release(sb, true);
	return 0;
}

/* ---- create ---- */

static void
start_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct sandbox *sb = arg;
	if (sb->state != SANDBOX_STARTING)
		return;
	if (sb->spawning) { /* runsc has not answered yet: fail once it has */
		struct timeval tv = {1, 0};
		evtimer_add(sb->start_timer, &tv);
		return;
	}
	char reason[128];
	snprintf(reason, sizeof reason, "did not answer on its port within %u ms",
		 sb->start_timeout_ms);
	sandbox_fail(sb, SANDBOX_FAILED, reason);
}

static void sandbox_ready(struct sandbox *sb);

void
sandbox_set_cgroup(struct sandbox *sb, const char *cgroup)
{
	/* netnsd is trusted, but a name that is not a plain cgroup path is never opened */
	if (cgroup && cgroup_path_valid(cgroup))
		snprintf(sb->cgroup, sizeof sb->cgroup, "%s", cgroup);
	else
		sb->cgroup[0] = '\0';
}

static void
spawn_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	ipc_close_fds(fds, n_fds);
	struct sandbox *sb = sandbox_find(sup, ud);
	free(ud);
	if (!sb)
		return;
	sb->spawning = false;
	sb->image_fd = safe_close(sb->image_fd);
	/* the namespace fd stays: a snapshot restores the sandbox into the same slot */
	if (r == 0 && resp &&
	    (resp->body_case == WARREN__V1__RESPONSE__BODY_SPAWN_SANDBOX ||
	     resp->body_case == WARREN__V1__RESPONSE__BODY_RESTORE_SANDBOX)) {
		sb->runtime_alive = true;
		sb->pid = resp->spawn_sandbox->pid;
		sandbox_set_cgroup(sb, resp->spawn_sandbox->cgroup);
		sb->t_spawned_us = now_usec();
	}
	bool vm = sb->backend == BACKEND_MICROVM;
	if (sb->destroy_wanted) {
		sandbox_release(sb, true);
		return;
	}
	if (sb->runtime_alive && sb->state == SANDBOX_STARTING) {
		if (vm && resp && resp->body_case == WARREN__V1__RESPONSE__BODY_RESTORE_SANDBOX) {
			/* A restored microVM runs the app its image was taken of, and its agent has
			 * answered: it is ready without a probe (which would cost one more request
			 * through the emulated guest). */
			sandbox_ready(sb);
		}
		route_push(sb, NULL, NULL); /* running, or: the gateway probes it from now */
	}
	if (!sb->runtime_alive) {
		char reason[256];
		snprintf(reason, sizeof reason, "could not start: %s",
			 helper_message(resp, strerror(-r)));
		sandbox_fail(sb, SANDBOX_FAILED, reason);
	}
}

static void
spawn(struct sandbox *sb)
{
	struct template *t = template_find(sup, sb->template_name);
	if (!t) {
		sandbox_fail(sb, SANDBOX_FAILED, "its template was removed");
		return;
	}
	Warren__V1__SpawnSandboxRequest q = WARREN__V1__SPAWN_SANDBOX_REQUEST__INIT;
	q.id = sb->id;
	q.slot = (uint32_t)sb->slot;
	q.rootfs = t->rootfs;
	q.argv = t->argv;
	q.n_argv = t->argc;
	char **env = NULL;	    /* the template's env, cwd and user (template-options.c) */
	char *sid = strdup(sb->id); /* spawn_done's: it finds the sandbox again by id */
	if (!sid || template_spawn_fill(t, sb->id, &q, &env) < 0) {
		free(sid);
		sandbox_fail(sb, SANDBOX_FAILED, "out of memory");
		return;
	}
	q.port = t->port;
	q.memory_limit = t->memory_limit;
	q.pids_limit = t->pids_max;
	q.cpu_millis = t->cpu_millis;
	q.backend = (Warren__V1__Backend)sb->backend;
	Warren__V1__RestoreSandboxRequest rq = WARREN__V1__RESTORE_SANDBOX_REQUEST__INIT;
	int fds[2] = {sb->nsfd, sb->image_fd};
	sb->spawning = true;
	int r;
	if (sb->image_fd >= 0) {
		rq.spawn = &q;
		r = netnsd_client_restore_sandbox(&rq, fds, 2, 120000, spawn_done, sid);
	} else {
		r = netnsd_client_spawn_sandbox(&q, fds, 1, 120000, spawn_done, sid);
	}
	for (size_t i = 0; env[i]; i++)
		free(env[i]);
	free(env);
	if (r < 0) {
		free(sid); /* not taken: spawn_done is not called */
		sb->spawning = false;
		sandbox_fail(sb, SANDBOX_FAILED, "netnsd is not available");
	}
}

static void
route_set_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	ipc_close_fds(fds, n_fds);
	struct sandbox *sb = sandbox_find(sup, ud);
	free(ud);
	if (!sb)
		return;
	if (r < 0)
		log_warning_errno(r,
				  "Sandbox %s: gateway route not set yet (%m); it is pushed again "
				  "when the gateway is back",
				  sb->id);
	if (sb->state == SANDBOX_DESTROYING) {
		sandbox_release(sb, true);
		return;
	}
	/* it ended while its route was set (its start timeout, for one): its slot is given back,
	 * and a spawn now would start a runtime in no slot */
	if (sb->state != SANDBOX_STARTING)
		return;
	if (!sb->reply_when_running)
		reply_create(sb);
	spawn(sb);
}

/* A slot claimed for a create that is gone (RemoveTemplate, or a warm create given up, while
 * the claim waited; or the claim's call timed out before netnsd granted it): netnsd holds it for
 * nobody until it is given back. */
static void
release_orphan_claim(const IpcResponse *resp, int r)
{
	if (r < 0 || !resp || resp->body_case != WARREN__V1__RESPONSE__BODY_CLAIM_SLOT)
		return;
	struct release *rl = calloc(1, sizeof *rl); /* no id: nothing to forget after */
	if (!rl) {
		log_error("Slot %u: out of memory, not given back", resp->claim_slot->slot);
		return;
	}
	rl->slot = (int)resp->claim_slot->slot;
	log_info("Slot %d was claimed for a create that is gone: given back", rl->slot);
	release_slot(rl);
}

/* netnsd granted the claim after claim_done heard the timeout (and failed the create) */
static void
claim_late(const IpcResponse *resp, int *fds, size_t n_fds)
{
	ipc_close_fds(fds, n_fds);
	release_orphan_claim(resp, resp->error);
}

static void
claim_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct sandbox *sb = sandbox_find(sup, ud);
	free(ud);
	if (!sb || sb->state != SANDBOX_CREATING) {
		ipc_close_fds(fds, n_fds);
		release_orphan_claim(resp, r);
		return;
	}
	if (r < 0 || !resp || resp->body_case != WARREN__V1__RESPONSE__BODY_CLAIM_SLOT ||
	    n_fds != 1) {
		ipc_close_fds(fds, n_fds);
		if (r == -EAGAIN)
			fail_create(sb, ERR("PoolExhausted"),
				    "No namespace slot became free in time: %s",
				    helper_message(resp, "pool exhausted"));
		else if (r == -ENOMEM) /* netnsd's admission: the host's memory is spoken for */
			fail_create(sb, ERR("HostFull"), "The host cannot hold another sandbox: %s",
				    helper_message(resp, "host full"));
		else
			fail_create(sb, ERR("HelperUnavailable"),
				    "netnsd could not claim a slot: %s",
				    helper_message(resp, strerror(-r)));
		sandbox_forget(sb);
		return;
	}
	fault_point("claim"); /* the slot granted and not yet recorded: netnsd takes it back */
	sb->slot = (int)resp->claim_slot->slot;
	snprintf(sb->address, sizeof sb->address, "%s", resp->claim_slot->address);
	sb->nsfd = fds[0];
	sb->t_claimed_us = now_usec();
	/* From here the sandbox is visible and persisted. */
	sandbox_transition(sb, SANDBOX_EVENT_CLAIMED, NULL);
	if (!sb->standby)
		announce(sb, true);
	sb->start_timer = evtimer_new(sup->dc.base, start_timeout, sb);
	char *rid = strdup(sb->id); /* route_set_done's: it finds the sandbox again by id */
	if (!sb->start_timer || !rid) {
		free(rid);
		sandbox_fail(sb, SANDBOX_FAILED, "out of memory");
		return;
	}
	struct timeval tv = {sb->start_timeout_ms / 1000, (sb->start_timeout_ms % 1000) * 1000};
	evtimer_add(sb->start_timer, &tv);
	route_push(sb, route_set_done, rid);
}

static int
create_common(struct supervisor *s, sd_bus_message *m, struct template *t, const char *backend,
	      uint32_t pool_timeout_ms, uint32_t start_timeout_ms, bool wait, int image_fd,
	      const char *tag, struct fork_job *job, struct sandbox **out, sd_bus_error *err)
{
	if (!helper(HELPER_NETNSD))
		return sd_bus_error_setf(err, ERR("HelperUnavailable"),
					 "warren-netnsd is not connected; is it running?");
	int b = backend_from_string(backend); /* NULL: snapshotd named a number outside the enum */
	if (b < 0)
		return sd_bus_error_setf(err, SD_BUS_ERROR_INVALID_ARGS, "unknown backend");
	char id[SANDBOX_ID_LEN + 1];
	do
		sandbox_id_new(id);
	while (sandbox_find(s, id));
	struct sandbox *sb = sandbox_new(s, id, t->name);
	if (!sb)
		return sd_bus_error_set_errno(err, ENOMEM);
	sb->backend = b;
	sb->state = SANDBOX_CREATING;
	sb->create_msg = m ? sd_bus_message_ref(m) : NULL;
	logs_owner_set(sb->id, m);
	if (image_fd >= 0) {
		sb->image_fd = fcntl(image_fd, F_DUPFD_CLOEXEC, 3);
		snprintf(sb->restoring_tag, sizeof sb->restoring_tag, "%s", tag);
	}
	sb->fork_job = job;
	sb->reply_when_running = wait;
	sb->start_timeout_ms = start_timeout_ms ? start_timeout_ms : DEFAULT_START_TIMEOUT_MS;
	Warren__V1__ClaimSlotRequest q = WARREN__V1__CLAIM_SLOT_REQUEST__INIT;
	q.timeout_ms = pool_timeout_ms ? pool_timeout_ms : DEFAULT_POOL_TIMEOUT_MS;
	/* a fork child's (job) is its tag's; else the create's, else the template's; allow_outbound
	 * for a netnsd that knows only that (an allow-list is then "off" there: never more open).
	 * A tag without a record (lost, or from before records) gives "off", never the template's:
	 * that could be more open than the parent was. */
	if (!job)
		sandbox_egress_for_create(m, t, sb->egress, sizeof sb->egress);
	else if (!sandbox_egress_of_tag(tag, sb->egress, sizeof sb->egress)) {
		snprintf(sb->egress, sizeof sb->egress, "off");
		log_warning("Sandbox %s: tag %s has no egress record: the fork child starts with "
			    "egress off (SetEgress opens it)",
			    sb->id, tag);
	}
	sandbox_egress_record(sb);
	q.egress = sb->egress;
	q.allow_outbound = !strcmp(sb->egress, "on");
	char *cid = strdup(id); /* claim_done's: it finds the sandbox again by id */
	int r = cid ? netnsd_client_claim_slot(&q, q.timeout_ms + 5000, claim_done, cid, claim_late)
		    : -ENOMEM;
	if (r < 0) {
		free(cid); /* not taken: claim_done is not called */
		sb->create_msg = sd_bus_message_unref(sb->create_msg);
		sb->fork_job = NULL; /* the caller reports it */
		sandbox_forget(sb);
		return sd_bus_error_set_errnof(err, -r, "netnsd: %s", strerror(-r));
	}
	if (out)
		*out = sb;
	return 1; /* answered later */
}

int
sandbox_create(struct supervisor *s, sd_bus_message *m, struct template *t, const char *backend,
	       uint32_t pool_timeout_ms, uint32_t start_timeout_ms, bool wait, sd_bus_error *err)
{
	return create_common(s, m, t, backend, pool_timeout_ms, start_timeout_ms, wait, -1, NULL,
			     NULL, NULL, err);
}

int
sandbox_create_restoring(struct supervisor *s, sd_bus_message *m, struct template *t,
			 const char *backend, uint32_t pool_timeout_ms, uint32_t start_timeout_ms,
			 bool wait, int image_fd, const char *tag, sd_bus_error *err)
{
	return create_common(s, m, t, backend, pool_timeout_ms, start_timeout_ms, wait, image_fd,
			     tag, NULL, NULL, err);
}

struct sandbox *
sandbox_create_internal(struct supervisor *s, struct template *t, const char *backend)
{
	struct sandbox *sb = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	if (create_common(s, NULL, t, backend, 0, 0, false, -1, NULL, NULL, &sb, &e) < 0)
		log_warning("Cannot start a sandbox of %s: %s", t->name, e.message);
	sd_bus_error_free(&e);
	return sb;
}

struct sandbox *
sandbox_create_standby(struct supervisor *s, struct template *t, const char *backend, int image_fd,
		       const char *tag)
{
	struct sandbox *sb = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	if (create_common(s, NULL, t, backend, 0, 0, false, image_fd, tag, NULL, &sb, &e) < 0)
		log_warning("Cannot restore a standby sandbox of %s: %s", t->name, e.message);
	else
		sb->standby = true; /* before its claim is answered: it is never announced */
	sd_bus_error_free(&e);
	return sb;
}

void
sandbox_take_standby(struct sandbox *sb, sd_bus_message *m)
{
	sb->standby = false;
	logs_owner_set(sb->id, m);
	route_push(sb, NULL, NULL); /* its owner decides whether its agent's port is agent_api */
	sb->created_usec = realtime_usec();
	sb->t_create_us = now_usec();
	state_write_sandbox(sup, sb);
	announce(sb, true);
	_cleanup_free_ char *url = sandbox_url(sb);
	sd_bus_reply_method_return(m, "sos", sb->id, sb->path, url ? url : "");
	log_info("Sandbox %s: taken from the standby sandboxes of %s", sb->id, sb->template_name);
}

int
sandbox_create_from_image(struct supervisor *s, struct template *t, const char *backend,
			  int image_fd, const char *tag, struct fork_job *job, sd_bus_error *err)
{
	return create_common(s, NULL, t, backend, 0, 0, false, image_fd, tag, job, NULL, err);
}

/* ---- snapshot support: the parent pauses, is checkpointed, then restored in place ---- */

void
sandbox_snapshot_begin(struct sandbox *sb)
{
	sandbox_transition(sb, SANDBOX_EVENT_SNAPSHOT_BEGIN, NULL);
	route_push(sb, NULL, NULL);
}

/* The snapshot is over without a restore (it failed early, or the VM resumed in place). */
void
sandbox_snapshot_aborted(struct sandbox *sb)
{
	if (sb->state != SANDBOX_SNAPSHOTTING)
		return;
	sandbox_transition(sb, SANDBOX_EVENT_SNAPSHOT_ABORTED, NULL);
	route_push(sb, NULL, NULL);
}

void
sandbox_restore(struct sandbox *sb, int image_fd, const char *tag, uint64_t pause_started)
{
	/* Destroyed while its snapshot was written: the destroy gave back the slot and its
	 * namespace, and its release removes the record; a restore now would bring it back */
	if (sb->state == SANDBOX_DESTROYING) {
		log_info("Sandbox %s was destroyed during its snapshot: not restored", sb->id);
		return;
	}
	/* It ended meanwhile (its slot is given back: there is nothing to restore into), or a
	 * netnsd restart during the snapshot showed its runtime alive and re-adopted it: a restore
	 * would start a second runtime under its id */
	if (sb->state != SANDBOX_SNAPSHOTTING) {
		log_info("Sandbox %s is %s after its snapshot: not restored", sb->id,
			 sandbox_state_to_string(sb->state));
		return;
	}
	if (sb->slot < 0) { /* a re-sync after a netnsd restart gave it back */
		sandbox_fail(sb, SANDBOX_FAILED, "its slot was given back during its snapshot");
		return;
	}
	sb->runtime_alive = false;
	sb->image_fd = fcntl(image_fd, F_DUPFD_CLOEXEC, 3);
	snprintf(sb->restoring_tag, sizeof sb->restoring_tag, "%s", tag);
	sb->t_pause_us = pause_started;
	sandbox_transition(sb, SANDBOX_EVENT_RESTORE, NULL);
	route_push(sb, NULL, NULL);
	spawn(sb);
}

void
sandbox_restore_failed(struct sandbox *sb, const char *why)
{
	if (sb->state != SANDBOX_SNAPSHOTTING) /* destroyed as asked, ended, or re-adopted */
		return;
	sandbox_fail(sb, SANDBOX_FAILED, why);
}

/* ---- events from the helpers ---- */

/* The sandbox answers: running, its create answered. */
static void
sandbox_ready(struct sandbox *sb)
{
	if (hooks && hooks->answered)
		hooks->answered(sb);
	sb->t_ready_us = now_usec();
	if (sb->t_pause_us) {
		sb->last_pause_us = sb->t_ready_us - sb->t_pause_us;
		sb->t_pause_us = 0;
		log_info("Sandbox %s answers again after a %llu ms pause for its snapshot", sb->id,
			 (unsigned long long)(sb->last_pause_us / 1000));
	}
	if (sb->start_timer)
		evtimer_del(sb->start_timer);
	sandbox_transition(sb, SANDBOX_EVENT_READY, NULL);
	reply_create(sb);
	if (sb->warmer && hooks && hooks->warmer_ready)
		hooks->warmer_ready(sb);
}

void
sandbox_on_event(const IpcResponse *ev)
{
	struct sandbox *sb;
	switch (ev->body_case) {
	case WARREN__V1__RESPONSE__BODY_ROUTE_READY:
		sb = sandbox_find(sup, ev->route_ready->id);
		if (sb && sb->state == SANDBOX_STARTING)
			sandbox_ready(sb);
		return;
	case WARREN__V1__RESPONSE__BODY_SANDBOX_EXITED: {
		sb = sandbox_find(sup, ev->sandbox_exited->id);
		if (!sb || sb->state == SANDBOX_DESTROYING)
			return;
		char reason[128];
		const Warren__V1__SandboxExitedEvent *e = ev->sandbox_exited;
		if (sb->backend == BACKEND_MICROVM && !e->signal && e->exit_status == 0)
			/* the agent powers the guest off when the program ends; its status is on
			 * the guest console (netnsd --vm-console) */
			snprintf(reason, sizeof reason,
				 "its program ended and the microVM powered off");
		else if (sb->backend == BACKEND_MICROVM)
			snprintf(reason, sizeof reason, "its VMM died (%s %d)",
				 e->signal ? "signal" : "status",
				 e->signal ? e->signal : e->exit_status);
		else if (e->signal)
			snprintf(reason, sizeof reason, "its app was killed by signal %d",
				 e->signal);
		else
			snprintf(reason, sizeof reason, "its app exited with status %d",
				 e->exit_status);
		sandbox_fail(sb, e->signal || e->exit_status ? SANDBOX_FAILED : SANDBOX_EXITED,
			     reason);
		return;
	}
	case WARREN__V1__RESPONSE__BODY_ROUTE_IDLE:
		sb = sandbox_find(sup, ev->route_idle->id);
		if (sb && sb->state == SANDBOX_RUNNING &&
		    !(hooks && hooks->idle_deferred && hooks->idle_deferred(sb))) {
			log_info("Sandbox %s is idle: freezing", sb->id);
			freeze_request(sb, true, NULL);
		}
		return;
	case WARREN__V1__RESPONSE__BODY_THAW_NEEDED:
		sb = sandbox_find(sup, ev->thaw_needed->id);
		if (sb && sb->state == SANDBOX_FROZEN)
			freeze_request(sb, false, NULL);
		return;
	default:
		return;
	}
}

/* ---- freeze ---- */

struct freeze_ctx {
	char id[SANDBOX_ID_LEN + 1];
	bool freeze;
	struct operation *op; /* Freeze/Thaw on D-Bus; NULL: the gateway asked */
};

static void
freeze_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct freeze_ctx *f = ud;
	ipc_close_fds(fds, n_fds);
	struct sandbox *sb = sandbox_find(sup, f->id);
	if (r == 0 && sb && (sb->state == SANDBOX_RUNNING || sb->state == SANDBOX_FROZEN)) {
		sandbox_transition(sb, f->freeze ? SANDBOX_EVENT_FROZEN : SANDBOX_EVENT_THAWED,
				   NULL);
		route_push(sb, NULL, NULL);
		if (f->freeze && hooks && hooks->frozen)
			hooks->frozen(sb);
	}
	if (r == 0)
		operation_return(&f->op, "");
	else
		operation_error(&f->op, ERR("BadState"), "%s failed: %s",
				f->freeze ? "Freeze" : "Thaw", helper_message(resp, strerror(-r)));
	free(f);
}

int
freeze_request(struct sandbox *sb, bool freeze, sd_bus_message *m)
{
	if (!freeze && sb->reclaiming) {
		/* snapshotd is pushing its pages out: thaw once it is done, never under it */
		sb->thaw_pending = true;
		if (m && !sb->thaw_msg)
			sb->thaw_msg = sd_bus_message_ref(m);
		else if (m)
			sd_bus_reply_method_return(m, "");
		return 0;
	}
	struct freeze_ctx *f = calloc(1, sizeof *f);
	if (!f)
		return -ENOMEM; /* m, if any, is the caller's to answer */
	f->op = operation_new(m);
	if (m && !f->op) {
		free(f);
		return -ENOMEM;
	}
	snprintf(f->id, sizeof f->id, "%s", sb->id);
	f->freeze = freeze;
	Warren__V1__FreezeSandboxRequest q = WARREN__V1__FREEZE_SANDBOX_REQUEST__INIT;
	q.id = sb->id;
	q.freeze = freeze;
	if (netnsd_client_freeze_sandbox(&q, 10000, freeze_done, f) < 0)
		freeze_done(NULL, -ENOTCONN, NULL, 0, f);
	return 0;
}

int
sandbox_freeze(struct sandbox *sb, bool freeze, sd_bus_message *m)
{
	int r = freeze_request(sb, freeze, m);
	return r < 0 ? r : 1;
}

void
sandboxes_push_routes(struct supervisor *s)
{
	for (struct sandbox *sb = s->sandboxes; sb; sb = sb->next)
		if (sb->state != SANDBOX_CREATING && sb->state != SANDBOX_DESTROYING &&
		    sb->address[0])
			route_push(sb, NULL, NULL);
}
