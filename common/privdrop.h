/* Capability drop and user switch with libcap-ng, written once for every daemon. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

/* Keep exactly caps (effective, permitted and bounding; no inheritable or ambient), switch to
 * user if not NULL (its primary group, no supplementary groups), set no_new_privs.
 * Started as root: libcap-ng switches the ids keeping caps. Started as user already (setpriv
 * --ambient-caps, systemd User= + AmbientCapabilities=): each listed capability must be
 * permitted, and the rest is dropped. */
int privdrop_apply(const char *user, const int *caps, size_t n_caps);
int privdrop_lookup_user(const char *user, uid_t *uid, gid_t *gid);
