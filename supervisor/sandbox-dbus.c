/* org.warren.Warren1.Sandbox on /org/warren/Warren1/sandbox/<id> (supervisor): one object per
 * sandbox through a fallback vtable, enumerated for `busctl tree`. */
#include "clock.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "netnsd-client.h"
#include "operation.h"
#include "dbus-input.h"
#include "exec.h"
#include "agent-token.h"
#include "lifetime.h"
#include "logs.h"
#include "owner.h"
#include "sandbox-egress.h"
#include "snapshot.h"
#include "supervisor-dbus.h"
#include "supervisor.h"

#include <stdio.h>
#include <string.h>

static int
sandbox_object_find(sd_bus *bus, const char *path, const char *iface, void *ud, void **found,
		    sd_bus_error *err)
{
	struct supervisor *s = ud;
	_cleanup_free_ char *id = NULL;
	if (sd_bus_path_decode(path, SANDBOX_PREFIX, &id) <= 0)
		return 0;
	struct sandbox *sb = sandbox_find(s, id);
	if (!sb || !sandbox_visible(sb))
		return 0;
	*found = sb;
	return 1;
}

static int
sandbox_node_enumerator(sd_bus *bus, const char *path, void *ud, char ***nodes, sd_bus_error *err)
{
	struct supervisor *s = ud;
	size_t n = sandbox_count(s), i = 0;
	char **v = calloc(n + 1, sizeof *v);
	if (!v)
		return -ENOMEM;
	for (struct sandbox *sb = s->sandboxes; sb; sb = sb->next)
		if (sandbox_visible(sb) && !(v[i++] = strdup(sb->path))) {
			for (size_t k = 0; k < i; k++)
				free(v[k]);
			free(v);
			return -ENOMEM;
		}
	*nodes = v;
	return 0;
}

static int
method_destroy(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	struct sandbox *sb = ud;
	if ((rc_ = owner_check(m, sb, "destroy", err)) < 0)
		return rc_;
	sandbox_destroy(sb);
	return sd_bus_reply_method_return(m, "");
}

static int
method_freeze(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	struct sandbox *sb = ud;
	bool freeze = !strcmp(sd_bus_message_get_member(m), "Freeze");
	if ((rc_ = owner_check(m, sb, freeze ? "freeze" : "thaw", err)) < 0)
		return rc_;
	enum sandbox_state need = freeze ? SANDBOX_RUNNING : SANDBOX_FROZEN;
	if (sb->state == (freeze ? SANDBOX_FROZEN : SANDBOX_RUNNING))
		return sd_bus_reply_method_return(m, "");
	if (sb->state != need)
		return sd_bus_error_setf(err, ERR("BadState"), "Sandbox %s is %s", sb->id,
					 sandbox_state_to_string(sb->state));
	if (freeze && exec_running(sb))
		return sd_bus_error_setf(err, ERR("BadState"),
					 "Sandbox %s runs an exec: freeze it when the exec is done",
					 sb->id);
	return sandbox_freeze(sb, freeze, m);
}

/* SetTimeout(seconds, action): the sandbox is destroyed ("kill") or paused ("pause") seconds
 * from now; 0 clears its lifetime (lifetime.c). */
static int
method_set_timeout(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int r = dbus_input_check(m, err);
	if (r < 0)
		return r;
	struct sandbox *sb = ud;
	if ((r = owner_check(m, sb, "set the timeout of", err)) < 0)
		return r;
	uint64_t seconds;
	const char *action;
	if ((r = sd_bus_message_read(m, "ts", &seconds, &action)) < 0)
		return r;
	if ((r = lifetime_set(sb, seconds, action, err)) < 0)
		return r;
	return sd_bus_reply_method_return(m, "");
}

/* SetEgress(policy): "off", "on" or "CIDR[:PORT],..." (sandbox-egress.c); root and the owner.
 * SetEgressWithinTemplate(policy): the same bounded by the sandbox's template's policy, which ""
 * restores (E2B's PUT /network, whose client may not open what the operator closed). */
static int
method_set_egress(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int r = dbus_input_check(m, err);
	if (r < 0)
		return r;
	struct sandbox *sb = ud;
	if ((r = owner_check(m, sb, "set the egress policy of", err)) < 0)
		return r;
	const char *policy;
	if ((r = sd_bus_message_read(m, "s", &policy)) < 0)
		return r;
	if (!sd_bus_message_is_method_call(m, NULL, "SetEgressWithinTemplate"))
		return sandbox_egress_set(sb, policy, m, err);
	struct template *t = template_find(sup, sb->template_name);
	if (!t)
		return sd_bus_error_setf(
			err, ERR("BadState"),
			"Sandbox %s's template '%s' is gone: nothing bounds its egress", sb->id,
			sb->template_name);
	if (!policy[0])
		policy = sandbox_egress_of_template(t);
	else if ((r = sandbox_egress_within_template(policy, t, err)) < 0)
		return r;
	return sandbox_egress_set(sb, policy, m, err);
}

static int
method_snapshot(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	const char *tag;
	int r = sd_bus_message_read(m, "s", &tag);
	if (r < 0)
		return r;
	r = dbus_input_user_tag(tag, err);
	if (r < 0)
		return r;
	if ((r = owner_check(m, ud, "snapshot", err)) < 0)
		return r;
	return snapshot_start(ud, m, tag, 0, false, err);
}

/* Sandbox.AgentToken, Exec, ExecWithOptions and OpenLogs: moved here verbatim from
 * agent-token.c, exec.c and logs.c, which keep what they call. */

/* Sandbox.AgentToken() -> s: its creator's and root's only, like its logs. */
static int
method_agent_token(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	struct sandbox *sb = ud;
	int r = owner_check(m, sb, "read the agent token of", err);
	if (r < 0)
		return r;
	char tok[AGENT_TOKEN_LEN + 1];
	r = agent_token_get(sb->id, tok);
	if (r < 0) {
		log_error_errno(r, "Sandbox %s: no agent token: %m", sb->id);
		return sd_bus_error_setf(err, SD_BUS_ERROR_FAILED, "Sandbox %s: no agent token: %s",
					 sb->id, strerror(-r));
	}
	r = sd_bus_reply_method_return(m, "s", tok);
	explicit_bzero(tok, sizeof tok);
	return r;
}

/* Exec(argv) and ExecWithOptions(argv, options) */
static int
method_exec(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int r = dbus_input_check(m, err);
	if (r < 0)
		return r;
	struct sandbox *sb = ud;
	if ((r = owner_check(m, sb, "run a command in", err)) < 0)
		return r;
	char **argv = NULL;
	r = sd_bus_message_read_strv(m, &argv);
	if (r < 0)
		return r;
	uint32_t timeout_ms = EXEC_TIMEOUT_DEFAULT;
	if (!strcmp(sd_bus_message_get_member(m), "ExecWithOptions")) {
		r = sd_bus_message_enter_container(m, 'a', "{sv}");
		while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
			const char *key;
			if ((r = sd_bus_message_read(m, "s", &key)) < 0)
				break;
			if (strcmp(key, "timeout_ms")) {
				r = sd_bus_error_setf(err, ERR("InvalidArgument"),
						      "Unknown option '%s' (timeout_ms)", key);
				break;
			}
			if (sd_bus_message_read(m, "v", "u", &timeout_ms) < 0 || !timeout_ms ||
			    timeout_ms > EXEC_TIMEOUT_MAX) {
				r = sd_bus_error_setf(err, ERR("InvalidArgument"),
						      "timeout_ms must be 1-%u (u)",
						      EXEC_TIMEOUT_MAX);
				break;
			}
			r = sd_bus_message_exit_container(m);
		}
		if (r >= 0)
			r = sd_bus_message_exit_container(m);
	}
	if (r >= 0 && (!argv || !argv[0] || !argv[0][0]))
		r = sd_bus_error_setf(err, ERR("InvalidArgument"), "Exec needs a command");
	if (r >= 0 && sb->state != SANDBOX_RUNNING && sb->state != SANDBOX_STARTING)
		r = sd_bus_error_setf(err, ERR("BadState"), "Sandbox %s is %s, not running", sb->id,
				      sandbox_state_to_string(sb->state));
	if (r >= 0) {
		r = exec_start(sb, m, argv, timeout_ms);
		r = r < 0 ? sd_bus_error_setf(err, ERR("HelperUnavailable"), "netnsd: %s",
					      strerror(-r))
			  : 1;
	}
	for (char **a = argv; a && *a; a++)
		free(*a);
	free(argv);
	return r;
}

struct open_logs_ctx {
	struct operation *op;
	char id[SANDBOX_ID_LEN + 1];
};

static void
open_logs_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct open_logs_ctx *c = ud;
	if (r == 0 && resp && resp->body_case == WARREN__V1__RESPONSE__BODY_OPEN_LOGS &&
	    n_fds == 1) {
		if (resp->open_logs->dropped)
			log_debug("Sandbox %s: console log dropped %llu bytes so far", c->id,
				  (unsigned long long)resp->open_logs->dropped);
		operation_return(&c->op, "h", fds[0]);
	} else {
		if (r == -EOPNOTSUPP || (resp && resp->error == -EOPNOTSUPP))
			operation_error(&c->op, ERR("NotSupported"),
					"Sandbox %s: its console could not be opened again after "
					"netnsd restarted, so its output is not kept",
					c->id);
		else
			operation_error(&c->op, ERR("LogsUnavailable"), "Logs of sandbox %s: %s",
					c->id, helper_message(resp, strerror(-r)));
	}
	ipc_close_fds(fds, n_fds);
	free(c);
}

static int
method_open_logs(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int r = dbus_input_check(m, err);
	if (r < 0)
		return r;
	struct sandbox *sb = ud;
	bool follow = false;
	r = sd_bus_message_enter_container(m, 'a', "{sv}");
	if (r < 0)
		return r;
	while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
		const char *key;
		if ((r = sd_bus_message_read(m, "s", &key)) < 0)
			return r;
		if (!strcmp(key, "follow")) {
			int b;
			if ((r = sd_bus_message_read(m, "v", "b", &b)) < 0)
				return sd_bus_error_setf(err, ERR("InvalidArgument"),
							 "follow must be a boolean");
			follow = b;
		} else
			return sd_bus_error_setf(err, ERR("InvalidArgument"),
						 "Unknown option '%s' (follow)", key);
		if ((r = sd_bus_message_exit_container(m)) < 0)
			return r;
	}
	if (r < 0 || (r = sd_bus_message_exit_container(m)) < 0)
		return r;
	if ((r = owner_check(m, sb, "read the logs of", err)) < 0)
		return r;
	/* an exited or failed sandbox's log is kept by the spawner after its runtime is gone */
	if (sb->state == SANDBOX_CREATING || sb->state == SANDBOX_DESTROYING ||
	    (!sb->runtime_alive && sb->state != SANDBOX_EXITED && sb->state != SANDBOX_FAILED))
		return sd_bus_error_setf(err, ERR("BadState"),
					 "Sandbox %s has no runtime (%s): no logs to read", sb->id,
					 sandbox_state_to_string(sb->state));
	struct open_logs_ctx *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->op = operation_new(m);
	if (!c->op) {
		free(c);
		return -ENOMEM;
	}
	snprintf(c->id, sizeof c->id, "%s", sb->id);
	Warren__V1__OpenLogsRequest q = WARREN__V1__OPEN_LOGS_REQUEST__INIT;
	q.id = sb->id;
	q.follow = follow;
	r = netnsd_client_open_logs(&q, 10000, open_logs_done, c);
	if (r < 0) {
		operation_cancel(&c->op);
		free(c);
		return sd_bus_error_setf(err, ERR("HelperUnavailable"), "netnsd: %s", strerror(-r));
	}
	return 1;
}

static int
property_get_string(sd_bus *bus, const char *path, const char *iface, const char *prop,
		    sd_bus_message *reply, void *ud, sd_bus_error *err)
{
	struct sandbox *sb = ud;
	if (!strcmp(prop, "State"))
		return sd_bus_message_append(reply, "s", sandbox_state_to_string(sb->state));
	if (!strcmp(prop, "Id"))
		return sd_bus_message_append(reply, "s", sb->id);
	if (!strcmp(prop, "Template"))
		return sd_bus_message_append(reply, "s", sb->template_name);
	if (!strcmp(prop, "Backend"))
		return sd_bus_message_append(reply, "s", backend_to_string(sb->backend));
	if (!strcmp(prop, "Reason"))
		return sd_bus_message_append(reply, "s", sb->reason);
	if (!strcmp(prop, "Address"))
		return sd_bus_message_append(reply, "s", sb->address);
	if (!strcmp(prop, "Image"))
		return sd_bus_message_append(reply, "s", sb->restoring_tag);
	if (!strcmp(prop, "Egress"))
		return sd_bus_message_append(reply, "s", sandbox_egress_of(sb));
	if (!strcmp(prop, "TimeoutAction"))
		return sd_bus_message_append(reply, "s", lifetime_action_of(sb->id));
	if (!strcmp(prop, "URL")) {
		_cleanup_free_ char *url = sandbox_url(sb);
		return sd_bus_message_append(reply, "s", url ? url : "");
	}
	return -EINVAL;
}

static int
property_get_memory(sd_bus *bus, const char *path, const char *iface, const char *prop,
		    sd_bus_message *reply, void *ud, sd_bus_error *err)
{
	struct sandbox *sb = ud;
	uint64_t v = 0;
	if (sb->runtime_alive && sb->cgroup[0])
		cgroup_memory_usage(sb->cgroup, &v);
	return sd_bus_message_append(reply, "t", v);
}

static int
property_get_end_usec(sd_bus *bus, const char *path, const char *iface, const char *prop,
		      sd_bus_message *reply, void *ud, sd_bus_error *err)
{
	struct sandbox *sb = ud;
	return sd_bus_message_append(reply, "t", lifetime_end_usec(sb->id));
}

static int
property_get_timings(sd_bus *bus, const char *path, const char *iface, const char *prop,
		     sd_bus_message *reply, void *ud, sd_bus_error *err)
{
	struct sandbox *sb = ud;
	sd_bus_message_open_container(reply, 'a', "{st}");
	if (sb->t_claimed_us)
		sd_bus_message_append(reply, "{st}", "claim_us",
				      sb->t_claimed_us - sb->t_create_us);
	if (sb->t_spawned_us)
		sd_bus_message_append(reply, "{st}", "spawn_us",
				      sb->t_spawned_us - sb->t_create_us);
	if (sb->t_ready_us)
		sd_bus_message_append(reply, "{st}", "ready_us", sb->t_ready_us - sb->t_create_us);
	if (sb->last_pause_us)
		sd_bus_message_append(reply, "{st}", "snapshot_pause_us", sb->last_pause_us);
	return sd_bus_message_close_container(reply);
}

static const sd_bus_vtable sandbox_vtable[] = {
	/* Who may call is the D-Bus policy's decision (units/org.warren.Warren1.conf), not
	 * sd-bus's default capability check. */
	SD_BUS_VTABLE_START(0),
	SD_BUS_PROPERTY("Id", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_PROPERTY("Template", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_PROPERTY("Backend", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_PROPERTY("State", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("Reason", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("URL", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_PROPERTY("Address", "s", property_get_string, 0, 0),
	SD_BUS_PROPERTY("Image", "s", property_get_string, 0, 0),
	SD_BUS_PROPERTY("CreatedUSec", "t", NULL, offsetof(struct sandbox, created_usec),
			SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_PROPERTY("MemoryCurrent", "t", property_get_memory, 0, 0),
	SD_BUS_PROPERTY("ReclaimedBytes", "t", NULL, offsetof(struct sandbox, reclaimed_bytes),
			SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("Timings", "a{st}", property_get_timings, 0, 0),
	SD_BUS_PROPERTY("EndUSec", "t", property_get_end_usec, 0,
			SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("TimeoutAction", "s", property_get_string, 0,
			SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("Egress", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_METHOD_WITH_NAMES("AgentToken", "", , "s", SD_BUS_PARAM(token), method_agent_token,
				 SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("Destroy", "", "", method_destroy, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("Exec", "as", SD_BUS_PARAM(argv), "iayay",
				 SD_BUS_PARAM(status) SD_BUS_PARAM(stdout) SD_BUS_PARAM(stderr),
				 method_exec, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("ExecWithOptions", "asa{sv}",
				 SD_BUS_PARAM(argv) SD_BUS_PARAM(options), "iayay",
				 SD_BUS_PARAM(status) SD_BUS_PARAM(stdout) SD_BUS_PARAM(stderr),
				 method_exec, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("Freeze", "", "", method_freeze, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("OpenLogs", "a{sv}", SD_BUS_PARAM(options), "h", SD_BUS_PARAM(fd),
				 method_open_logs, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("SetEgress", "s", SD_BUS_PARAM(policy), "", , method_set_egress,
				 SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("SetEgressWithinTemplate", "s", SD_BUS_PARAM(policy), "", ,
				 method_set_egress, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("SetTimeout", "ts", SD_BUS_PARAM(seconds) SD_BUS_PARAM(action), "",
				 , method_set_timeout, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("Snapshot", "s", SD_BUS_PARAM(tag), "st",
				 SD_BUS_PARAM(tag) SD_BUS_PARAM(size), method_snapshot,
				 SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("Thaw", "", "", method_freeze, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_SIGNAL_WITH_NAMES("StateChanged", "ss", SD_BUS_PARAM(state) SD_BUS_PARAM(reason), 0),
	SD_BUS_VTABLE_END};

int
sandbox_dbus_init(struct supervisor *s)
{
	int r = sd_bus_add_fallback_vtable(s->bus, NULL, SANDBOX_PREFIX, SANDBOX_IFACE,
					   sandbox_vtable, sandbox_object_find, s);
	if (r < 0)
		return r;
	return sd_bus_add_node_enumerator(s->bus, NULL, SANDBOX_PREFIX, sandbox_node_enumerator, s);
}

void
sandbox_dbus_emit_new(struct sandbox *sb, bool added)
{
	sd_bus_emit_signal(sup->bus, MANAGER_PATH, MANAGER_IFACE,
			   added ? "SandboxNew" : "SandboxRemoved", "so", sb->id, sb->path);
}

void
sandbox_dbus_emit_state(struct sandbox *sb)
{
	if (!sandbox_visible(sb))
		return;
	sd_bus_emit_signal(sup->bus, sb->path, SANDBOX_IFACE, "StateChanged", "ss",
			   sandbox_state_to_string(sb->state), sb->reason);
	sd_bus_emit_properties_changed(sup->bus, sb->path, SANDBOX_IFACE, "State", "Reason", NULL);
}
