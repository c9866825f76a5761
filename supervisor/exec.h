/* Exec at the D-Bus edge (exec.c): named results, the caller's time limit, and what an exec
 * holds off while it runs. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

struct sandbox;

int exec_start(struct sandbox *sb, sd_bus_message *m, char **argv, uint32_t timeout_ms);
/* An exec of this sandbox is under way. */
bool exec_running(const struct sandbox *sb);
/* The idle freeze of a sandbox running an exec waits for its end: true when deferred. */
bool exec_defer_idle_freeze(struct sandbox *sb);
/* Sandbox.Exec(as) and Sandbox.ExecWithOptions(as, a{sv}) */
int method_exec(sd_bus_message *m, void *ud, sd_bus_error *err);
