/* Sandboxes' egress policies (sandbox-egress.h), in the supervisor: the policy a create claims
 * its slot with, the owner's SetEgress at run time (netnsd -> its spawner's nftables chain),
 * the Egress property, and a record per sandbox so a restarted supervisor still shows it. The
 * enforcement, and what survives a netnsd restart, is netnsd's (netnsd/egress.h); the record
 * here is what the supervisor says, never what makes a sandbox more open. */
#include "sandbox-egress.h"
#include "fileio.h"
#include "log.h"
#include "names.h"
#include "netnsd-client.h"
#include "state-file.h"
#include "supervisor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
sandbox_egress_option(sd_bus_message *m, const char *key, char *out, size_t size, sd_bus_error *err)
{
	const char *v;
	int r = sd_bus_message_read(m, "v", "s", &v);
	if (r < 0)
		return sd_bus_error_setf(err, ERR("InvalidArgument"),
					 "Option '%s' is a string: off, on, or CIDR[:PORT],...",
					 key);
	char why[200];
	if (egress_policy_canonical(v, out, size, why, sizeof why) < 0)
		return sd_bus_error_setf(err, ERR("InvalidArgument"), "Option '%s': %s", key, why);
	return 0;
}

int
sandbox_egress_within_template(const char *egress, const struct template *t, sd_bus_error *err)
{
	struct egress_policy p, c;
	const char *ceiling = sandbox_egress_of_template(t);
	if (egress_policy_parse(egress, &p, NULL, 0) < 0 ||
	    egress_policy_parse(ceiling, &c, NULL, 0) < 0)
		return sd_bus_error_setf(err, ERR("InvalidArgument"),
					 "The egress policy is not valid");
	if (!egress_policy_within(&p, &c))
		return sd_bus_error_setf(err, ERR("InvalidArgument"),
					 "The egress policy asks for more than the template's "
					 "(%.64s%s) allows",
					 ceiling, strlen(ceiling) > 64 ? "..." : "");
	return 0;
}

const char *
sandbox_egress_of_template(const struct template *t)
{
	return t->egress ? t->egress : t->allow_outbound ? "on" : "off";
}

/* m's "egress" option, if m is a CreateSandbox that has one; its canonical form into out */
static bool
create_option(sd_bus_message *m, char *out, size_t size)
{
	if (!m || !sd_bus_message_is_method_call(m, MANAGER_IFACE, "CreateSandbox") ||
	    sd_bus_message_rewind(m, true) < 0 || sd_bus_message_skip(m, "s") < 0 ||
	    sd_bus_message_enter_container(m, 'a', "{sv}") < 0)
		return false;
	bool found = false;
	while (!found && sd_bus_message_enter_container(m, 'e', "sv") > 0) {
		const char *key, *v;
		if (sd_bus_message_read(m, "s", &key) >= 0 && !strcmp(key, "egress") &&
		    sd_bus_message_read(m, "v", "s", &v) >= 0)
			found = egress_policy_canonical(v, out, size, NULL, 0) == 0;
		else
			sd_bus_message_skip(m, "v");
		sd_bus_message_exit_container(m);
	}
	return found;
}

bool
sandbox_egress_for_create(sd_bus_message *m, const struct template *t, char *out, size_t size)
{
	const char *def = sandbox_egress_of_template(t);
	if (create_option(m, out, size))
		return strcmp(out, def) != 0;
	snprintf(out, size, "%s", def);
	return false;
}

/* <state-dir>/<dir>/<name>; name is one path component (a sandbox id, a user tag) */
static void
record_path(const char *dir, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s/%s", sup->state_dir, dir, name);
}

static int
record_write(const char *dir, const char *name, const char *policy, bool durable)
{
	char path[512], text[EGRESS_POLICY_MAX + 1];
	snprintf(path, sizeof path, "%s/%s", sup->state_dir, dir);
	int r = mkdir_p(path, 0700);
	record_path(dir, name, path, sizeof path);
	int n = snprintf(text, sizeof text, "%s\n", policy);
	return r < 0 ? r : file_write_atomic(path, text, (size_t)n, 0600, durable);
}

void
sandbox_egress_record(const struct sandbox *sb)
{
	/* not fsynced, as the sandbox records (state-file.c) */
	int r = record_write(EGRESS_DIR, sb->id, sb->egress, false);
	if (r < 0)
		log_warning_errno(r, "Sandbox %s: cannot record its egress policy: %m", sb->id);
}

void
sandbox_egress_tag_record(const char *tag, const char *policy)
{
	int r = template_name_valid(tag) ? record_write(EGRESS_TAG_DIR, tag, policy, true) : 0;
	if (r < 0)
		log_warning_errno(r,
				  "Tag %s: cannot record its egress policy (%m): its children "
				  "start with egress off",
				  tag);
}

bool
sandbox_egress_of_tag(const char *tag, char *out, size_t size)
{
	char path[512], text[EGRESS_POLICY_MAX + 2] = "";
	if (!template_name_valid(tag))
		return false;
	record_path(EGRESS_TAG_DIR, tag, path, sizeof path);
	return file_read_line(path, text, sizeof text) >= 0 &&
	       egress_policy_canonical(text, out, size, NULL, 0) == 0;
}

void
sandbox_egress_tag_remove(const char *tag)
{
	char path[512];
	if (!template_name_valid(tag))
		return;
	record_path(EGRESS_TAG_DIR, tag, path, sizeof path);
	if (unlink(path) < 0 && errno != ENOENT)
		log_warning_errno(-errno, "Tag %s: cannot remove its egress record: %m", tag);
}

void
sandbox_egress_forget(const struct sandbox *sb)
{
	char path[512];
	record_path(EGRESS_DIR, sb->id, path, sizeof path);
	if (unlink(path) < 0 && errno != ENOENT)
		log_warning_errno(-errno, "Sandbox %s: cannot remove its egress record: %m",
				  sb->id);
}

static void
egress_record_load(int dfd, const char *name, const char *path, void *ctx)
{
	struct supervisor *s = ctx;
	struct sandbox *sb = sandbox_id_valid(name) ? sandbox_find(s, name) : NULL;
	char text[EGRESS_POLICY_MAX + 2] = "";
	if (!sb || file_read_line(path, text, sizeof text) < 0 ||
	    egress_policy_canonical(text, sb->egress, sizeof sb->egress, NULL, 0) < 0) {
		log_info("Removing egress record %s: no such sandbox or not valid", path);
		unlinkat(dfd, name, 0);
		if (sb)
			sb->egress[0] = 0;
	}
}

void
sandbox_egress_load(struct supervisor *s)
{
	state_file_each_record(s->state_dir, EGRESS_DIR, egress_record_load, s);
}

struct set_egress {
	char id[SANDBOX_ID_LEN + 1];
	int slot;
	char policy[EGRESS_POLICY_MAX];
	sd_bus_message *m;
};

static void
set_egress_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct set_egress *c = ud;
	ipc_close_fds(fds, n_fds);
	struct sandbox *sb = sandbox_find(sup, c->id);
	if (r == 0 && sb && sb->slot == c->slot) {
		snprintf(sb->egress, sizeof sb->egress, "%s", c->policy);
		sandbox_egress_record(sb);
		if (sandbox_visible(sb))
			sd_bus_emit_properties_changed(sup->bus, sb->path, SANDBOX_IFACE, "Egress",
						       NULL);
		sd_bus_reply_method_return(c->m, "");
	} else if (r == 0 || r == -ENOENT) {
		sd_bus_reply_method_errorf(c->m, ERR("BadState"),
					   "Sandbox %s no longer holds its network slot", c->id);
	} else if (r == -EINVAL) {
		sd_bus_reply_method_errorf(c->m, ERR("InvalidArgument"), "netnsd refused: %s",
					   helper_message(resp, "a bad policy"));
	} else {
		log_warning_errno(r, "Sandbox %s: SetEgress failed: %m", c->id);
		sd_bus_reply_method_errnof(c->m, -r, "netnsd: %s",
					   helper_message(resp, strerror(-r)));
	}
	sd_bus_message_unref(c->m);
	free(c);
}

int
sandbox_egress_set(struct sandbox *sb, const char *policy, sd_bus_message *m, sd_bus_error *err)
{
	int r;
	struct set_egress *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	char why[200];
	if (egress_policy_canonical(policy, c->policy, sizeof c->policy, why, sizeof why) < 0) {
		free(c);
		return sd_bus_error_setf(err, ERR("InvalidArgument"), "Egress policy: %s", why);
	}
	if (sb->slot < 0 || sb->state == SANDBOX_CREATING || sb->state == SANDBOX_DESTROYING) {
		free(c);
		return sd_bus_error_setf(err, ERR("BadState"), "Sandbox %s is %s", sb->id,
					 sandbox_state_to_string(sb->state));
	}
	snprintf(c->id, sizeof c->id, "%s", sb->id);
	c->slot = sb->slot;
	c->m = sd_bus_message_ref(m);
	Warren__V1__SetEgressRequest q = WARREN__V1__SET_EGRESS_REQUEST__INIT;
	q.slot = (uint32_t)sb->slot;
	q.policy = c->policy;
	r = netnsd_client_set_egress(&q, 35000, set_egress_done, c);
	if (r < 0) {
		sd_bus_message_unref(c->m);
		free(c);
		return sd_bus_error_setf(err, ERR("HelperUnavailable"), "netnsd: %s", strerror(-r));
	}
	return 1;
}

const char *
sandbox_egress_of(const struct sandbox *sb)
{
	if (sb->egress[0])
		return sb->egress;
	/* a sandbox from before egress policies: its template's, as its claim had */
	struct template *t = template_find(sup, sb->template_name);
	return t ? sandbox_egress_of_template(t) : "";
}
