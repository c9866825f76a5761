/* Templates (supervisor, a feature): the registry's load, add and remove (templates.c),
 * AddTemplate's checks (template-check.c) and limits (template-limits.c), imports from OCI
 * images (template-import.c). The lookup, template_find, is the sandbox layer's (supervisor.h). */
#pragma once
#include "supervisor.h"

int templates_load(struct supervisor *s);
int template_add(struct supervisor *s, struct template *t, sd_bus_error *err);
int template_check(struct supervisor *s, struct template *t, sd_bus_error *err);
/* template-check.c: AddTemplate's checks, then netnsd's spawner checks the rootfs's tree, then
 * template_add; m is answered when that is done (t is taken). 1, or <0 with err set. */
int template_add_checked(struct supervisor *s, struct template *t, sd_bus_message *m,
			 sd_bus_error *err);
int template_remove(struct supervisor *s, const char *name, sd_bus_error *err);
void template_free(struct template *t);

/* template-limits.c: AddTemplate's pids/cpu_millis option into t (range-checked; the host's
 * caps are netnsd's); 0 or a D-Bus error. */
int template_limit_option(sd_bus_message *m, const char *key, struct template *t,
			  sd_bus_error *err);
/* template-import.c: the link to warren-importd (ImportTemplate, GetTemplate: manager-dbus.c) */
const char *template_import_busy(void);
int template_import_start(struct template *t, bool argv_set, bool port_set, int source,
			  const char *format, const char *reference, int vm, sd_bus_message *m,
			  sd_bus_error *err);
void template_import_remove_tree(const char *name);
extern const char *template_importd_socket;
