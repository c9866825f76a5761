/* Seccomp allow-lists built from named syscall groups (like systemd's @groups). Policies are
 * data in each daemon's <daemon>-lockdown.c; this is the compiler and loader. A group means what
 * its name says: @file-read opens files read-only (an argument rule on the open flags), only
 * @file-write may create or truncate; unshare(), ioctl() and socket() are in no group and are
 * allowed per policy with the flags, requests and address families that daemon uses. */
#pragma once
#include <stdbool.h>
#include <stdio.h>

struct seccomp_policy {
	const char *name;
	const char *const *groups; /* NULL-terminated list of "@group" names */
	const char *const *extra;  /* NULL-terminated list of single syscalls */
	/* unshare() only with a subset of these CLONE_NEW* flags; 0: no unshare() at all */
	unsigned long unshare_flags;
	/* ioctl() only with these requests (0-terminated); NULL: no ioctl() at all */
	const unsigned long *ioctls;
	/* socket() only in these address families (0-terminated); NULL: no socket() at all.
	 * socketpair() is allowed for AF_UNIX when AF_UNIX is listed. */
	const int *socket_families;
};

/* Load the filter: default action kills the process (debug: SIGSYS trap that names the call).
 * A group or syscall name that does not exist is an error (-EINVAL), never skipped. */
int seccomp_policy_load(const struct seccomp_policy *p, bool debug);
/* Print the compiled filter (pseudo filter code) to f; -EINVAL as for load. */
int seccomp_policy_dump(const struct seccomp_policy *p, FILE *f);
/* Compile only, for tests: 0 or -EINVAL. */
int seccomp_policy_check(const struct seccomp_policy *p);
/* The syscalls of a group, for docs and tests; NULL if unknown. */
const char *const *seccomp_group_syscalls(const char *group);
/* Every group's name, NULL-terminated, for tests. */
extern const char *const seccomp_group_names[];
