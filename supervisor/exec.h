/* Exec in a sandbox (exec.c): named results, the caller's time limit, and what an exec holds
 * off while it runs. Sandbox.Exec and ExecWithOptions are sandbox-dbus.c's. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

struct sandbox;

/* ExecWithOptions' timeout_ms: its default and bound */
#define EXEC_TIMEOUT_DEFAULT 60000
#define EXEC_TIMEOUT_MAX 600000 /* netnsd's bound */

int exec_start(struct sandbox *sb, sd_bus_message *m, char **argv, uint32_t timeout_ms);
/* An exec of this sandbox is under way. */
bool exec_running(const struct sandbox *sb);
/* The idle freeze of a sandbox running an exec waits for its end: true when deferred. */
bool exec_defer_idle_freeze(struct sandbox *sb);
