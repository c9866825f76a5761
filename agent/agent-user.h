/* The agent's reading of the template program's ids, "UID:GID" (the gVisor spawner's --user,
 * the microVM's warren.user=): pure, libc only, so the static agent and a unit test
 * (tests/unit/test-agent-user.c) share it. */
#pragma once
#include <stdbool.h>
#include <sys/types.h>

#define AGENT_USER_ID_MAX 65534 /* as the supervisor's TEMPLATE_ID_MAX: never nobody's -1 */

/* "UID:GID", each 1 to 10 decimal digits (no sign, no blank) and at most AGENT_USER_ID_MAX:
 * the whole string when exact, else up to a blank or the command line's final newline.
 * 0, or -EINVAL with *uid and *gid untouched. */
int agent_user_parse(const char *s, bool exact, uid_t *uid, gid_t *gid);
