/* warren-cgroupd: sets up the delegated cgroup subtree sandboxes live in (cgroupd.h), locks
 * itself down and waits, keeping warren-cgroupd.service active. Root without capabilities:
 * the unit's cgroup is root's, and an unprivileged owner of <unit>/sandboxes could turn its
 * memory controller off under every sandbox. */
#include "cgroupd.h"
#include "cgroup-path.h"
#include "daemon.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "notify.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
usage(void)
{
	printf("Usage: warren-cgroupd [OPTIONS]\n"
	       "Holds the cgroup subtree systemd delegates to warren-cgroupd.service: moves "
	       "itself\n"
	       "to <unit>/cgroupd, enables the unit's controllers for <unit>/sandboxes (netnsd's\n"
	       "and snapshotd's --cgroup-parent), then waits.\n"
	       "  --cgroup-root DIR    where the cgroup hierarchy is mounted (default\n"
	       "                       /sys/fs/cgroup)\n"
	       "  --print-parent       print the sandboxes' cgroup parent once set up\n"
	       "  --help\n" DAEMON_COMMON_HELP);
}

int
main(int argc, char **argv)
{
	static struct daemon_common dc;
	daemon_common_init(&dc, "cgroupd");
	const char *root = "/sys/fs/cgroup";
	bool print_parent = false;
	static const struct option opts[] = {{"cgroup-root", required_argument, NULL, 'r'},
					     {"print-parent", no_argument, NULL, 'P'},
					     {"help", no_argument, NULL, 'h'},
					     DAEMON_COMMON_OPTIONS,
					     {}};
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		int r = daemon_common_option(&dc, c, optarg);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		switch (c) {
		case 'r':
			root = optarg;
			break;
		case 'P':
			print_parent = true;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 2;
		}
	}
	if (optind < argc) {
		usage();
		return 2;
	}
	if (dc.dump_seccomp)
		return daemon_lock_down(&dc, NULL, NULL, 0, &cgroupd_seccomp) < 0;
	if (geteuid() != 0 && !dc.seccomp_probe) {
		log_error("warren-cgroupd must start as root (the delegated cgroup is root's)");
		return 1;
	}
	char own[CGROUP_PATH_MAX], parent[CGROUP_PATH_MAX] = "", why[512] = "";
	/* --seccomp-probe (tests) only locks down and makes its call */
	if (!dc.seccomp_probe) {
		_cleanup_free_ char *text = NULL;
		int r = file_read_all("/proc/self/cgroup", &text, NULL);
		if (r >= 0)
			r = cgroupd_own_path(text, own, sizeof own);
		if (r < 0) {
			log_error_errno(
				r, "Not in a cgroup of its own (start it as "
				   "warren-cgroupd.service, whose Delegate= hands it one): %m");
			return 1;
		}
		if (cgroupd_delegate(root, own, parent, sizeof parent, why, sizeof why) < 0) {
			log_error("Cannot set up the sandboxes' cgroups under %s: %s", own, why);
			return 1;
		}
	}
	if (print_parent) {
		printf("%s\n", parent);
		fflush(stdout);
	}
	dc.base = event_base_new();
	if (!dc.base)
		return log_error("Cannot make the event loop"), 1;
	if (daemon_lock_down(&dc, NULL, NULL, 0, &cgroupd_seccomp) < 0)
		return 1;
	notify_send("READY=1\nSTATUS=Holding the sandboxes' cgroups");
	return daemon_run(&dc) < 0;
}
