/* Capability drop with libcap-ng, written once for every daemon. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

/* Keep exactly caps (effective+permitted, and the bounding set), switch to user if not NULL,
 * drop supplementary groups except the user's, set no_new_privs. */
int privdrop_apply(const char *user, const int *caps, size_t n_caps);
int privdrop_lookup_user(const char *user, uid_t *uid, gid_t *gid);
