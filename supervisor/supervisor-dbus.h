/* The supervisor's D-Bus objects (the D-Bus layer): org.warren.Warren1.Manager (manager-dbus.c)
 * and one org.warren.Warren1.Sandbox per sandbox (sandbox-dbus.c), with their signals. */
#pragma once
#include "supervisor.h"

int manager_dbus_init(struct supervisor *s);
int sandbox_dbus_init(struct supervisor *s);
void sandbox_dbus_emit_new(struct sandbox *sb, bool added);
void sandbox_dbus_emit_state(struct sandbox *sb);
