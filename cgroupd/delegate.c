/* The delegated subtree's layout (cgroupd.h). Runs once, at start, as root with the unit's
 * cgroup handed over by systemd; nothing here reads what a sandbox or another daemon wrote. */
#include "cgroupd.h"
#include "cgroup-path.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

int
cgroupd_own_path(const char *proc_cgroup, char *buf, size_t size)
{
	const char *found = NULL, *systemd = NULL;
	for (const char *line = proc_cgroup; *line;) {
		const char *end = strchrnul(line, '\n');
		if (!strncmp(line, "0::", 3))
			found = line + 3;
		else if ((size_t)(end - line) > 2 && strstr(line, ":name=systemd:") &&
			 strstr(line, ":name=systemd:") < end)
			systemd = strstr(line, ":name=systemd:") + strlen(":name=systemd:");
		line = *end ? end + 1 : end;
	}
	/* a hybrid host's unified line is "0::/" for a process of the v1-only world: take the
	 * systemd hierarchy's then (systemd names the same path in both for its units) */
	if (found && !strncmp(found, "/\n", 2) && systemd)
		found = NULL;
	const char *p = found ? found : systemd;
	if (!p)
		return -ENOENT;
	size_t n = strcspn(p, "\n");
	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(buf, p, n);
	buf[n] = 0;
	return cgroup_path_valid(buf) ? 0 : -EINVAL;
}

static bool
is_cgroup2(const char *root)
{
	struct statfs fs;
	return statfs(root, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

/* "+c" for each controller in <dir>/cgroup.controllers, one at a time into
 * <dir>/cgroup.subtree_control: a controller the kernel refuses is named, the others still go */
static int
enable_controllers(const char *dir, const char *controllers, char *why, size_t why_size)
{
	char path[CGROUP_PATH_MAX + 256], word[64];
	snprintf(path, sizeof path, "%s/cgroup.subtree_control", dir);
	int first = 0;
	for (const char *c = controllers; *c;) {
		size_t n = strcspn(c, " \n");
		if (n > 0 && n < sizeof word - 1) {
			snprintf(word, sizeof word, "+%.*s", (int)n, c);
			int r = file_write_string(path, word);
			if (r < 0) {
				log_warning("Cannot enable %s in %s: %s", word + 1, dir,
					    strerror(-r));
				if (!first) {
					first = r;
					snprintf(why, why_size, "enabling %s in %s: %s", word + 1,
						 dir, strerror(-r));
				}
			}
		}
		c += n;
		c += strspn(c, " \n");
	}
	return first;
}

int
cgroupd_delegate(const char *root, const char *own, char *parent, size_t parent_size, char *why,
		 size_t why_size)
{
	char dir[CGROUP_PATH_MAX + 256], self[CGROUP_PATH_MAX + 300],
		sandboxes[CGROUP_PATH_MAX + 300];
	if (!cgroup_path_valid(own)) {
		snprintf(why, why_size, "%s is not a cgroup of its own", own);
		return -EINVAL;
	}
	int n = snprintf(parent, parent_size, "%s/%s", own, CGROUPD_SANDBOXES);
	if (n < 0 || (size_t)n >= parent_size || !cgroup_parent_valid(parent)) {
		snprintf(why, why_size, "%s/%s is too long a cgroup parent", own,
			 CGROUPD_SANDBOXES);
		return -ENAMETOOLONG;
	}
	if (!is_cgroup2(root)) {
		/* v1: no rule against processes beside child cgroups, no controller to enable;
		 * systemd made the unit's directory in each hierarchy it delegates, runsc makes
		 * the sandboxes' in every hierarchy */
		log_info("%s is not cgroup v2: sandboxes go to %s, nothing to move", root, parent);
		return 0;
	}
	snprintf(dir, sizeof dir, "%s%s", root, own);
	snprintf(self, sizeof self, "%s/%s", dir, CGROUPD_SELF);
	snprintf(sandboxes, sizeof sandboxes, "%s/%s", dir, CGROUPD_SANDBOXES);
	char pid[32];
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	char procs[sizeof self + 32];
	snprintf(procs, sizeof procs, "%s/cgroup.procs", self);
	int r = mkdir(self, 0755) < 0 && errno != EEXIST ? -errno : 0;
	if (r == 0)
		r = file_write_string(procs, pid);
	if (r < 0) {
		snprintf(why, why_size, "moving itself to %s: %s", self, strerror(-r));
		return r;
	}
	_cleanup_free_ char *controllers = NULL;
	char cpath[sizeof dir + 32];
	snprintf(cpath, sizeof cpath, "%s/cgroup.controllers", dir);
	r = file_read_all(cpath, &controllers, NULL);
	if (r < 0) {
		snprintf(why, why_size, "reading %s: %s", cpath, strerror(-r));
		return r;
	}
	r = enable_controllers(dir, controllers, why, why_size);
	if (r < 0)
		return r;
	if (mkdir(sandboxes, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(why, why_size, "making %s: %m", sandboxes);
		return r;
	}
	r = enable_controllers(sandboxes, controllers, why, why_size);
	if (r < 0)
		return r;
	log_info("Sandbox cgroups go to %s (controllers: %.*s)", parent,
		 (int)strcspn(controllers, "\n"), controllers);
	return 0;
}
