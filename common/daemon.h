/* What every Warren daemon does the same way: common options, its listening socket (socket
 * activation or its own), the lock-down order, signals, readiness. */
#pragma once
#include <event2/event.h>
#include <getopt.h>
#include <stdbool.h>
#include <sys/types.h>

#include "seccomp-policy.h"

#define DAEMON_MAX_PEERS 8

struct daemon_common {
	const char *name;
	const char *socket_path;
	uid_t peer_uids[DAEMON_MAX_PEERS]; /* besides root */
	gid_t socket_gid;
	size_t n_peer_uids;
	bool dump_seccomp, seccomp_debug, debug;
	const char *seccomp_probe;
	struct event_base *base;
	/* run by daemon_run before each wait for events (bus-event.c re-arms sd-bus there) */
	void (*loop_prologue)(void *data);
	void *loop_prologue_data;
};

#define DAEMON_COMMON_OPTIONS                                                                      \
	{"socket", required_argument, NULL, 1001}, {"peer-users", required_argument, NULL, 1002},  \
		{"dump-seccomp", no_argument, NULL, 1003},                                         \
		{"seccomp-debug", no_argument, NULL, 1004},                                        \
		{"seccomp-probe", required_argument, NULL, 1005},                                  \
	{                                                                                          \
		"debug", no_argument, NULL, 1006                                                   \
	}
#define DAEMON_COMMON_HELP                                                                         \
	"  --socket PATH        listening socket (default /run/warren/<daemon>.sock)\n"            \
	"  --peer-users U,...   users besides root that may connect\n"                             \
	"  --dump-seccomp       print the seccomp filter and exit\n"                               \
	"  --seccomp-debug      report a forbidden syscall by name instead of a silent kill\n"     \
	"  --seccomp-probe P    make one call after lock-down and exit (tests: allowed,\n"         \
	"                       forbidden, open-read|update|write, unshare-net|user|mount,\n"      \
	"                       ioctl-fionread|tiocsti, socket-unix|netlink|inet|packet)\n"        \
	"  --debug              debug logging\n"

void daemon_common_init(struct daemon_common *dc, const char *name);
/* 1 if opt was a common option, 0 if not, <0 on a bad value. */
int daemon_common_option(struct daemon_common *dc, int opt, const char *arg);
/* The listening socket: fd 3 from socket activation, or bound here (0660, group of the first
 * peer user). */
int daemon_listen(struct daemon_common *dc);
/* Drop to user (NULL: stay root) keeping caps, set no_new_privs, load the policy. Handles
 * --dump-seccomp (prints, exits) and --seccomp-probe (calls, exits). */
int daemon_lock_down(struct daemon_common *dc, const char *user, const int *caps, size_t n_caps,
		     const struct seccomp_policy *policy);
/* SIGTERM/SIGINT end the loop; SIGPIPE ignored. READY=1 sent by the caller via notify_send. */
int daemon_run(struct daemon_common *dc);
