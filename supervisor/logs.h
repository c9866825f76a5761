/* Sandbox console logs over D-Bus and sandbox owners (logs.c). */
#pragma once
#include <systemd/sd-bus.h>

/* Record the sender of m (CreateSandbox, ForkTag, BranchSandbox) as the owner of sandbox id. */
void logs_owner_set(const char *id, sd_bus_message *m);
void logs_owner_remove(const char *id);
/* Sandbox.OpenLogs(a{sv} options) -> h */
int method_open_logs(sd_bus_message *m, void *ud, sd_bus_error *err);
