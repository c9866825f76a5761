/* warren-gateway's confinement: no capabilities at all (it runs as its own user and listens on
 * an unprivileged port) and this seccomp allow-list. */
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "gateway.h"

/* libevent's evbuffer_read() sizes its read with FIONREAD (proxy.c's bufferevents) */
static const unsigned long ioctls[] = {FIONREAD, 0};
/* AF_UNIX: IPC; AF_INET/AF_INET6: the listener, upstream connections, probes */
static const int families[] = {AF_UNIX, AF_INET, AF_INET6, 0};
static const char *const groups[] = {"@default", "@basic-io", "@event-loop", "@ipc", NULL};
const struct seccomp_policy gateway_seccomp = {
	.name = "gateway", .groups = groups, .ioctls = ioctls, .socket_families = families};
