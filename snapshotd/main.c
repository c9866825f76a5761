/* warren-snapshotd: owns the image store (/var/lib/warren/images) and reclaims frozen
 * sandboxes' memory. Opens its store, drops to the capabilities in snapshotd-sandbox.c, loads
 * its seccomp allow-list and serves the supervisor. */
#include "log.h"
#include "notify.h"
#include "snapshotd.h"

#include <stdio.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	static struct snapshotd s;
	daemon_common_init(&s.dc, "snapshotd");
	s.store_dir = "/var/lib/warren/images";
	s.reclaim_dir = "/var/lib/warren/reclaim";
	s.cgroup_parent = "/warren";
	static const struct option opts[] = {{"store", required_argument, NULL, 's'},
					     {"reclaim-dir", required_argument, NULL, 'r'},
					     {"cgroup-parent", required_argument, NULL, 'c'},
					     {"help", no_argument, NULL, 'h'},
					     DAEMON_COMMON_OPTIONS,
					     {}};
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		int r = daemon_common_option(&s.dc, c, optarg);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		if (c == 's')
			s.store_dir = optarg;
		else if (c == 'r')
			s.reclaim_dir = optarg;
		else if (c == 'c')
			s.cgroup_parent = optarg;
		else {
			printf("Usage: warren-snapshotd [--store DIR] [--reclaim-dir DIR] [--cgroup-parent "
			       "P] [OPTIONS]\n" DAEMON_COMMON_HELP);
			return c == 'h' ? 0 : 2;
		}
	}
	if (s.dc.dump_seccomp)
		return daemon_lock_down(&s.dc, NULL, NULL, 0, &snapshotd_seccomp) < 0;
	s.dc.base = event_base_new();
	s.store_fd = s.dc.seccomp_probe ? -1 : store_open(s.store_dir);
	if (s.store_fd < 0 && !s.dc.seccomp_probe)
		return 1;
	if (s.store_fd >= 0)
		image_clean_temporaries(&s);
	int lfd = daemon_listen(&s.dc);
	if (lfd < 0)
		return 1;
	bool root = geteuid() == 0;
	if (daemon_lock_down(&s.dc, NULL, snapshotd_caps, root ? snapshotd_n_caps : 0,
			     &snapshotd_seccomp) < 0)
		return 1;
	struct ipc_server_config cfg = {.name = "snapshotd",
					.table = snapshotd_handlers,
					.n_table = snapshotd_n_handlers,
					.allowed_uids = s.dc.peer_uids,
					.n_allowed_uids = s.dc.n_peer_uids,
					.drop_on_violation = true,
					.userdata = &s};
	s.server = ipc_server_new(s.dc.base, lfd, &cfg);
	ipc_server_set_ready(s.server, true);
	notify_send("READY=1");
	log_info("Ready, store %s", s.store_dir);
	daemon_run(&s.dc);
	ipc_server_free(s.server);
	return 0;
}
