/* Templates from OCI images (supervisor): the import ImportTemplate asks for (the Manager
 * methods ImportTemplate and GetTemplate are manager-dbus.c's, on a second vtable of
 * org.warren.Warren1.Manager), its ImportProgress signal, and the link to warren-importd, the
 * helper that alone writes the templates directory: the supervisor has no privilege and passes
 * the caller's source fd through, then saves the template record from importd's answer (the
 * image's command, env, working directory, user and port, overridden by the caller's options).
 * Only one import runs at a time (importd's rule; a second gets TemplateBusy at once). */
#include "sandbox-egress.h"
#include "log.h"
#include "macro.h"
#include "supervisor.h"
#include "templates.h"
#include "template-record.h"

#include "warren/v1/importd.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

const char *template_importd_socket = "/run/warren/importd.sock";

struct import_job {
	struct operation *op; /* the ImportTemplate call */
	struct template *t;   /* the caller's options; completed from the image */
	bool argv_set, port_set, memory_set;
};

static struct ipc_client *importd;
static struct import_job *job;

static void
importd_event(const IpcResponse *ev, void *ud)
{
	if (ev->body_case != WARREN__V1__RESPONSE__BODY_IMPORT_PROGRESS)
		return;
	const Warren__V1__ImportProgressEvent *p = ev->import_progress;
	/* importd is privileged but its events are relayed, so they are checked like input */
	if (!p->name || !template_name_valid(p->name) || !p->phase || !string_valid(p->phase, 32))
		return;
	sd_bus_emit_signal(sup->bus, MANAGER_PATH, MANAGER_IFACE, "ImportProgress", "sstt", p->name,
			   p->phase, p->done, p->total);
}

static void
importd_down(struct ipc_client *c, void *ud)
{
	log_warning("Lost warren-importd; it is connected again at the next import");
}

static int
importd_connect(void)
{
	if (!importd)
		importd =
			ipc_client_new(sup->dc.base, "importd", importd_event, importd_down, NULL);
	if (!importd)
		return -ENOMEM;
	if (ipc_client_connected(importd))
		return 0;
	/* importd runs as root: a socket served by anyone else is not it */
	return ipc_client_connect(importd, template_importd_socket, 0);
}

static void
job_free(struct import_job *j)
{
	if (!j)
		return;
	operation_cancel(&j->op); /* answered, or the answer could not be sent */
	if (j->t)
		template_free(j->t);
	free(j);
}

static void
removed_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	ipc_close_fds(fds, n_fds);
	if (r < 0)
		log_warning_errno(r, "Imported tree %s stays: %s", (char *)ud,
				  helper_message(resp, "%m"));
	free(ud);
}

void
template_import_remove_tree(const char *name)
{
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	Warren__V1__RemoveImportedRequest q = WARREN__V1__REMOVE_IMPORTED_REQUEST__INIT;
	q.name = (char *)name;
	req.body_case = WARREN__V1__REQUEST__BODY_REMOVE_IMPORTED;
	req.remove_imported = &q;
	char *n = strdup(name);
	if (!n) {
		log_error_errno(-ENOMEM, "Imported tree of %s stays: %m", name);
		return;
	}
	if (importd_connect() < 0 ||
	    ipc_client_call(importd, &req, NULL, 0, 60000, removed_done, n) < 0) {
		log_warning("Imported tree of %s stays: warren-importd is not reachable", name);
		free(n);
	}
}

/* The image's strings as a NULL-terminated copy, each checked as a D-Bus string would be. */
static char **
strv_copy_checked(char **v, size_t n, bool env)
{
	char **out = calloc(n + 1, sizeof *out);
	for (size_t i = 0; out && i < n; i++) {
		if (!v[i] ||
		    (env ? !template_env_valid(v[i]) : !string_valid(v[i], TEMPLATE_ARG_MAX)))
			return NULL; /* leaks the copies made so far; an error path of a bad helper
				      */
		out[i] = strdup(v[i]);
		if (!out[i])
			return NULL; /* the caller answers as for a bad list; leaks as above */
	}
	return out;
}

/* The image's env, then the caller's entries replacing the image's of the same key. */
static int
merge_env(struct template *t, char **image_env, size_t n)
{
	char **caller = t->env;
	size_t nc = t->envc;
	if (n + nc > TEMPLATE_ENVC_MAX)
		return -E2BIG;
	char **out = calloc(n + nc + 1, sizeof *out);
	if (!out)
		return -ENOMEM;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (!template_env_valid(image_env[i]))
			return -EINVAL;
		size_t kl = (size_t)(strchr(image_env[i], '=') - image_env[i]) + 1;
		bool replaced = false;
		for (size_t j = 0; j < nc; j++)
			replaced |= !strncmp(caller[j], image_env[i], kl);
		if (!replaced && !(out[o++] = strdup(image_env[i])))
			return -ENOMEM; /* leaks out: the import fails, as for -EINVAL */
	}
	for (size_t j = 0; j < nc; j++)
		out[o++] = caller[j];
	free(caller);
	t->env = out;
	t->envc = o;
	return 0;
}

static void
import_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	ipc_close_fds(fds, n_fds);
	struct import_job *j = job;
	job = NULL;
	if (!j)
		return;
	sd_bus_error err = SD_BUS_ERROR_NULL;
	struct template *t = j->t;
	const Warren__V1__ImportTemplateResponse *res =
		resp && resp->body_case == WARREN__V1__RESPONSE__BODY_IMPORT_TEMPLATE
			? resp->import_template
			: NULL;
	if (r < 0 || !res) {
		sd_bus_error_setf(&err, ERR("ImportFailed"), "Importing %s failed: %s", t->name,
				  helper_message(resp, strerror(r < 0 ? -r : EIO)));
		goto out;
	}
	bool tree_ours = true;
	if (!res->rootfs || !string_valid(res->rootfs, TEMPLATE_PATH_MAX)) {
		sd_bus_error_setf(&err, ERR("ImportFailed"),
				  "warren-importd's answer is not valid");
		goto out;
	}
	free(t->rootfs);
	t->rootfs = strdup(res->rootfs);
	if (!t->rootfs) {
		sd_bus_error_set_errno(&err, ENOMEM);
		goto remove;
	}
	t->imported = true;
	if (!j->argv_set) {
		if (res->n_argv == 0 || res->n_argv > TEMPLATE_ARGC_MAX) {
			sd_bus_error_setf(
				&err, ERR("InvalidArgument"),
				"The image has no command (entrypoint or cmd), or more than "
				"%d arguments: give one (warrenctl: --cmd)",
				TEMPLATE_ARGC_MAX);
			goto remove;
		}
		t->argv = strv_copy_checked(res->argv, res->n_argv, false);
		t->argc = res->n_argv;
	}
	if (!j->port_set) {
		if (!port_valid(res->port)) {
			sd_bus_error_setf(&err, ERR("InvalidArgument"),
					  "The image exposes no TCP port: give one (warrenctl: "
					  "--port)");
			goto remove;
		}
		t->port = res->port;
	}
	if (!t->cwd && res->cwd && res->cwd[0] && strcmp(res->cwd, "/") &&
	    !(t->cwd = strdup(res->cwd))) {
		sd_bus_error_set_errno(&err, ENOMEM);
		goto remove;
	}
	if (!t->user_set && (res->uid || res->gid)) {
		t->user_set = true;
		t->uid = res->uid;
		t->gid = res->gid;
	}
	if (!t->argv || merge_env(t, res->env, res->n_env) < 0) {
		sd_bus_error_setf(&err, ERR("InvalidArgument"),
				  "The image's command or environment is not valid (at most %d "
				  "entries, KEY=value, no control characters)",
				  TEMPLATE_ENVC_MAX);
		goto remove;
	}
	if (template_add(sup, t, &err) < 0)
		goto remove;
	j->t = NULL; /* the template list has it */
	sd_bus_message *reply = NULL;
	if (operation_new_return(j->op, &reply) >= 0) {
		sd_bus_message_open_container(reply, 'a', "{sv}");
		sd_bus_message_append(reply, "{sv}", "rootfs", "s", t->rootfs);
		sd_bus_message_append(reply, "{sv}", "digest", "s", res->digest ? res->digest : "");
		sd_bus_message_append(reply, "{sv}", "layers", "u", res->layers);
		sd_bus_message_append(reply, "{sv}", "files", "u", res->files);
		sd_bus_message_append(reply, "{sv}", "bytes", "t", res->bytes);
		sd_bus_message_append(reply, "{sv}", "dropped", "u", res->dropped);
		sd_bus_message_append(reply, "{sv}", "modes_fixed", "u", res->modes_fixed);
		sd_bus_message_close_container(reply);
		operation_send(&j->op, reply);
		sd_bus_message_unref(reply);
	}
	job_free(j);
	return;
remove:
	if (tree_ours)
		template_import_remove_tree(t->name);
out:
	operation_error_bus(&j->op, &err);
	sd_bus_error_free(&err);
	job_free(j);
}

/* The one import under way: its template's name, or NULL. */
const char *
template_import_busy(void)
{
	return job ? job->t->name : NULL;
}

/* ImportTemplate, read and checked by manager-dbus.c: t (taken) is completed from the image
 * warren-importd unpacks from source, and m answered once it is added. */
int
template_import_start(struct template *t, bool argv_set, bool port_set, int source,
		      const char *format, const char *reference, int vm, sd_bus_message *m,
		      sd_bus_error *err)
{
	struct import_job *j = calloc(1, sizeof *j);
	if (!j) {
		template_free(t);
		return -ENOMEM;
	}
	j->t = t;
	j->argv_set = argv_set;
	j->port_set = port_set;
	int r = importd_connect();
	if (r < 0) {
		job_free(j);
		return sd_bus_error_setf(err, ERR("HelperUnavailable"),
					 "The import helper (warren-importd) is not running: %s",
					 strerror(-r));
	}
	IpcRequest req = WARREN__V1__REQUEST__INIT;
	Warren__V1__ImportTemplateRequest q = WARREN__V1__IMPORT_TEMPLATE_REQUEST__INIT;
	q.name = t->name;
	q.format = (char *)format;
	q.reference = (char *)reference;
	q.vm_image = vm;
	req.body_case = WARREN__V1__REQUEST__BODY_IMPORT_TEMPLATE;
	req.import_template = &q;
	/* an import of a large image takes minutes on this disk; importd bounds it itself */
	r = ipc_client_call(importd, &req, &source, 1, 30 * 60 * 1000, import_done, NULL);
	if (r < 0) {
		job_free(j);
		return sd_bus_error_setf(err, ERR("HelperUnavailable"),
					 "The import helper (warren-importd) did not take the "
					 "import: %s",
					 strerror(-r));
	}
	j->op = operation_new(m);
	job = j;
	log_info("Importing template %s from a %s image", t->name, format);
	return 1;
}
