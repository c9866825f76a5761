/* Validation of the names that cross process boundaries: sandbox ids, template names, ports.
 * Both sides call these; the privileged side never trusts the unprivileged side's check. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define SANDBOX_ID_LEN 12 /* fixed width: runsc matches container ids by prefix */

bool sandbox_id_valid(const char *id);
/* 12 lower-case hex characters from getrandom. */
int sandbox_id_new(char id[SANDBOX_ID_LEN + 1]);
/* [a-z0-9][a-z0-9_-]{0,31} */
bool template_name_valid(const char *name);
bool port_valid(unsigned port);
/* Is path (already canonical) inside dir (canonical)? */
bool path_is_inside(const char *path, const char *dir);
