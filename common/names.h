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

/* Image tags share template names' alphabet and length; "warm-" tags belong to the supervisor
 * (a warm template's image), so a tag from a user may not start with it. */
#define TAG_WARM_PREFIX "warm-"
bool tag_name_valid(const char *tag);
bool tag_reserved(const char *tag);

/* Every string that enters Warren from outside (D-Bus arguments, saved records, helper
 * requests): at most max bytes and no control character (C0, DEL, or C1 in UTF-8), which could
 * end a line of a saved record or of a log. Returns 0, -E2BIG (too long) or -EINVAL (a control
 * character; *bad_at, when given, is its byte offset). */
int string_check(const char *s, size_t max, size_t *bad_at);
bool string_valid(const char *s, size_t max);
