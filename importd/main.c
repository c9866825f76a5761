/* warren-importd: imports OCI images (an image layout directory, an oci-archive or a
 * docker-archive, given as an fd the D-Bus caller opened) as template root filesystems, for the
 * supervisor, which has no privilege to write the templates directory. One import at a time,
 * each in a forked job process:
 *   job (root, importd's capabilities)
 *     -> stage child: becomes warren-import, no capabilities, no_new_privs; skopeo, umoci unpack
 *        --rootless and the config parse (import-stage.c) in <staging>/<job>/work, its own;
 *     -> every process of warren-import killed; the unpacked tree copied as root's into
 *        <templates>/.import-<name>.<pid> (import-copy.c), renamed to <templates>/<name>;
 *     -> warren-vm-image builds the microVM initramfs (or root disk) from the copied tree.
 * Progress and the result come back over a pipe, framed; importd relays progress as events. */
#include "importd.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "names.h"
#include "notify.h"
#include "privdrop.h"

#include "warren/v1/importd.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static struct importd D;

static int
dir_check(const char *path, int mode, bool create)
{
	if (create)
		mkdir(path, (mode_t)mode);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return log_error_errno(-errno, "%s: %m", path);
	if (st.st_uid != 0 || (st.st_mode & 022)) {
		close(fd);
		return log_error_errno(-EPERM, "%s must be root's and writable by root only", path);
	}
	return fd;
}

int
main(int argc, char **argv)
{
	struct importd *d = &D;
	daemon_common_init(&d->dc, "importd");
	d->templates_dir = "/var/lib/warren/templates";
	d->staging_dir = "/var/lib/warren/import";
	d->import_user = importd_user;
	d->skopeo = "/usr/bin/skopeo";
	d->umoci = "/usr/bin/umoci";
	d->vm_image = "warren-vm-image";
	d->max_bytes = IMPORTD_MAX_BYTES_DEFAULT;
	d->job_pipe = -1;
	static const struct option opts[] = {{"templates-dir", required_argument, NULL, 't'},
					     {"staging-dir", required_argument, NULL, 's'},
					     {"import-user", required_argument, NULL, 'u'},
					     {"skopeo", required_argument, NULL, 'S'},
					     {"umoci", required_argument, NULL, 'U'},
					     {"vm-image", required_argument, NULL, 'v'},
					     {"agent", required_argument, NULL, 'a'},
					     {"max-bytes", required_argument, NULL, 'm'},
					     {"help", no_argument, NULL, 'h'},
					     DAEMON_COMMON_OPTIONS,
					     {}};
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		int r = daemon_common_option(&d->dc, c, optarg);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		switch (c) {
		case 't':
			d->templates_dir = optarg;
			break;
		case 's':
			d->staging_dir = optarg;
			break;
		case 'u':
			d->import_user = optarg;
			break;
		case 'S':
			d->skopeo = optarg;
			break;
		case 'U':
			d->umoci = optarg;
			break;
		case 'v':
			d->vm_image = optarg;
			break;
		case 'a':
			d->agent = optarg;
			break;
		case 'm':
			d->max_bytes = strtoull(optarg, NULL, 10) << 20;
			break;
		default:
			printf("Usage: warren-importd [OPTIONS]\n"
			       "  --templates-dir DIR  where imported trees go "
			       "(/var/lib/warren/templates)\n"
			       "  --staging-dir DIR    root's; the import user's work directories "
			       "(/var/lib/warren/import)\n"
			       "  --import-user USER   the unprivileged unpacker (warren-import)\n"
			       "  --skopeo PATH, --umoci PATH, --vm-image CMD, --agent PATH\n"
			       "  --max-bytes MIB      largest source and unpacked tree "
			       "(4096)\n" DAEMON_COMMON_HELP);
			return c == 'h' ? 0 : 2;
		}
	}
	if (geteuid() != 0)
		return log_error_errno(-EPERM, "warren-importd runs as root (its trees must be "
					       "root's)"),
		       1;
	char agent[PATH_MAX];
	if (!d->agent) {
		/* next to this binary, as installed (libexec/warren) */
		ssize_t n = readlink("/proc/self/exe", agent, sizeof agent - 20);
		if (n > 0) {
			agent[n] = 0;
			char *slash = strrchr(agent, '/');
			strcpy(slash ? slash + 1 : agent, "warren-agent");
			d->agent = agent;
		}
	}
	if (privdrop_lookup_user(d->import_user, &d->import_uid, &d->import_gid) < 0 ||
	    d->import_uid == 0)
		return log_error_errno(-ENOENT,
				       "No unprivileged user %s (scripts/setup.sh makes it)",
				       d->import_user),
		       1;
	d->templates_fd = dir_check(d->templates_dir, 0755, false);
	/* 0711: the import user may pass through to its work directory, list nothing */
	d->staging_fd = dir_check(d->staging_dir, 0711, true);
	if (d->templates_fd < 0 || d->staging_fd < 0)
		return 1;
	fchmod(d->staging_fd, 0711);
	/* the blob store, shared by digest between imports: the import user's */
	if (mkdirat(d->staging_fd, "store", 0700) < 0 && errno != EEXIST)
		return log_error_errno(-errno, "%s/store: %m", d->staging_dir), 1;
	if (fchownat(d->staging_fd, "store", d->import_uid, d->import_gid, AT_SYMLINK_NOFOLLOW) < 0)
		return log_error_errno(-errno, "%s/store: %m", d->staging_dir), 1;
	d->dc.base = event_base_new();
	int lfd = daemon_listen(&d->dc);
	if (lfd < 0)
		return 1;
	if (privdrop_apply(NULL, importd_caps, importd_n_caps) < 0)
		return log_error("Cannot drop to importd's capabilities"), 1;
	struct ipc_server_config cfg = {.name = "importd",
					.table = importd_handlers,
					.n_table = importd_n_handlers,
					.allowed_uids = d->dc.peer_uids,
					.n_allowed_uids = d->dc.n_peer_uids,
					.drop_on_violation = true,
					.userdata = d};
	d->server = ipc_server_new(d->dc.base, lfd, &cfg);
	ipc_server_set_ready(d->server, true);
	notify_send("READY=1");
	log_info("Ready, templates %s, staging %s, unpacking as %s", d->templates_dir,
		 d->staging_dir, d->import_user);
	daemon_run(&d->dc);
	if (d->job_pid > 0)
		kill(d->job_pid, SIGKILL);
	ipc_server_free(d->server);
	return 0;
}
