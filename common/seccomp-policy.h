/* Seccomp allow-lists built from named syscall groups (like systemd's @groups). Policies are
 * data in each daemon's <daemon>-sandbox.c; this is the compiler and loader. */
#pragma once
#include <stdbool.h>
#include <stdio.h>

struct seccomp_policy {
	const char *name;
	const char *const *groups; /* NULL-terminated list of "@group" names */
	const char *const *extra;  /* NULL-terminated list of single syscalls */
};

/* Load the filter: default action kills the process (debug: SIGSYS trap that names the call). */
int seccomp_policy_load(const struct seccomp_policy *p, bool debug);
/* Print the compiled filter (pseudo filter code) to f. */
int seccomp_policy_dump(const struct seccomp_policy *p, FILE *f);
/* The syscalls of a group, for docs and tests; NULL if unknown. */
const char *const *seccomp_group_syscalls(const char *group);
