/* warren-clusterd's confinement: no capabilities at all (it listens on an unprivileged port,
 * calls the supervisor as a D-Bus client, talks HTTP to etcd and to other hosts' clusterd, and
 * writes no file) and this seccomp allow-list. */
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "clusterd.h"
#include "seccomp-policy.h"

/* libevent's evbuffer_read() sizes its read with FIONREAD (evhttp connections) */
static const unsigned long ioctls[] = {FIONREAD, 0};
/* AF_UNIX: the system bus; AF_INET: the HTTP listener, etcd and the other hosts */
static const int families[] = {AF_UNIX, AF_INET, 0};
/* @file-read: /proc/meminfo and /proc/loadavg for the capacity record */
static const char *const groups[] = {"@default", "@basic-io",  "@event-loop",
				     "@ipc",	 "@file-read", NULL};
const struct seccomp_policy clusterd_seccomp = {
	.name = "clusterd", .groups = groups, .ioctls = ioctls, .socket_families = families};
