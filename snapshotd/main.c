/* warren-snapshotd: owns the image store (/var/lib/warren/images) and reclaims frozen
 * sandboxes' memory. Opens its store, drops to the capabilities in snapshotd-lockdown.c, loads
 * its seccomp allow-list and serves the supervisor. */
#include "cgroup.h"
#include "log.h"
#include "macro.h"
#include "notify.h"
#include "privdrop.h"
#include "snapshotd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The image cache is on a world-writable tmpfs (/dev/shm) under a name anyone can guess: made
 * here if missing, and used only if it is a real directory of ours alone (0700), or another
 * user who made it first would read (and change) tenants' decompressed images. */
static int
cache_dir_check(const char *dir, uid_t user, gid_t group)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return log_error_errno(-errno, "Cannot create the image cache %s: %m", dir);
	struct stat st, fst;
	if (lstat(dir, &st) < 0)
		return log_error_errno(-errno, "Image cache %s: %m", dir);
	int fd = S_ISDIR(st.st_mode) ? open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
				     : -1;
	/* the directory checked is the one opened (and chown'ed below) */
	bool same = fd >= 0 && fstat(fd, &fst) == 0 && fst.st_dev == st.st_dev &&
		    fst.st_ino == st.st_ino;
	/* user: started as root (the tests' harness), the user it switches to, who may already
	 * own the cache from an earlier start */
	bool ours = st.st_uid == geteuid() || (user != (uid_t)-1 && st.st_uid == user);
	if (!same || !ours || (st.st_mode & 07777) != 0700) {
		safe_close(fd);
		return log_error_errno(-EACCES,
				       "Image cache %s is not a directory of ours alone (owner %u, "
				       "mode %04o%s): refusing to start",
				       dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
				       S_ISLNK(st.st_mode) ? ", a symlink" : "");
	}
	/* and hands it to that user, as it does the store: snapshotd then writes decompressed
	 * images there without CAP_DAC_OVERRIDE */
	int r = 0;
	if (user != (uid_t)-1 && st.st_uid != user && fchown(fd, user, group) < 0)
		r = log_error_errno(-errno, "Image cache %s: chown: %m", dir);
	close(fd);
	return r;
}

int
main(int argc, char **argv)
{
	static struct snapshotd s;
	daemon_common_init(&s.dc, "snapshotd");
	s.store_dir = "/var/lib/warren/images";
	s.reclaim_dir = "/var/lib/warren/reclaim";
	s.cgroup_parent = "/warren";
	s.compress_below = 500;
	s.zstd_level = 3;
	s.cache_dir = "/dev/shm/warren-images";
	s.store_reserve = 16ull << 20;
	s.reclaim_min = 2ull << 20;
	bool measure_disk = false;
	static const struct option opts[] = {{"store", required_argument, NULL, 's'},
					     {"compress-below", required_argument, NULL, 'b'},
					     {"zstd-level", required_argument, NULL, 'z'},
					     {"image-cache", required_argument, NULL, 'i'},
					     {"measure-disk", no_argument, NULL, 'm'},
					     {"reclaim-dir", required_argument, NULL, 'r'},
					     {"cgroup-parent", required_argument, NULL, 'c'},
					     {"store-reserve", required_argument, NULL, 'R'},
					     {"reclaim-min", required_argument, NULL, 'M'},
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
		else if (c == 'c') {
			if (!cgroup_parent_valid(optarg)) {
				log_error("Bad --cgroup-parent %s (an absolute cgroup path, short "
					  "enough for /<sandbox id>)",
					  optarg);
				return 2;
			}
			s.cgroup_parent = optarg;
		} else if (c == 'b')
			s.compress_below = (unsigned)atoi(optarg);
		else if (c == 'z')
			s.zstd_level = atoi(optarg);
		else if (c == 'i')
			s.cache_dir = optarg;
		else if (c == 'm')
			measure_disk = true;
		else if (c == 'R')
			s.store_reserve = strtoull(optarg, NULL, 10) << 20;
		else if (c == 'M')
			s.reclaim_min = strtoull(optarg, NULL, 10) << 20;
		else {
			printf("Usage: warren-snapshotd [--store DIR] [--reclaim-dir DIR] "
			       "[--cgroup-parent "
			       "P] [OPTIONS]\n"
			       "  --store-reserve MIB    a snapshot is refused unless the store "
			       "keeps this\n"
			       "                         much free beyond the sandbox's memory "
			       "(default 16)\n"
			       "  --compress-below MBPS  zstd tag images when the store disk "
			       "writes slower "
			       "(default 500, 0 never)\n"
			       "  --zstd-level N         (default 3)\n"
			       "  --reclaim-min MIB      a frozen sandbox holding less is not "
			       "reclaimed (default 2)\n"
			       "  --image-cache DIR      decompressed images (default "
			       "/dev/shm/warren-images)\n"
			       "  --measure-disk         measure the store disk's write speed "
			       "again, print "
			       "it, exit\n" DAEMON_COMMON_HELP);
			return c == 'h' ? 0 : 2;
		}
	}
	if (s.dc.dump_seccomp)
		return daemon_lock_down(&s.dc, NULL, NULL, 0, &snapshotd_seccomp) < 0;
	s.dc.base = event_base_new();
	s.store_fd = s.dc.seccomp_probe ? -1 : store_open(s.store_dir);
	if (s.store_fd < 0 && !s.dc.seccomp_probe)
		return 1;
	if (s.store_fd >= 0 && measure_disk) {
		unsigned mbps;
		int r = disk_speed(&s, true, &mbps);
		if (r < 0)
			return log_error_errno(r, "Cannot measure %s: %m", s.store_dir), 1;
		printf("%s: %u MB/s sequential writes; tag images %s compressed (below %u MB/s)\n",
		       s.store_dir, mbps, mbps < s.compress_below ? "are" : "are not",
		       s.compress_below);
		return 0;
	}
	if (s.store_fd >= 0)
		image_clean_temporaries(&s);
	bool root = geteuid() == 0;
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	if (root && privdrop_lookup_user(snapshotd_user, &uid, &gid) < 0)
		uid = (uid_t)-1, gid = (gid_t)-1;
	if (!s.dc.seccomp_probe && cache_dir_check(s.cache_dir, uid, gid) < 0)
		return 1;
	int lfd = daemon_listen(&s.dc);
	if (lfd < 0)
		return 1;
	/* The store becomes its own user's, so the images it writes after the drop are too (and
	 * the spawner hands it the files runsc and the VMMs write there: image-proof.c). */
	if (root && s.store_fd >= 0 && uid != (uid_t)-1 && fchown(s.store_fd, uid, gid) < 0)
		return log_error_errno(-errno, "chown %s: %m", s.store_dir), 1;
	/* and so does the reclaim directory (its swap file and the saved zswap settings), made
	 * now while root may: after the drop it has no CAP_DAC_OVERRIDE to make it beside root's */
	if (root && !s.dc.seccomp_probe && uid != (uid_t)-1) {
		if (mkdir(s.reclaim_dir, 0700) < 0 && errno != EEXIST)
			log_warning_errno(-errno, "Cannot create %s: %m", s.reclaim_dir);
		_cleanup_close_ int rfd =
			open(s.reclaim_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat rst;
		if (rfd >= 0 && fstat(rfd, &rst) == 0 && rst.st_uid != uid &&
		    fchown(rfd, uid, gid) < 0)
			return log_error_errno(-errno, "chown %s: %m", s.reclaim_dir), 1;
	}
	/* zswap's parameters are root's: opened now, set through the fds after the drop */
	s.zswap_fd[0] = s.zswap_fd[1] = s.zswap_fd[2] = -1;
	if (!s.dc.seccomp_probe)
		reclaim_open_zswap(&s);
	/* From root (the tests' harness) it switches itself; under the unit or warren-launch it
	 * starts as its user with the capabilities ambient, and privdrop checks that. */
	if (daemon_lock_down(&s.dc, snapshotd_user, snapshotd_caps, snapshotd_n_caps,
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
