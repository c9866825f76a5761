/* warren-e2b-api's confinement: no capabilities at all (it listens on an unprivileged port,
 * calls the supervisor as a D-Bus client and writes only its own state directory) and this
 * seccomp allow-list. */
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "e2b-api.h"
#include "seccomp-policy.h"

/* libevent's evbuffer_read() sizes its read with FIONREAD (evhttp connections) */
static const unsigned long ioctls[] = {FIONREAD, 0};
/* AF_UNIX: the system bus; AF_INET: the HTTP listener and the gateway (/init) */
static const int families[] = {AF_UNIX, AF_INET, 0};
/* @file-read: the API key file, read again when it changes; @file-write: the state file
 * (temporary, fsync, rename) */
static const char *const groups[] = {"@default",   "@basic-io",	  "@event-loop", "@ipc",
				     "@file-read", "@file-write", NULL};
const struct seccomp_policy e2b_api_seccomp = {
	.name = "e2b-api", .groups = groups, .ioctls = ioctls, .socket_families = families};
