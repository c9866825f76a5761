/* org.warren.Warren1.Manager on /org/warren/Warren1 (supervisor): create and list sandboxes,
 * templates, and the operator's status as properties. */
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "dbus-input.h"
#include "owner.h"
#include "sandbox-egress.h"
#include "snapshotd-client.h"
#include "reclaim.h"
#include "snapshot.h"
#include "supervisor-dbus.h"
#include "supervisor.h"
#include "templates.h"
#include "warm.h"

#include <string.h>
#include <unistd.h>

static bool
backend_served(struct supervisor *s, const char *backend)
{
	Warren__V1__StatusResponse *st = s->helpers[HELPER_NETNSD].status;
	for (size_t i = 0; st && i < st->n_backends; i++)
		if (!strcmp(st->backends[i], backend))
			return true;
	/* before netnsd first answered: gVisor, and the create fails later if it is missing */
	return !st && backend_from_string(backend) == BACKEND_GVISOR;
}

static int
method_create_sandbox(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	struct supervisor *s = ud;
	const char *name;
	int r = sd_bus_message_read(m, "s", &name);
	if (r < 0)
		return r;
	uint32_t pool_timeout = 0, start_timeout = 0;
	int wait = 0, within = 0;
	const char *backend = "gvisor";
	char egress[EGRESS_POLICY_MAX] = "";
	r = sd_bus_message_enter_container(m, 'a', "{sv}");
	if (r < 0)
		return r;
	while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
		const char *key;
		sd_bus_message_read(m, "s", &key);
		if (!strcmp(key, "wait"))
			r = sd_bus_message_read(m, "v", "b", &wait);
		else if (!strcmp(key, "pool_timeout_ms"))
			r = sd_bus_message_read(m, "v", "u", &pool_timeout);
		else if (!strcmp(key, "start_timeout_ms"))
			r = sd_bus_message_read(m, "v", "u", &start_timeout);
		else if (!strcmp(key, "backend"))
			r = sd_bus_message_read(m, "v", "s", &backend);
		else if (!strcmp(key, "egress")) {
			/* checked here; the create reads it again (sandbox_egress_for_create) */
			if ((r = sandbox_egress_option(m, key, egress, sizeof egress, err)) < 0)
				return r;
		} else if (!strcmp(key, "egress_within_template"))
			r = sd_bus_message_read(m, "v", "b", &within);
		else
			return sd_bus_error_setf(
				err, ERR("InvalidArgument"),
				"Unknown option '%s' (known: wait, pool_timeout_ms, "
				"start_timeout_ms, backend, egress, egress_within_template)",
				key);
		if (r < 0)
			return sd_bus_error_setf(err, ERR("InvalidArgument"),
						 "Option '%s' has the wrong type", key);
		sd_bus_message_exit_container(m);
	}
	sd_bus_message_exit_container(m);
	struct template *t = template_find(s, name);
	if (!t)
		return sd_bus_error_setf(err, ERR("NoSuchTemplate"),
					 "No template '%s'; ListTemplates shows the known ones",
					 name);
	if (within && egress[0] && (r = sandbox_egress_within_template(egress, t, err)) < 0)
		return r;
	if (!backend_served(s, backend))
		return sd_bus_error_setf(err, ERR("NoSuchBackend"),
					 "Backend '%s' is not available here (Backends property)",
					 backend);
	if (pool_timeout > 600000 || start_timeout > 600000)
		return sd_bus_error_setf(err, ERR("InvalidArgument"),
					 "Timeouts are at most 600000 ms");
	if (access(t->rootfs, F_OK) < 0)
		return sd_bus_error_setf(err, ERR("TemplateNotBuilt"),
					 "Template %s has no root filesystem at %s (build it with "
					 "warren-template-build %s)",
					 t->name, t->rootfs, t->name);
	if (t->warm)
		return warm_create(s, m, t, backend, pool_timeout, start_timeout, wait);
	return sandbox_create(s, m, t, backend, pool_timeout, start_timeout, wait, err);
}

static int
method_list_sandboxes(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	struct supervisor *s = ud;
	sd_bus_message *reply = NULL;
	int r = sd_bus_message_new_method_return(m, &reply);
	if (r < 0)
		return r;
	sd_bus_message_open_container(reply, 'a', "(ssso)");
	for (struct sandbox *sb = s->sandboxes; sb; sb = sb->next)
		if (sandbox_visible(sb))
			sd_bus_message_append(reply, "(ssso)", sb->id, sb->template_name,
					      sandbox_state_to_string(sb->state), sb->path);
	sd_bus_message_close_container(reply);
	r = sd_bus_send(NULL, reply, NULL);
	sd_bus_message_unref(reply);
	return r;
}

static int
method_list_templates(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	struct supervisor *s = ud;
	sd_bus_message *reply = NULL;
	int r = sd_bus_message_new_method_return(m, &reply);
	if (r < 0)
		return r;
	sd_bus_message_open_container(reply, 'a', "(ssasqtb)");
	for (struct template *t = s->templates; t; t = t->next) {
		sd_bus_message_open_container(reply, 'r', "ssasqtb");
		sd_bus_message_append(reply, "ss", t->name, t->rootfs);
		sd_bus_message_append_strv(reply, t->argv);
		sd_bus_message_append(reply, "qtb", (uint16_t)t->port, t->memory_limit,
				      access(t->rootfs, F_OK) == 0);
		sd_bus_message_close_container(reply);
	}
	sd_bus_message_close_container(reply);
	r = sd_bus_send(NULL, reply, NULL);
	sd_bus_message_unref(reply);
	return r;
}

static int
method_add_template(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	struct supervisor *s = ud;
	const char *name, *rootfs;
	char **argv = NULL;
	uint16_t port;
	uint64_t mem;
	int r = sd_bus_message_read(m, "ss", &name, &rootfs);
	if (r >= 0)
		r = sd_bus_message_read_strv(m, &argv);
	if (r >= 0)
		r = sd_bus_message_read(m, "qt", &port, &mem);
	if (r < 0)
		return r;
	struct template *t = calloc(1, sizeof *t);
	if (!t) {
		for (size_t i = 0; argv && argv[i]; i++)
			free(argv[i]);
		free(argv);
		return -ENOMEM;
	}
	snprintf(t->name, sizeof t->name, "%s", name);
	if (strlen(name) >= sizeof t->name)
		t->name[0] = '!'; /* too long: refused by the name check */
	t->rootfs = strdup(rootfs);
	t->argv = argv;
	for (t->argc = 0; argv && argv[t->argc]; t->argc++)
		;
	if (!t->rootfs) {
		template_free(t);
		return -ENOMEM;
	}
	t->port = port;
	t->memory_limit = mem;
	r = sd_bus_message_enter_container(m, 'a', "{sv}");
	while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
		const char *key;
		sd_bus_message_read(m, "s", &key);
		int b;
		if (!strcmp(key, "allow_outbound")) {
			r = sd_bus_message_read(m, "v", "b", &b);
			t->allow_outbound = b;
		} else if (!strcmp(key, "idle_ms"))
			r = sd_bus_message_read(m, "v", "u", &t->idle_ms);
		else if (!strcmp(key, "warm")) {
			r = sd_bus_message_read(m, "v", "b", &b);
			t->warm = b;
		} else if (!strcmp(key, "standby")) {
			r = sd_bus_message_read(m, "v", "u", &t->standby);
			if (r >= 0 && t->standby > 16)
				r = sd_bus_error_setf(err, ERR("InvalidArgument"),
						      "standby is at most 16");
		} else if (!strcmp(key, "pids") || !strcmp(key, "cpu_millis"))
			r = template_limit_option(m, key, t, err);
		else if ((r = template_option_read(m, key, t, err)) == 0)
			r = sd_bus_error_setf(
				err, ERR("InvalidArgument"),
				"Unknown option '%s' (known: allow_outbound, egress, idle_ms, "
				"warm, standby, pids, cpu_millis, env, cwd, user)",
				key);
		if (r < 0)
			break;
		sd_bus_message_exit_container(m);
	}
	if (r >= 0)
		r = template_add_checked(s, t, m, err); /* answers m itself */
	if (r < 0) {
		template_free(t);
		return r;
	}
	return 1;
}

static int
method_remove_template(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	const char *name;
	int r = sd_bus_message_read(m, "s", &name);
	if (r < 0)
		return r;
	r = template_remove(ud, name, err);
	return r < 0 ? r : sd_bus_reply_method_return(m, "");
}

static int
method_setup_reclaim(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	uint64_t swap;
	int zswap;
	const char *compressor;
	uint32_t pool;
	int r = sd_bus_message_read(m, "tbsu", &swap, &zswap, &compressor, &pool);
	if (r < 0)
		return r;
	if (strlen(compressor) > 32 ||
	    strspn(compressor, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(compressor))
		return sd_bus_error_setf(
			err, ERR("InvalidArgument"),
			"Compressor '%s' is not a zswap compressor name (a-z, 0-9, "
			"'-', at most 32)",
			compressor);
	r = reclaim_setup_call(ud, m, swap, zswap, compressor, pool, false);
	if (r < 0)
		return sd_bus_error_setf(err, ERR("HelperUnavailable"), "snapshotd: %s",
					 strerror(-r));
	return r;
}

static int
method_undo_reclaim(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	int r = reclaim_setup_call(ud, m, 0, false, "", 0, true);
	if (r < 0)
		return sd_bus_error_setf(err, ERR("HelperUnavailable"), "snapshotd: %s",
					 strerror(-r));
	return r;
}

/* ---- tags: ForkTag, BranchSandbox, ListTags, RemoveTag (the feature is snapshot.c) ---- */

static int
method_fork_tag(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	const char *tag;
	uint32_t count;
	int r = sd_bus_message_read(m, "su", &tag, &count);
	if (r < 0)
		return r;
	r = dbus_input_user_tag(tag, err);
	if (r < 0)
		return r;
	if (count < 1 || count > 200)
		return sd_bus_error_setf(err, ERR("InvalidArgument"), "count must be 1-200");
	if ((r = tag_owner_check(m, tag, "fork", err)) < 0)
		return r;
	struct operation *op = operation_new(m);
	if (!op)
		return -ENOMEM;
	r = fork_start(&op, tag, count);
	if (r < 0) {
		operation_cancel(&op); /* answered by the error returned to sd-bus */
		return sd_bus_error_setf(err, ERR("HelperUnavailable"), "snapshotd: %s",
					 strerror(-r));
	}
	return 1;
}

static int
method_branch_sandbox(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	const char *id, *tag;
	uint32_t count;
	int r = sd_bus_message_read(m, "ssu", &id, &tag, &count);
	if (r < 0)
		return r;
	r = dbus_input_user_tag(tag, err);
	if (r < 0)
		return r;
	struct sandbox *sb = sandbox_find(sup, id);
	if (!sb || !sandbox_visible(sb))
		return sd_bus_error_setf(err, ERR("NoSuchSandbox"), "No sandbox %s", id);
	if ((r = owner_check(m, sb, "branch", err)) < 0)
		return r;
	if (count < 1 || count > 200)
		return sd_bus_error_setf(err, ERR("InvalidArgument"), "count must be 1-200");
	return snapshot_start(sb, m, tag, count, false, err);
}

static void
list_tags_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct operation *op = ud;
	ipc_close_fds(fds, n_fds);
	if (r < 0 || !resp || resp->body_case != WARREN__V1__RESPONSE__BODY_LIST_IMAGES) {
		operation_error(&op, ERR("HelperUnavailable"), "snapshotd: %s",
				helper_message(resp, strerror(-r)));
	} else {
		sd_bus_message *reply = NULL;
		operation_new_return(op, &reply);
		sd_bus_message_open_container(reply, 'a', "(sstbts)");
		for (size_t i = 0; i < resp->list_images->n_images; i++) {
			const Warren__V1__ImageInfo *im = resp->list_images->images[i];
			sd_bus_message_append(reply, "(sstbts)", im->name, im->template_name,
					      im->size, im->compressed, im->created_usec,
					      im->parent);
		}
		sd_bus_message_close_container(reply);
		operation_send(&op, reply);
		sd_bus_message_unref(reply);
	}
	operation_cancel(&op); /* answered, or the answer could not be sent */
}

static int
method_list_tags(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	Warren__V1__ListImagesRequest q = WARREN__V1__LIST_IMAGES_REQUEST__INIT;
	struct operation *op = operation_new(m);
	if (!op)
		return -ENOMEM;
	if (snapshotd_client_list_images(&q, 10000, list_tags_done, op) < 0) {
		operation_cancel(&op);
		return sd_bus_error_setf(err, ERR("HelperUnavailable"),
					 "snapshotd is not connected");
	}
	return 1;
}

struct remove_tag {
	struct operation *op;
	char tag[33];
};

static void
remove_tag_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct remove_tag *rt = ud;
	ipc_close_fds(fds, n_fds);
	if (r == 0 || r == -ENOENT) /* no image: no record may outlive it for a later tag */
		sandbox_egress_tag_remove(rt->tag);
	if (r < 0)
		operation_error(&rt->op, r == -ENOENT ? ERR("NoSuchTag") : ERR("HelperUnavailable"),
				"%s", helper_message(resp, strerror(-r)));
	else {
		tag_owner_remove(rt->tag);
		operation_return(&rt->op, "");
	}
	free(rt);
}

static int
method_remove_tag(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int rc_ = dbus_input_check(m, err);
	if (rc_ < 0)
		return rc_;
	const char *tag;
	int r = sd_bus_message_read(m, "s", &tag);
	if (r < 0)
		return r;
	/* A warm template's image may be dropped (the next create takes it again), and only that:
	 * any other warm- name is refused like a Snapshot to it would be. */
	if (!tag_reserved(tag) || !warm_tag_owner(tag)) {
		r = dbus_input_user_tag(tag, err);
		if (r < 0)
			return r;
		if ((r = tag_owner_check(m, tag, "remove", err)) < 0)
			return r;
	}
	if ((r = tag_busy_check(tag, err)) < 0)
		return r;
	struct remove_tag *rt = calloc(1, sizeof *rt);
	if (!rt || !(rt->op = operation_new(m))) {
		free(rt);
		return -ENOMEM;
	}
	snprintf(rt->tag, sizeof rt->tag, "%s", tag);
	if (image_remove_call(tag, remove_tag_done, rt) < 0) {
		operation_cancel(&rt->op);
		free(rt);
		return sd_bus_error_setf(err, ERR("HelperUnavailable"),
					 "snapshotd is not connected");
	}
	return 1;
}

/* Swap and zswap figures are the host's, read here (they are world-readable). */
static int
property_get_swap(sd_bus *bus, const char *path, const char *iface, const char *prop,
		  sd_bus_message *reply, void *ud, sd_bus_error *err)
{
	uint64_t v = 0;
	if (!strcmp(prop, "ZswapEnabled")) {
		char buf[8] = "";
		file_read_line("/sys/module/zswap/parameters/enabled", buf, sizeof buf);
		return sd_bus_message_append(reply, "b", buf[0] == 'Y');
	}
	meminfo_bytes(!strcmp(prop, "SwapBytes")	? "SwapTotal"
		      : !strcmp(prop, "ZswapPoolBytes") ? "Zswap"
							: "Zswapped",
		      &v);
	return sd_bus_message_append(reply, "t", v);
}

static int
property_get_helpers(sd_bus *bus, const char *path, const char *iface, const char *prop,
		     sd_bus_message *reply, void *ud, sd_bus_error *err)
{
	struct supervisor *s = ud;
	sd_bus_message_open_container(reply, 'a', "(sbs)");
	for (int i = 0; i < HELPER_MAX; i++) {
		struct helper *h = &s->helpers[i];
		sd_bus_message_append(reply, "(sbs)", h->name, h->up && h->status,
				      h->status ? h->status->version : "");
	}
	return sd_bus_message_close_container(reply);
}

static int
property_get_pool(sd_bus *bus, const char *path, const char *iface, const char *prop,
		  sd_bus_message *reply, void *ud, sd_bus_error *err)
{
	struct supervisor *s = ud;
	Warren__V1__StatusResponse *st = s->helpers[HELPER_NETNSD].status;
	uint32_t v = 0;
	if (st && s->helpers[HELPER_NETNSD].up)
		v = !strcmp(prop, "PoolSize") ? st->pool_size : st->pool_free;
	return sd_bus_message_append(reply, "u", v);
}

static int
property_get_backends(sd_bus *bus, const char *path, const char *iface, const char *prop,
		      sd_bus_message *reply, void *ud, sd_bus_error *err)
{
	struct supervisor *s = ud;
	Warren__V1__StatusResponse *st = s->helpers[HELPER_NETNSD].status;
	sd_bus_message_open_container(reply, 'a', "s");
	if (st && s->helpers[HELPER_NETNSD].up)
		for (size_t i = 0; i < st->n_backends; i++)
			sd_bus_message_append(reply, "s", st->backends[i]);
	return sd_bus_message_close_container(reply);
}

static int
property_get_count(sd_bus *bus, const char *path, const char *iface, const char *prop,
		   sd_bus_message *reply, void *ud, sd_bus_error *err)
{
	unsigned n = 0;
	for (struct sandbox *sb = ((struct supervisor *)ud)->sandboxes; sb; sb = sb->next)
		n += sandbox_visible(sb);
	return sd_bus_message_append(reply, "u", n);
}

static int
property_get_version(sd_bus *bus, const char *path, const char *iface, const char *prop,
		     sd_bus_message *reply, void *ud, sd_bus_error *err)
{
	return sd_bus_message_append(reply, "s", WARREN_VERSION);
}

/* ImportTemplate and GetTemplate, with the ImportProgress signal: a second vtable of the
 * interface (moved here from template-import.c, which runs the import). */

static int
method_import_template(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int r = dbus_input_check(m, err);
	if (r < 0)
		return r;
	struct supervisor *s = ud;
	const char *name, *format, *reference = "";
	int source = -1, vm = 1;
	r = sd_bus_message_read(m, "shs", &name, &source, &format);
	if (r < 0)
		return r;
	if (!template_name_valid(name))
		return sd_bus_error_setf(err, ERR("InvalidArgument"),
					 "Template name '%s' must be 1-32 of [a-z0-9_-], starting "
					 "with a letter or digit",
					 name);
	if (template_find(s, name))
		return sd_bus_error_setf(err, ERR("TemplateExists"), "Template %s exists", name);
	if (strcmp(format, "oci") && strcmp(format, "oci-archive") &&
	    strcmp(format, "docker-archive"))
		return sd_bus_error_setf(err, ERR("InvalidArgument"),
					 "Unknown image format '%s' (oci, oci-archive, "
					 "docker-archive)",
					 format);
	if (template_import_busy())
		return sd_bus_error_setf(err, ERR("TemplateBusy"),
					 "Template %s is being imported; one import runs at a time",
					 template_import_busy());
	struct template *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	bool argv_set = false, port_set = false;
	snprintf(t->name, sizeof t->name, "%s", name);
	t->memory_limit = 128ull << 20;
	r = sd_bus_message_enter_container(m, 'a', "{sv}");
	while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
		const char *key;
		int b;
		uint16_t port;
		sd_bus_message_read(m, "s", &key);
		if (!strcmp(key, "reference")) {
			r = sd_bus_message_read(m, "v", "s", &reference);
		} else if (!strcmp(key, "vm_image")) {
			r = sd_bus_message_read(m, "v", "b", &vm);
		} else if (!strcmp(key, "argv")) {
			r = sd_bus_message_enter_container(m, 'v', "as");
			if (r >= 0)
				r = sd_bus_message_read_strv(m, &t->argv);
			if (r >= 0)
				r = sd_bus_message_exit_container(m);
			for (t->argc = 0; t->argv && t->argv[t->argc]; t->argc++)
				;
			argv_set = t->argc > 0;
		} else if (!strcmp(key, "port")) {
			r = sd_bus_message_read(m, "v", "q", &port);
			t->port = port;
			port_set = true;
		} else if (!strcmp(key, "memory_limit")) {
			r = sd_bus_message_read(m, "v", "t", &t->memory_limit);
		} else if (!strcmp(key, "allow_outbound")) {
			r = sd_bus_message_read(m, "v", "b", &b);
			t->allow_outbound = b;
		} else if (!strcmp(key, "idle_ms")) {
			r = sd_bus_message_read(m, "v", "u", &t->idle_ms);
		} else if (!strcmp(key, "warm")) {
			r = sd_bus_message_read(m, "v", "b", &b);
			t->warm = b;
		} else if (!strcmp(key, "standby")) {
			r = sd_bus_message_read(m, "v", "u", &t->standby);
		} else if ((r = template_option_read(m, key, t, err)) == 0) {
			r = sd_bus_error_setf(
				err, ERR("InvalidArgument"),
				"Unknown option '%s' (known: reference, vm_image, argv, "
				"port, memory_limit, allow_outbound, egress, idle_ms, warm, "
				"standby, env, cwd, user)",
				key);
		}
		if (r < 0 && !sd_bus_error_is_set(err))
			sd_bus_error_setf(err, ERR("InvalidArgument"),
					  "Option '%s' has the wrong type", key);
		if (r < 0)
			break;
		sd_bus_message_exit_container(m);
	}
	if (r < 0) {
		template_free(t);
		return r;
	}
	return template_import_start(t, argv_set, port_set, source, format, reference, vm, m, err);
}

static int
method_get_template(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int r = dbus_input_check(m, err);
	if (r < 0)
		return r;
	const char *name;
	r = sd_bus_message_read(m, "s", &name);
	if (r < 0)
		return r;
	struct template *t = template_find(ud, name);
	if (!t)
		return sd_bus_error_setf(err, ERR("NoSuchTemplate"), "No template %s", name);
	sd_bus_message *reply = NULL;
	r = sd_bus_message_new_method_return(m, &reply);
	if (r < 0)
		return r;
	char user[32];
	snprintf(user, sizeof user, "%u:%u", t->user_set ? t->uid : 0, t->user_set ? t->gid : 0);
	sd_bus_message_open_container(reply, 'a', "{sv}");
	sd_bus_message_append(reply, "{sv}", "name", "s", t->name);
	sd_bus_message_append(reply, "{sv}", "rootfs", "s", t->rootfs);
	sd_bus_message_open_container(reply, 'e', "sv");
	sd_bus_message_append(reply, "s", "argv");
	sd_bus_message_open_container(reply, 'v', "as");
	sd_bus_message_append_strv(reply, t->argv);
	sd_bus_message_close_container(reply);
	sd_bus_message_close_container(reply);
	sd_bus_message_open_container(reply, 'e', "sv");
	sd_bus_message_append(reply, "s", "env");
	sd_bus_message_open_container(reply, 'v', "as");
	sd_bus_message_open_container(reply, 'a', "s");
	for (size_t i = 0; i < t->envc; i++)
		sd_bus_message_append(reply, "s", t->env[i]);
	sd_bus_message_close_container(reply);
	sd_bus_message_close_container(reply);
	sd_bus_message_close_container(reply);
	sd_bus_message_append(reply, "{sv}", "cwd", "s", t->cwd ? t->cwd : "/");
	sd_bus_message_append(reply, "{sv}", "user", "s", user);
	sd_bus_message_append(reply, "{sv}", "port", "q", (uint16_t)t->port);
	sd_bus_message_append(reply, "{sv}", "memory_limit", "t", t->memory_limit);
	sd_bus_message_append(reply, "{sv}", "allow_outbound", "b", (int)t->allow_outbound);
	sd_bus_message_append(reply, "{sv}", "egress", "s", sandbox_egress_of_template(t));
	sd_bus_message_append(reply, "{sv}", "idle_ms", "u", t->idle_ms);
	sd_bus_message_append(reply, "{sv}", "warm", "b", (int)t->warm);
	sd_bus_message_append(reply, "{sv}", "standby", "u", t->standby);
	sd_bus_message_append(reply, "{sv}", "builtin", "b", (int)t->builtin);
	sd_bus_message_append(reply, "{sv}", "imported", "b", (int)t->imported);
	sd_bus_message_append(reply, "{sv}", "built", "b", access(t->rootfs, F_OK) == 0);
	sd_bus_message_close_container(reply);
	r = sd_bus_send(NULL, reply, NULL);
	sd_bus_message_unref(reply);
	return r;
}

static const sd_bus_vtable template_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD_WITH_NAMES(
		"ImportTemplate", "shsa{sv}",
		SD_BUS_PARAM(name) SD_BUS_PARAM(source) SD_BUS_PARAM(format) SD_BUS_PARAM(options),
		"a{sv}", SD_BUS_PARAM(result), method_import_template, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("GetTemplate", "s", SD_BUS_PARAM(name), "a{sv}",
				 SD_BUS_PARAM(options), method_get_template,
				 SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_SIGNAL_WITH_NAMES(
		"ImportProgress", "sstt",
		SD_BUS_PARAM(name) SD_BUS_PARAM(phase) SD_BUS_PARAM(done) SD_BUS_PARAM(total), 0),
	SD_BUS_VTABLE_END};

static int
template_dbus_init(struct supervisor *s)
{
	return sd_bus_add_object_vtable(s->bus, NULL, MANAGER_PATH, MANAGER_IFACE, template_vtable,
					s);
}

static const sd_bus_vtable manager_vtable[] = {
	/* Who may call is the D-Bus policy's decision (units/org.warren.Warren1.conf), not
	 * sd-bus's default capability check. */
	SD_BUS_VTABLE_START(0),
	SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_PROPERTY("Helpers", "a(sbs)", property_get_helpers, 0, 0),
	SD_BUS_PROPERTY("PoolSize", "u", property_get_pool, 0, 0),
	SD_BUS_PROPERTY("PoolFree", "u", property_get_pool, 0, 0),
	SD_BUS_PROPERTY("Backends", "as", property_get_backends, 0, 0),
	SD_BUS_PROPERTY("SandboxCount", "u", property_get_count, 0, 0),
	SD_BUS_PROPERTY("GatewayURL", "s", NULL, offsetof(struct supervisor, gateway_url),
			SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_PROPERTY("SwapBytes", "t", property_get_swap, 0, 0),
	SD_BUS_PROPERTY("ZswapEnabled", "b", property_get_swap, 0, 0),
	SD_BUS_PROPERTY("ZswapPoolBytes", "t", property_get_swap, 0, 0),
	SD_BUS_PROPERTY("ZswappedBytes", "t", property_get_swap, 0, 0),
	SD_BUS_METHOD_WITH_NAMES("CreateSandbox", "sa{sv}",
				 SD_BUS_PARAM(template) SD_BUS_PARAM(options), "sos",
				 SD_BUS_PARAM(id) SD_BUS_PARAM(path) SD_BUS_PARAM(url),
				 method_create_sandbox, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("ListSandboxes", "", , "a(ssso)", SD_BUS_PARAM(sandboxes),
				 method_list_sandboxes, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("ListTemplates", "", , "a(ssasqtb)", SD_BUS_PARAM(templates),
				 method_list_templates, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("AddTemplate", "ssasqta{sv}",
				 SD_BUS_PARAM(name) SD_BUS_PARAM(rootfs) SD_BUS_PARAM(argv)
					 SD_BUS_PARAM(port) SD_BUS_PARAM(memory_limit)
						 SD_BUS_PARAM(options),
				 "", , method_add_template, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("RemoveTemplate", "s", SD_BUS_PARAM(name), "", ,
				 method_remove_template, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("SetupReclaim", "tbsu",
				 SD_BUS_PARAM(swap_bytes) SD_BUS_PARAM(zswap)
					 SD_BUS_PARAM(compressor) SD_BUS_PARAM(max_pool_percent),
				 "tbtts",
				 SD_BUS_PARAM(swap_bytes) SD_BUS_PARAM(zswap_enabled)
					 SD_BUS_PARAM(zswap_pool_bytes) SD_BUS_PARAM(zswapped_bytes)
						 SD_BUS_PARAM(compressor),
				 method_setup_reclaim, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("UndoReclaim", "", , "tbtts",
				 SD_BUS_PARAM(swap_bytes) SD_BUS_PARAM(zswap_enabled)
					 SD_BUS_PARAM(zswap_pool_bytes) SD_BUS_PARAM(zswapped_bytes)
						 SD_BUS_PARAM(compressor),
				 method_undo_reclaim, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("ForkTag", "su", SD_BUS_PARAM(tag) SD_BUS_PARAM(count), "as",
				 SD_BUS_PARAM(ids), method_fork_tag, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES(
		"BranchSandbox", "ssu", SD_BUS_PARAM(id) SD_BUS_PARAM(tag) SD_BUS_PARAM(count),
		"as", SD_BUS_PARAM(ids), method_branch_sandbox, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("ListTags", "", , "a(sstbts)", SD_BUS_PARAM(tags),
				 method_list_tags, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("RemoveTag", "s", SD_BUS_PARAM(tag), "", , method_remove_tag,
				 SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_SIGNAL_WITH_NAMES("Progress", "sssuu",
				 SD_BUS_PARAM(operation) SD_BUS_PARAM(tag) SD_BUS_PARAM(phase)
					 SD_BUS_PARAM(done) SD_BUS_PARAM(total),
				 0),
	SD_BUS_SIGNAL_WITH_NAMES("SandboxNew", "so", SD_BUS_PARAM(id) SD_BUS_PARAM(path), 0),
	SD_BUS_SIGNAL_WITH_NAMES("SandboxRemoved", "so", SD_BUS_PARAM(id) SD_BUS_PARAM(path), 0),
	SD_BUS_VTABLE_END};

int
manager_dbus_init(struct supervisor *s)
{
	int r = sd_bus_add_object_vtable(s->bus, NULL, MANAGER_PATH, MANAGER_IFACE, manager_vtable,
					 s);
	/* ImportTemplate, GetTemplate (above): a second vtable of the interface */
	return r < 0 ? r : template_dbus_init(s);
}
