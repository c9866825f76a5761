/* Who may act on one sandbox over D-Bus (owner.c). */
#pragma once
#include <systemd/sd-bus.h>

struct sandbox;

/* 0 when the sender of m is root or the sandbox's owner; otherwise sets err to AccessDenied
 * (saying the caller may not `what` it) and returns its negative errno. */
int owner_check(sd_bus_message *m, const struct sandbox *sb, const char *what, sd_bus_error *err);
