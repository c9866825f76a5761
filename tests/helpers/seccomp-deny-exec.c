/* seccomp-deny-exec FILE -- CMD...: exec CMD under a seccomp deny-list like systemd's
 * SystemCallFilter=~...: every syscall named in FILE (one a line, e.g. the output of
 * `systemd-analyze syscall-filter @group`) kills the process, everything else is allowed, and
 * the filter is inherited by CMD's children. Names libseccomp does not know are skipped, as
 * systemd skips them. Used to show that runsc runs under the netnsd unit's filter. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	if (argc < 4 || strcmp(argv[2], "--")) {
		fprintf(stderr, "usage: seccomp-deny-exec FILE -- CMD...\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "r");
	if (!f)
		return perror(argv[1]), 2;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	/* like systemd for a root service with CAP_SYS_ADMIN: no no_new_privs */
	if (!ctx || seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0)
		return fprintf(stderr, "seccomp_init failed\n"), 2;
	char line[256];
	int n = 0;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		char *name = line + strspn(line, " \t");
		if (!*name || *name == '#' || *name == '@')
			continue;
		int nr = seccomp_syscall_resolve_name(name);
		if (nr == __NR_SCMP_ERROR) {
			fprintf(stderr, "note: %s unknown to libseccomp, skipped\n", name);
			continue;
		}
		int r = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, nr, 0);
		if (r < 0 && r != -EEXIST)
			return fprintf(stderr, "%s: %s\n", name, strerror(-r)), 2;
		n++;
	}
	fclose(f);
	if (seccomp_load(ctx) < 0)
		return perror("seccomp_load"), 2;
	fprintf(stderr, "seccomp-deny-exec: %d syscalls denied\n", n);
	execvp(argv[3], argv + 3);
	perror(argv[3]);
	return 127;
}
