/* Sandbox lifetimes (lifetime.c, supervisor): a sandbox is destroyed, or paused, when its
 * lifetime ends. */
#pragma once
#include <stdint.h>
#include <systemd/sd-bus.h>

struct supervisor;
struct sandbox;

#include "lifetime-record.h"

/* SetTimeout: seconds from now (0 clears) and what happens then ("kill", "pause"; "" with 0).
 * Recorded on disk before it is armed. 0, or <0 with err set (InvalidArgument, BadState, or
 * the write failing). Emits PropertiesChanged for EndUSec and TimeoutAction. */
int lifetime_set(struct sandbox *sb, uint64_t seconds, const char *action, sd_bus_error *err);
/* The sandbox's lifetime: realtime µs of its end (0: none) and its action. */
uint64_t lifetime_end_usec(const char *id);
const char *lifetime_action_of(const char *id); /* "" when none */
/* At start, after sandboxes_load: re-arm every recorded lifetime of a known sandbox (one
 * already over fires once netnsd's sandboxes are re-adopted), remove the others. */
void lifetime_load(struct supervisor *s);
/* The sandbox is gone (sandbox_hooks.forgotten): its timer and record go with it. */
void lifetime_forget(const struct sandbox *sb);
