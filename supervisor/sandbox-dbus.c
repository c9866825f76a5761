/* org.warren.Warren1.Sandbox on /org/warren/Warren1/sandbox/<id> (supervisor): one object per
 * sandbox through a fallback vtable, enumerated for `busctl tree`. */
#include "clock.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "dbus-input.h"
#include "exec.h"
#include "agent-token.h"
#include "lifetime.h"
#include "logs.h"
#include "owner.h"
#include "sandbox-egress.h"
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

/* SetEgress(policy): "off", "on" or "CIDR[:PORT],..." (sandbox-egress.c); root and the owner */
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
