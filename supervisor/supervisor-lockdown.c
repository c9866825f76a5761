/* The supervisor's confinement: it keeps no capabilities (it runs as user warren) and loads
 * this seccomp allow-list: I/O, its event loop, Unix sockets (D-Bus and helpers) and its own
 * state files. */
#include <sys/socket.h>

#include "supervisor.h"

/* AF_UNIX: the system bus and the helpers; no ioctl(), no unshare() */
static const int families[] = {AF_UNIX, 0};
static const char *const groups[] = {"@default",   "@basic-io",	  "@event-loop", "@ipc",
				     "@file-read", "@file-write", NULL};
const struct seccomp_policy supervisor_seccomp = {
	.name = "supervisor", .groups = groups, .socket_families = families};
