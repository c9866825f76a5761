/* Templates (supervisor): the built-in web, app and base, and user templates added over D-Bus,
 * persisted under <state-dir>/templates/<name>. Validated here for a friendly error; netnsd
 * validates again before it starts anything. */
#include "agent-protocol.h"
#include "fileio.h"
#include "template-record.h"
#include "log.h"
#include "macro.h"
#include "snapshot.h"
#include "state-file.h"
#include "supervisor.h"
#include "templates.h"
#include "warm.h"

#include <errno.h>
#include <unistd.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

static struct template *
template_new(const char *name, const char *rootfs, const char *const *argv, unsigned port,
	     uint64_t mem, bool builtin)
{
	struct template *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	snprintf(t->name, sizeof t->name, "%s", name);
	t->rootfs = strdup(rootfs);
	size_t argc = 0;
	while (argv[argc])
		argc++;
	t->argv = calloc(argc + 1, sizeof *t->argv);
	if (t->argv)
		for (t->argc = 0; t->argc < argc; t->argc++)
			if (!(t->argv[t->argc] = strdup(argv[t->argc])))
				break;
	if (!t->rootfs || !t->argv || t->argc < argc) {
		template_free(t);
		return NULL;
	}
	t->port = port;
	t->memory_limit = mem;
	t->builtin = builtin;
	return t;
}

static void
template_link(struct supervisor *s, struct template *t)
{
	struct template **pp = &s->templates;
	while (*pp)
		pp = &(*pp)->next;
	*pp = t;
}

/* The record's view of a template (its strings borrowed, never freed through it). */
static struct template_record
template_to_record(const struct template *t)
{
	return (struct template_record){.rootfs = t->rootfs,
					.argv = t->argv,
					.argc = t->argc,
					.port = t->port,
					.memory_limit = t->memory_limit,
					.allow_outbound = t->allow_outbound,
					.idle_ms = t->idle_ms,
					.warm = t->warm,
					.standby = t->standby,
					.pids_max = t->pids_max,
					.cpu_millis = t->cpu_millis,
					.env = t->env,
					.envc = t->envc,
					.cwd = t->cwd,
					.egress = t->egress,
					.user_set = t->user_set,
					.uid = t->uid,
					.gid = t->gid,
					.imported = t->imported};
}

static int
template_save(struct supervisor *s, struct template *t)
{
	char path[512];
	char *buf = NULL;
	size_t len = 0;
	struct template_record rec = template_to_record(t);
	int r = template_record_format(&rec, &buf, &len);
	if (r < 0)
		return r;
	snprintf(path, sizeof path, "%s/templates/%s", s->state_dir, t->name);
	r = file_write_atomic(path, buf, len, 0644, true);
	free(buf);
	return r;
}

/* A warm template's images are tagged warm-<name> and warm-<name>-vm: both must be valid tags
 * (a name of 25+ characters makes a tag snapshotd refuses). */
static bool
template_warm_tags_valid(const char *name)
{
	static const char *const backends[] = {"gvisor", "microvm"};
	for (size_t i = 0; i < ELEMENTSOF(backends); i++) {
		char tag[64];
		warm_tag(name, backends[i], tag, sizeof tag);
		if (!tag_name_valid(tag))
			return false;
	}
	return true;
}

/* Read and re-check a saved record: one that is not exactly what template_save writes is
 * refused whole, with a log line, never half-applied. */
static struct template *
template_load_one(struct supervisor *s, const char *path, const char *name)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r = file_read_all(path, &buf, &len);
	if (r < 0) {
		log_warning_errno(r, "Ignoring unreadable template %s: %m", path);
		return NULL;
	}
	struct template_record rec;
	char why[200];
	if (template_record_parse(buf, len, &rec, why, sizeof why) < 0) {
		log_warning("Ignoring template %s: its record is not valid (%s)", path, why);
		return NULL;
	}
	if (!path_is_inside(rec.rootfs, s->templates_dir) ||
	    (rec.warm && !template_warm_tags_valid(name))) {
		log_warning("Ignoring template %s: its root filesystem is not inside %s, or it is "
			    "warm with a name longer than 24 characters",
			    path, s->templates_dir);
		template_record_clear(&rec);
		return NULL;
	}
	struct template *t = calloc(1, sizeof *t);
	if (!t) {
		log_error_errno(-ENOMEM, "Template %s not loaded: %m", path);
		template_record_clear(&rec);
		return NULL;
	}
	memcpy(t->name, name, strnlen(name, sizeof t->name - 1)); /* a valid name: <= 32 */
	t->rootfs = rec.rootfs;
	t->argv = rec.argv;
	t->argc = rec.argc;
	t->port = rec.port;
	t->memory_limit = rec.memory_limit;
	t->allow_outbound = rec.allow_outbound;
	t->idle_ms = rec.idle_ms;
	t->warm = rec.warm;
	t->standby = rec.standby;
	t->pids_max = rec.pids_max;
	t->cpu_millis = rec.cpu_millis;
	t->env = rec.env;
	t->envc = rec.envc;
	t->cwd = rec.cwd;
	t->egress = rec.egress;
	t->user_set = rec.user_set;
	t->uid = rec.uid;
	t->gid = rec.gid;
	t->imported = rec.imported;
	return t;
}

static void
template_record_load(int dfd, const char *name, const char *path, void *ctx)
{
	(void)dfd;
	struct supervisor *s = ctx;
	if (!template_name_valid(name) || template_find(s, name))
		return;
	struct template *t = template_load_one(s, path, name);
	if (t)
		template_link(s, t);
}

int
templates_load(struct supervisor *s)
{
	char rootfs[512];
	static const char *const web[] = {"/bin/busybox", "httpd", "-f",   "-p",
					  "8080",	  "-h",	   "/www", NULL};
	static const char *const app[] = {"/usr/bin/python3", "/app/app.py", "--port", "8080",
					  "--heap-mib",	      "64",	     NULL};
	struct template *builtin[3];
	snprintf(rootfs, sizeof rootfs, "%s/web/rootfs", s->templates_dir);
	builtin[0] = template_new("web", rootfs, web, 8080, 64ull << 20, true);
	snprintf(rootfs, sizeof rootfs, "%s/app/rootfs", s->templates_dir);
	builtin[1] = template_new("app", rootfs, app, 8080, 512ull << 20, true);
	/* E2B's default template (docs/E2B.md): nothing runs but the sandbox agent, whose envd API
	 * port is the one probed for readiness; the program only keeps the sandbox alive */
	static const char *const base[] = {"/bin/sleep", "infinity", NULL};
	snprintf(rootfs, sizeof rootfs, "%s/base/rootfs", s->templates_dir);
	builtin[2] = template_new("base", rootfs, base, AGENT_PROTO_ENVD_PORT, 512ull << 20, true);
	for (size_t i = 0; i < 3; i++) {
		if (!builtin[i])
			return -ENOMEM; /* at start-up: main gives up */
		template_link(s, builtin[i]);
	}

	state_file_each_record(s->state_dir, "templates", template_record_load, s);
	return 0;
}

/* Every check AddTemplate makes itself (the rootfs's tree is netnsd's spawner's: template-
 * check.c); t->rootfs becomes its canonical path. 0 or a D-Bus error. */
int
template_check(struct supervisor *s, struct template *t, sd_bus_error *err)
{
	char real[PATH_MAX];
	if (!template_name_valid(t->name))
		return sd_bus_error_setf(err, ERR("InvalidArgument"),
					 "Template name '%s' must be 1-32 of [a-z0-9_-], starting "
					 "with a letter or digit",
					 t->name);
	if (template_find(s, t->name))
		return sd_bus_error_setf(err, ERR("TemplateExists"), "Template %s exists", t->name);
	/* any member of group warren may add templates: each is a record on disk and in memory
	 * (up to TEMPLATE_RECORD_MAX_BYTES), so their number has a bound */
	unsigned count = 0;
	for (struct template *o = s->templates; o; o = o->next)
		count++;
	if (count >= s->max_templates)
		return sd_bus_error_setf(
			err, ERR("InvalidArgument"),
			"There are %u templates already, the most this Warren keeps "
			"(--max-templates); remove one first",
			count);
	if (t->rootfs[0] != '/' || !realpath(t->rootfs, real) ||
	    !path_is_inside(real, s->templates_dir))
		return sd_bus_error_setf(
			err, ERR("InvalidPath"),
			"Root filesystem %s must be an existing directory inside %s", t->rootfs,
			s->templates_dir);
	if (!port_valid(t->port))
		return sd_bus_error_setf(err, ERR("InvalidArgument"), "Port %u is not 1-65535",
					 t->port);
	uint64_t mem = 0;
	meminfo_bytes("MemTotal", &mem);
	if (t->memory_limit < (16ull << 20) || t->memory_limit > mem)
		return sd_bus_error_setf(
			err, ERR("InvalidArgument"),
			"Memory limit must be between 16 MiB and the host's %llu MiB",
			(unsigned long long)(mem >> 20));
	if (t->warm && !template_warm_tags_valid(t->name))
		return sd_bus_error_setf(
			err, ERR("InvalidArgument"),
			"A warm template's name is at most 24 characters (its images "
			"are tagged warm-<name> and warm-<name>-vm); '%s' has %zu",
			t->name, strlen(t->name));
	struct template_record rec = template_to_record(t);
	char why[200];
	if (template_record_check(&rec, why, sizeof why) < 0)
		return sd_bus_error_setf(err, ERR("InvalidArgument"), "Template %s: %s", t->name,
					 why);
	free(t->rootfs);
	t->rootfs = strdup(real);
	if (!t->rootfs)
		return sd_bus_error_set_errno(err, ENOMEM);
	return 0;
}

int
template_add(struct supervisor *s, struct template *t, sd_bus_error *err)
{
	int r = template_check(s, t, err);
	if (r < 0)
		return r;
	r = template_save(s, t);
	if (r < 0)
		return sd_bus_error_set_errnof(err, -r, "Saving template %s: %s", t->name,
					       strerror(-r));
	template_link(s, t);
	log_info("Template %s added (%s)", t->name, t->rootfs);
	return 0;
}

void
template_free(struct template *t)
{
	free(t->rootfs);
	for (size_t i = 0; i < t->argc; i++)
		free(t->argv[i]);
	free(t->argv);
	for (size_t i = 0; i < t->envc; i++)
		free(t->env[i]);
	free(t->env);
	free(t->cwd);
	free(t->egress);
	free(t);
}

/* Ask snapshotd to drop a warm image; absent is fine, and a refusal only leaves a tag that
 * RemoveTag can take later (logged). */
static void
warm_tag_dropped(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	ipc_close_fds(fds, n_fds);
	if (r < 0 && r != -ENOENT)
		log_warning_errno(r, "Removing warm image %s: %s", (char *)ud,
				  helper_message(resp, "%m"));
	free(ud);
}

static void
warm_tag_drop(const char *tag)
{
	char *name = strdup(tag);
	if (!name) {
		log_error_errno(-ENOMEM, "Warm image %s stays: %m", tag);
		return;
	}
	if (image_remove_call(tag, warm_tag_dropped, name) < 0) {
		log_warning("Warm image %s stays: snapshotd is not connected", tag);
		free(name);
	}
}

int
template_remove(struct supervisor *s, const char *name, sd_bus_error *err)
{
	struct template *t = template_find(s, name);
	if (!t)
		return sd_bus_error_setf(err, ERR("NoSuchTemplate"), "No template %s", name);
	if (t->builtin)
		return sd_bus_error_setf(err, ERR("InvalidArgument"), "Template %s is built in",
					 name);
	if (t->warming)
		return sd_bus_error_setf(err, ERR("TemplateInUse"),
					 "Template %s is being warmed; try again once its image is "
					 "taken",
					 name);
	/* its sandboxes keep it; standby ones go with it, once none is still restoring (their
	 * restore holds the warm image) */
	for (struct sandbox *sb = s->sandboxes; sb; sb = sb->next)
		if (!strcmp(sb->template_name, name) && sb->state != SANDBOX_DESTROYING &&
		    sandbox_visible(sb))
			return sd_bus_error_setf(err, ERR("TemplateInUse"),
						 "Sandbox %s uses template %s", sb->id, name);
	for (struct sandbox *sb = s->sandboxes; sb; sb = sb->next) {
		if (strcmp(sb->template_name, name) || sb->state == SANDBOX_DESTROYING)
			continue;
		if (sb->spawning)
			return sd_bus_error_setf(
				err, ERR("TemplateInUse"),
				"A standby sandbox of %s is being restored; try again "
				"once it runs",
				name);
	}
	for (struct sandbox *sb = s->sandboxes, *next; sb; sb = next) {
		next = sb->next;
		if (!strcmp(sb->template_name, name) && sb->state != SANDBOX_DESTROYING)
			sandbox_destroy(sb);
	}
	char path[512], tag[64];
	snprintf(path, sizeof path, "%s/templates/%s", s->state_dir, name);
	if (unlink(path) < 0 && errno != ENOENT)
		return sd_bus_error_set_errnof(err, errno, "Removing %s: %m", path);
	static const char *const backends[] = {"gvisor", "microvm"};
	for (size_t i = 0; i < ELEMENTSOF(backends); i++) {
		warm_tag(name, backends[i], tag, sizeof tag);
		warm_tag_drop(tag);
	}
	for (struct template **pp = &s->templates; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	if (t->imported)
		template_import_remove_tree(name); /* importd made its tree: it goes too */
	log_info("Template %s removed", name);
	template_free(t);
	return 0;
}
