/* warren-e2b-api: its calls to the supervisor (org.warren.Warren1 on the system bus), made the
 * way warrenctl makes them. The supervisor checks every argument again; what comes back is
 * checked here too (ids must be Warren ids) before it reaches an HTTP answer. Calls are
 * synchronous: the daemon answers one E2B request at a time (docs/E2B.md). */
#include "e2b-api.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUS_NAME "org.warren.Warren1"
#define MANAGER_PATH "/org/warren/Warren1"
#define MANAGER_IFACE "org.warren.Warren1.Manager"
#define SANDBOX_IFACE "org.warren.Warren1.Sandbox"
#define ERR_PREFIX "org.warren.Warren1.Error."

/* a create waits for the sandbox to answer; the supervisor's start timeout is 60 s */
#define CREATE_TIMEOUT_USEC (90ull * 1000000)
#define CALL_TIMEOUT_USEC (30ull * 1000000)

static char *
sandbox_path(const char *id)
{
	char *p = NULL;
	if (sd_bus_path_encode("/org/warren/Warren1/sandbox", id, &p) < 0)
		return NULL;
	return p;
}

int
e2b_bus_create(struct e2b_api *a, const char *template, const char *egress,
	       uint32_t pool_timeout_ms, char id[E2B_ID_LEN + 1], sd_bus_error *e)
{
	sd_bus_message *m = NULL, *reply = NULL;
	int r = sd_bus_message_new_method_call(a->bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
					       "CreateSandbox");
	if (r < 0)
		return r;
	r = sd_bus_message_append(m, "s", template);
	if (r >= 0)
		r = sd_bus_message_open_container(m, 'a', "{sv}");
	if (r >= 0)
		r = sd_bus_message_append(m, "{sv}", "wait", "b", 1);
	if (r >= 0 && a->backend)
		r = sd_bus_message_append(m, "{sv}", "backend", "s", a->backend);
	if (r >= 0 && pool_timeout_ms)
		r = sd_bus_message_append(m, "{sv}", "pool_timeout_ms", "u", pool_timeout_ms);
	/* the operator's template policy is the most a client's network may open: the supervisor
	 * checks it against the template the create uses */
	if (r >= 0 && egress)
		r = sd_bus_message_append(m, "{sv}", "egress", "s", egress);
	if (r >= 0 && egress)
		r = sd_bus_message_append(m, "{sv}", "egress_within_template", "b", 1);
	if (r >= 0)
		r = sd_bus_message_close_container(m);
	if (r >= 0)
		r = sd_bus_call(a->bus, m, CREATE_TIMEOUT_USEC, e, &reply);
	const char *got = NULL, *path, *url;
	if (r >= 0)
		r = sd_bus_message_read(reply, "sos", &got, &path, &url);
	if (r >= 0 && !e2b_input_id_ok(got))
		r = log_error_errno(-EBADMSG,
				    "The supervisor answered a create with a malformed id");
	if (r >= 0)
		memcpy(id, got, E2B_ID_LEN + 1);
	sd_bus_message_unref(reply);
	sd_bus_message_unref(m);
	return r;
}

int
e2b_bus_sandbox_call(struct e2b_api *a, const char *id, const char *method, sd_bus_error *e)
{
	_cleanup_free_ char *path = sandbox_path(id);
	if (!path)
		return -ENOMEM;
	sd_bus_message *m = NULL, *reply = NULL;
	int r = sd_bus_message_new_method_call(a->bus, &m, BUS_NAME, path, SANDBOX_IFACE, method);
	if (r >= 0)
		r = sd_bus_call(a->bus, m, CALL_TIMEOUT_USEC, e, &reply);
	sd_bus_message_unref(reply);
	sd_bus_message_unref(m);
	return r;
}

int
e2b_bus_set_timeout(struct e2b_api *a, const char *id, uint64_t seconds, const char *action,
		    sd_bus_error *e)
{
	_cleanup_free_ char *path = sandbox_path(id);
	if (!path)
		return -ENOMEM;
	return sd_bus_call_method(a->bus, BUS_NAME, path, SANDBOX_IFACE, "SetTimeout", e, NULL,
				  "ts", seconds, action);
}

int
e2b_bus_set_egress(struct e2b_api *a, const char *id, const char *egress, sd_bus_error *e)
{
	_cleanup_free_ char *path = sandbox_path(id);
	if (!path)
		return -ENOMEM;
	/* the supervisor waits up to 35 s for netnsd: sd-bus's default 25 s would answer 503
	 * for a change that still lands */
	sd_bus_message *m = NULL, *reply = NULL;
	int r = sd_bus_message_new_method_call(a->bus, &m, BUS_NAME, path, SANDBOX_IFACE,
					       "SetEgressWithinTemplate");
	if (r >= 0)
		r = sd_bus_message_append(m, "s", egress);
	if (r >= 0)
		r = sd_bus_call(a->bus, m, 40 * 1000000ull, e, &reply);
	sd_bus_message_unref(reply);
	sd_bus_message_unref(m);
	return r;
}

int
e2b_bus_end_usec(struct e2b_api *a, const char *id, uint64_t *end_usec)
{
	_cleanup_free_ char *path = sandbox_path(id);
	if (!path)
		return -ENOMEM;
	return sd_bus_get_property_trivial(a->bus, BUS_NAME, path, SANDBOX_IFACE, "EndUSec", NULL,
					   't', end_usec);
}

int
e2b_bus_state(struct e2b_api *a, const char *id, char *state, size_t len)
{
	_cleanup_free_ char *path = sandbox_path(id);
	char *v = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	if (!path)
		return -ENOMEM;
	int r = sd_bus_get_property_string(a->bus, BUS_NAME, path, SANDBOX_IFACE, "State", &e, &v);
	if (r < 0) {
		r = sd_bus_error_has_name(&e, ERR_PREFIX "NoSuchSandbox") ||
				    sd_bus_error_has_name(&e, SD_BUS_ERROR_UNKNOWN_OBJECT)
			    ? -ENOENT
			    : r;
		sd_bus_error_free(&e);
		return r;
	}
	if (!e2b_input_text_ok(v, strlen(v), 23)) {
		free(v);
		return -EBADMSG;
	}
	snprintf(state, len, "%s", v);
	free(v);
	return 0;
}

int
e2b_bus_memory_current(struct e2b_api *a, const char *id, uint64_t *bytes)
{
	_cleanup_free_ char *path = sandbox_path(id);
	if (!path)
		return -ENOMEM;
	return sd_bus_get_property_trivial(a->bus, BUS_NAME, path, SANDBOX_IFACE, "MemoryCurrent",
					   NULL, 't', bytes);
}

int
e2b_bus_list(struct e2b_api *a, struct e2b_bus_entry **out, size_t *n)
{
	sd_bus_message *reply = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	*out = NULL;
	*n = 0;
	int r = sd_bus_call_method(a->bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListSandboxes",
				   &e, &reply, "");
	sd_bus_error_free(&e);
	if (r < 0)
		return r;
	size_t cap = 0;
	const char *id, *tmpl, *state, *path;
	r = sd_bus_message_enter_container(reply, 'a', "(ssso)");
	while (r >= 0 &&
	       (r = sd_bus_message_read(reply, "(ssso)", &id, &tmpl, &state, &path)) > 0) {
		if (!e2b_input_id_ok(id) || strlen(state) >= sizeof(*out)->state)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			struct e2b_bus_entry *bigger = realloc(*out, cap * sizeof **out);
			if (!bigger) {
				r = -ENOMEM;
				break;
			}
			*out = bigger;
		}
		memcpy((*out)[*n].id, id, E2B_ID_LEN + 1);
		snprintf((*out)[*n].state, sizeof(*out)->state, "%s", state);
		(*n)++;
	}
	sd_bus_message_unref(reply);
	if (r < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return r < 0 ? r : 0;
}

int
e2b_bus_template_memory(struct e2b_api *a, const char *template, uint64_t *bytes)
{
	sd_bus_message *reply = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	int r = sd_bus_call_method(a->bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListTemplates",
				   &e, &reply, "");
	sd_bus_error_free(&e);
	if (r < 0)
		return r;
	r = sd_bus_message_enter_container(reply, 'a', "(ssasqtb)");
	int found = -ENOENT;
	while (r >= 0 && sd_bus_message_enter_container(reply, 'r', "ssasqtb") > 0) {
		const char *name, *rootfs;
		uint16_t port;
		uint64_t mem;
		int built;
		r = sd_bus_message_read(reply, "ss", &name, &rootfs);
		if (r >= 0)
			r = sd_bus_message_skip(reply, "as");
		if (r >= 0)
			r = sd_bus_message_read(reply, "qtb", &port, &mem, &built);
		if (r >= 0)
			r = sd_bus_message_exit_container(reply);
		if (r >= 0 && !strcmp(name, template)) {
			*bytes = mem;
			found = 0;
		}
	}
	sd_bus_message_unref(reply);
	return r < 0 ? r : found;
}

int
e2b_bus_error_status(const sd_bus_error *e, int r)
{
	static const struct {
		const char *name;
		int status;
	} map[] = {
		{ERR_PREFIX "NoSuchTemplate", 404},    {ERR_PREFIX "TemplateNotBuilt", 400},
		{ERR_PREFIX "NoSuchSandbox", 404},     {ERR_PREFIX "InvalidArgument", 400},
		{ERR_PREFIX "NoSuchBackend", 400},     {ERR_PREFIX "BadState", 409},
		{ERR_PREFIX "Destroyed", 404},	       {ERR_PREFIX "PoolExhausted", 503},
		{ERR_PREFIX "HelperUnavailable", 503}, {ERR_PREFIX "HostFull", 503},
	};
	if (e && sd_bus_error_is_set(e)) {
		for (size_t i = 0; i < ELEMENTSOF(map); i++)
			if (sd_bus_error_has_name(e, map[i].name))
				return map[i].status;
		if (sd_bus_error_has_name(e, SD_BUS_ERROR_UNKNOWN_OBJECT))
			return 404;
		if (sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED))
			return 403;
		if (sd_bus_error_has_name(e, SD_BUS_ERROR_UNKNOWN_METHOD)) /* an older supervisor */
			return 501;
		if (sd_bus_error_has_name(e, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
		    sd_bus_error_has_name(e, SD_BUS_ERROR_NAME_HAS_NO_OWNER) ||
		    sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY) ||
		    sd_bus_error_has_name(e, SD_BUS_ERROR_TIMEOUT))
			return 503;
	}
	return r == -ETIMEDOUT ? 503 : 500;
}

int
e2b_bus_branch(struct e2b_api *a, const char *id, const char *tag, unsigned count,
	       char (*ids)[E2B_ID_LEN + 1], size_t *n, sd_bus_error *e)
{
	sd_bus_message *reply = NULL;
	*n = 0;
	sd_bus_message *m = NULL;
	int r = sd_bus_message_new_method_call(a->bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
					       "BranchSandbox");
	if (r >= 0)
		r = sd_bus_message_append(m, "ssu", id, tag, (uint32_t)count);
	/* a checkpoint, a restore of the parent and of every child */
	if (r >= 0)
		r = sd_bus_call(a->bus, m, 300ull * 1000000, e, &reply);
	if (r >= 0)
		r = sd_bus_message_enter_container(reply, 'a', "s");
	const char *got;
	while (r >= 0 && (r = sd_bus_message_read(reply, "s", &got)) > 0)
		if (e2b_input_id_ok(got) && *n < count)
			memcpy(ids[(*n)++], got, E2B_ID_LEN + 1);
	sd_bus_message_unref(reply);
	sd_bus_message_unref(m);
	return r < 0 ? r : 0;
}

int
e2b_bus_remove_tag(struct e2b_api *a, const char *tag)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	int r = sd_bus_call_method(a->bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "RemoveTag", &e,
				   NULL, "s", tag);
	if (r < 0 && sd_bus_error_has_name(&e, ERR_PREFIX "NoSuchTag"))
		r = 0;
	else if (r < 0 && sd_bus_error_has_name(&e, ERR_PREFIX "TagBusy"))
		r = -EBUSY;
	else if (r < 0)
		log_warning("RemoveTag %s: %s", tag, e.message ? e.message : strerror(-r));
	sd_bus_error_free(&e);
	return r;
}
