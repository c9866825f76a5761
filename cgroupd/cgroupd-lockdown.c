/* warren-cgroupd's confinement once its subtree is set up: root without any capability (it
 * writes nothing more), and an allow-list for the event loop and the notify socket. */
#include <sys/socket.h>

#include "cgroupd.h"
#include "seccomp-policy.h"

/* AF_UNIX: sd_notify's datagram to systemd */
static const int families[] = {AF_UNIX, 0};
static const char *const groups[] = {"@default", "@basic-io", "@event-loop", "@ipc", NULL};
const struct seccomp_policy cgroupd_seccomp = {
	.name = "cgroupd", .groups = groups, .socket_families = families};
