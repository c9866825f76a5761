/* Templates (supervisor): the built-in web and app, and user templates added over D-Bus,
 * persisted under <state-dir>/templates/<name>. Validated here for a friendly error; netnsd
 * validates again before it starts anything. */
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "supervisor.h"

#include <dirent.h>
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
	snprintf(t->name, sizeof t->name, "%s", name);
	t->rootfs = strdup(rootfs);
	for (t->argc = 0; argv[t->argc]; t->argc++)
		;
	t->argv = calloc(t->argc + 1, sizeof *t->argv);
	for (size_t i = 0; i < t->argc; i++)
		t->argv[i] = strdup(argv[i]);
	t->port = port;
	t->memory_limit = mem;
	t->builtin = builtin;
	return t;
}

struct template *
template_find(struct supervisor *s, const char *name)
{
	for (struct template *t = s->templates; t; t = t->next)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

static void
template_link(struct supervisor *s, struct template *t)
{
	struct template **pp = &s->templates;
	while (*pp)
		pp = &(*pp)->next;
	*pp = t;
}

static int
template_save(struct supervisor *s, struct template *t)
{
	char path[512];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fprintf(f,
		"rootfs=%s\nport=%u\nmemory=%llu\nallow_outbound=%d\nidle_ms=%u\nwarm=%d\n"
		"standby=%u\n",
		t->rootfs, t->port, (unsigned long long)t->memory_limit, t->allow_outbound, t->idle_ms,
		t->warm, t->standby);
	for (size_t i = 0; i < t->argc; i++)
		fprintf(f, "arg=%s\n", t->argv[i]);
	fclose(f);
	snprintf(path, sizeof path, "%s/templates/%s", s->state_dir, t->name);
	int r = file_write_atomic(path, buf, len, 0644, true);
	free(buf);
	return r;
}

struct loading {
	struct template *t;
};

static int
template_kv(const char *k, const char *v, void *ud)
{
	struct template *t = ud;
	if (!strcmp(k, "rootfs")) {
		free(t->rootfs);
		t->rootfs = strdup(v);
	} else if (!strcmp(k, "port"))
		t->port = (unsigned)atoi(v);
	else if (!strcmp(k, "memory"))
		t->memory_limit = strtoull(v, NULL, 10);
	else if (!strcmp(k, "allow_outbound"))
		t->allow_outbound = atoi(v) != 0;
	else if (!strcmp(k, "idle_ms"))
		t->idle_ms = (uint32_t)strtoul(v, NULL, 10);
	else if (!strcmp(k, "warm"))
		t->warm = atoi(v) != 0;
	else if (!strcmp(k, "standby"))
		t->standby = (unsigned)strtoul(v, NULL, 10);
	else if (!strcmp(k, "arg")) {
		t->argv = realloc(t->argv, (t->argc + 2) * sizeof *t->argv);
		t->argv[t->argc++] = strdup(v);
		t->argv[t->argc] = NULL;
	}
	return 0;
}

int
templates_load(struct supervisor *s)
{
	char rootfs[512];
	static const char *const web[] = {"/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/www",
					  NULL};
	static const char *const app[] = {"/usr/bin/python3", "/app/app.py", "--port", "8080",
					  "--heap-mib", "64", NULL};
	snprintf(rootfs, sizeof rootfs, "%s/web/rootfs", s->templates_dir);
	template_link(s, template_new("web", rootfs, web, 8080, 64ull << 20, true));
	snprintf(rootfs, sizeof rootfs, "%s/app/rootfs", s->templates_dir);
	template_link(s, template_new("app", rootfs, app, 8080, 512ull << 20, true));

	char dir[512];
	snprintf(dir, sizeof dir, "%s/templates", s->state_dir);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!template_name_valid(de->d_name) || template_find(s, de->d_name))
			continue;
		static const char *const none[] = {NULL};
		struct template *t = template_new(de->d_name, "", none, 0, 0, false);
		char path[800];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (file_read_kv(path, template_kv, t) < 0 || !t->argc) {
			log_warning("Ignoring unreadable template %s", path);
			template_free(t);
			continue;
		}
		template_link(s, t);
	}
	closedir(d);
	return 0;
}

int
template_add(struct supervisor *s, struct template *t, sd_bus_error *err)
{
	char real[PATH_MAX];
	if (!template_name_valid(t->name))
		return sd_bus_error_setf(err, ERR("InvalidArgument"),
					 "Template name '%s' must be 1-32 of [a-z0-9_-], starting "
					 "with a letter or digit",
					 t->name);
	if (template_find(s, t->name))
		return sd_bus_error_setf(err, ERR("TemplateExists"), "Template %s exists", t->name);
	if (t->rootfs[0] != '/' || !realpath(t->rootfs, real) ||
	    !path_is_inside(real, s->templates_dir))
		return sd_bus_error_setf(err, ERR("InvalidPath"),
					 "Root filesystem %s must be an existing directory inside %s",
					 t->rootfs, s->templates_dir);
	if (!port_valid(t->port))
		return sd_bus_error_setf(err, ERR("InvalidArgument"), "Port %u is not 1-65535",
					 t->port);
	uint64_t mem = 0;
	meminfo_bytes("MemTotal", &mem);
	if (t->memory_limit < (16ull << 20) || t->memory_limit > mem)
		return sd_bus_error_setf(err, ERR("InvalidArgument"),
					 "Memory limit must be between 16 MiB and the host's %llu MiB",
					 (unsigned long long)(mem >> 20));
	if (t->argc == 0 || t->argc > 64 || !t->argv[0][0])
		return sd_bus_error_setf(err, ERR("InvalidArgument"),
					 "The command must have 1-64 arguments");
	free(t->rootfs);
	t->rootfs = strdup(real);
	int r = template_save(s, t);
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
				  resp && resp->message ? resp->message : "%m");
	free(ud);
}

static void
warm_tag_drop(const char *tag)
{
	char *name = strdup(tag);
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
			return sd_bus_error_setf(err, ERR("TemplateInUse"),
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
	log_info("Template %s removed", name);
	template_free(t);
	return 0;
}
