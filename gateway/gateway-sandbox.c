/* warren-gateway's confinement: no capabilities at all (it runs as its own user and listens on
 * an unprivileged port) and this seccomp allow-list. */
#include "gateway.h"

static const char *const groups[] = {"@default", "@basic-io", "@event-loop", "@ipc", NULL};
const struct seccomp_policy gateway_seccomp = {.name = "gateway", .groups = groups};
