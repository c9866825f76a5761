/* warren-clusterd: its calls to the local supervisor (org.warren.Warren1 on the system bus), the
 * way warrenctl and warren-e2b-api make them; sd-bus is on the libevent loop (bus-event.c) so a
 * create that waits for its sandbox (seconds) never stops the loop: the lease must be kept alive
 * and other hosts' requests answered meanwhile. What comes back is checked before it is used. */
#include "clusterd.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUS_NAME "org.warren.Warren1"
#define MANAGER_PATH "/org/warren/Warren1"
#define MANAGER_IFACE "org.warren.Warren1.Manager"
#define ERR_PREFIX "org.warren.Warren1.Error."
/* the supervisor's start timeout is 60 s */
#define CREATE_TIMEOUT_USEC (90ull * 1000000)

int
cluster_bus_list(struct cluster *c, struct local_sandbox **out, size_t *n)
{
	sd_bus_message *reply = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	*out = NULL;
	*n = 0;
	int r = sd_bus_call_method(c->bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListSandboxes",
				   &e, &reply, "");
	sd_bus_error_free(&e);
	if (r < 0)
		return r;
	size_t cap = 0;
	const char *id, *tmpl, *state, *path;
	r = sd_bus_message_enter_container(reply, 'a', "(ssso)");
	while (r >= 0 &&
	       (r = sd_bus_message_read(reply, "(ssso)", &id, &tmpl, &state, &path)) > 0) {
		if (!cluster_input_id_ok(id) || !cluster_input_template_ok(tmpl) ||
		    !cluster_input_name_ok(state) || strlen(state) >= sizeof(*out)->state)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			struct local_sandbox *bigger = realloc(*out, cap * sizeof **out);
			if (!bigger) {
				r = -ENOMEM;
				break;
			}
			*out = bigger;
		}
		snprintf((*out)[*n].id, sizeof(*out)->id, "%s", id);
		snprintf((*out)[*n].template, sizeof(*out)->template, "%s", tmpl);
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
cluster_bus_pool(struct cluster *c, uint32_t *size, uint32_t *free_slots)
{
	int r = sd_bus_get_property_trivial(c->bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
					    "PoolSize", NULL, 'u', size);
	if (r >= 0)
		r = sd_bus_get_property_trivial(c->bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
						"PoolFree", NULL, 'u', free_slots);
	return r;
}

/* GetTemplate(name) for each listed template: {name: standby} of the warm ones */
json_t *
cluster_bus_warm(struct cluster *c)
{
	sd_bus_message *reply = NULL;
	json_t *warm = json_object();
	int r = sd_bus_call_method(c->bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListTemplates",
				   NULL, &reply, "");
	if (r >= 0)
		r = sd_bus_message_enter_container(reply, 'a', "(ssasqtb)");
	while (r >= 0 && sd_bus_message_enter_container(reply, 'r', "ssasqtb") > 0) {
		const char *name, *rootfs;
		if (sd_bus_message_read(reply, "ss", &name, &rootfs) < 0 ||
		    sd_bus_message_skip(reply, "asqtb") < 0 ||
		    sd_bus_message_exit_container(reply) < 0)
			break;
		if (!cluster_input_template_ok(name))
			continue;
		sd_bus_message *t = NULL;
		if (sd_bus_call_method(c->bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "GetTemplate",
				       NULL, &t, "s", name) < 0)
			continue;
		int is_warm = 0;
		uint32_t standby = 0;
		if (sd_bus_message_enter_container(t, 'a', "{sv}") >= 0) {
			const char *k;
			while (sd_bus_message_enter_container(t, 'e', "sv") > 0) {
				if (sd_bus_message_read(t, "s", &k) < 0)
					break;
				if (!strcmp(k, "warm"))
					sd_bus_message_read(t, "v", "b", &is_warm);
				else if (!strcmp(k, "standby"))
					sd_bus_message_read(t, "v", "u", &standby);
				else
					sd_bus_message_skip(t, "v");
				sd_bus_message_exit_container(t);
			}
		}
		sd_bus_message_unref(t);
		if (is_warm)
			json_object_set_new(warm, name, json_integer(standby));
	}
	sd_bus_message_unref(reply);
	return warm;
}

struct create_call {
	struct cluster *c;
	cluster_create_done done;
	void *userdata;
};

static int
create_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct create_call *call = userdata;
	const sd_bus_error *e = sd_bus_message_get_error(m);
	const char *id = NULL, *path, *url;
	(void)ret_error;
	if (e) {
		const char *name = e->name ? e->name : "Failed";
		if (!strncmp(name, ERR_PREFIX, strlen(ERR_PREFIX)))
			name += strlen(ERR_PREFIX);
		call->done(call->c, NULL, name, e->message ? e->message : "", call->userdata);
	} else if (sd_bus_message_read(m, "sos", &id, &path, &url) < 0 ||
		   !cluster_input_id_ok(id)) {
		call->done(call->c, NULL, "Failed", "a malformed answer from the supervisor",
			   call->userdata);
	} else {
		call->done(call->c, id, NULL, NULL, call->userdata);
	}
	free(call);
	return 0;
}

int
cluster_bus_create_async(struct cluster *c, const char *template, cluster_create_done done,
			 void *userdata)
{
	sd_bus_message *m = NULL;
	struct create_call *call = calloc(1, sizeof *call);
	if (!call)
		return -ENOMEM;
	*call = (struct create_call){c, done, userdata};
	int r = sd_bus_message_new_method_call(c->bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
					       "CreateSandbox");
	if (r >= 0)
		r = sd_bus_message_append(m, "sa{sv}", template, 2, "wait", "b", 1,
					  /* the host counted a free slot before accepting: a
					   * slot that is not there at once is an error, not a
					   * wait (the placer tries another host) */
					  "pool_timeout_ms", "u", (uint32_t)1000);
	if (r >= 0)
		r = sd_bus_call_async(c->bus, NULL, m, create_reply, call, CREATE_TIMEOUT_USEC);
	sd_bus_message_unref(m);
	if (r < 0)
		free(call);
	return r;
}
