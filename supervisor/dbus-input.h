/* Checks of what arrives over D-Bus (supervisor): one checker every method calls first. */
#pragma once
#include <systemd/sd-bus.h>

#define DBUS_STRING_MAX 4096  /* bytes in any one string argument (a path, an argv element) */
#define DBUS_STRINGS_MAX 1024 /* strings in one call (argv, options) */

/* Walk every argument of m (into arrays, structs, variants, dict entries): each string, object
 * path and signature at most DBUS_STRING_MAX bytes and free of control characters, at most
 * DBUS_STRINGS_MAX of them. Rewinds m. 0, or an InvalidArgument error naming the argument. */
int dbus_input_check(sd_bus_message *m, sd_bus_error *err);
/* A tag from a user: a valid name, not a reserved (warm-) one. */
int dbus_input_user_tag(const char *tag, sd_bus_error *err);
