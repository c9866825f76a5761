/* Sandbox owners (logs.c): who may read a sandbox's console logs, and more (owner.c). */
#pragma once
#include <systemd/sd-bus.h>

/* Record the sender of m (CreateSandbox, ForkTag, BranchSandbox) as the owner of sandbox id. */
void logs_owner_set(const char *id, sd_bus_message *m);
void logs_owner_remove(const char *id);
/* The owner's uid; 0 (root's alone) when none is recorded. */
uid_t logs_owner_get(const char *id);
int logs_sender_uid(sd_bus_message *m, uid_t *uid);
