/* Sandbox cgroup operations: freezer (v2 cgroup.freeze / v1 freezer.state), kill, removal.
 * Used by netnsd (freeze), its spawner (kill, remove) and snapshotd (frozen check). */
#include "cgroup.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "names.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>

bool
cgroup_is_v2(void)
{
	struct statfs fs;
	return statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

int
cgroup_frozen(const char *rel)
{
	char path[512], buf[64];
	if (cgroup_is_v2()) {
		snprintf(path, sizeof path, "/sys/fs/cgroup%s/cgroup.events", rel);
		_cleanup_free_ char *s = NULL;
		int r = file_read_all(path, &s, NULL);
		if (r < 0)
			return r;
		return strstr(s, "frozen 1") != NULL;
	}
	snprintf(path, sizeof path, "/sys/fs/cgroup/freezer%s/freezer.state", rel);
	int r = file_read_line(path, buf, sizeof buf);
	if (r < 0)
		return r;
	return !strcmp(buf, "FROZEN");
}

int
cgroup_freeze(const char *rel, bool freeze)
{
	char path[512];
	int r;
	if (cgroup_is_v2()) {
		snprintf(path, sizeof path, "/sys/fs/cgroup%s/cgroup.freeze", rel);
		r = file_write_string(path, freeze ? "1" : "0");
	} else {
		snprintf(path, sizeof path, "/sys/fs/cgroup/freezer%s/freezer.state", rel);
		r = file_write_string(path, freeze ? "FROZEN" : "THAWED");
	}
	if (r < 0)
		return r;
	/* Freezing is asynchronous; wait (bounded) until the kernel says it is done. */
	for (int i = 0; i < 2000; i++) {
		int f = cgroup_frozen(rel);
		if (f < 0)
			return f;
		if (f == freeze)
			return 0;
		usleep(500);
	}
	return -ETIMEDOUT;
}

static int
procs_path(const char *rel, char *path, size_t size)
{
	if (cgroup_is_v2()) {
		snprintf(path, size, "/sys/fs/cgroup%s/cgroup.procs", rel);
		return access(path, R_OK) == 0 ? 0 : -ENOENT;
	}
	static const char *ctrls[] = {"pids", "memory", "freezer", "cpu,cpuacct", "cpu"};
	for (size_t i = 0; i < ELEMENTSOF(ctrls); i++) {
		snprintf(path, size, "/sys/fs/cgroup/%s%s/cgroup.procs", ctrls[i], rel);
		if (access(path, R_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

int
cgroup_kill_all(const char *rel)
{
	char path[512];
	if (procs_path(rel, path, sizeof path) < 0)
		return 0;
	cgroup_freeze(rel, false);
	for (int round = 0; round < 200; round++) {
		_cleanup_free_ char *s = NULL;
		if (file_read_all(path, &s, NULL) < 0)
			return 0;
		if (!*s)
			return 0;
		for (char *p = s; *p;) {
			pid_t pid = (pid_t)strtol(p, &p, 10);
			if (pid > 0)
				kill(pid, SIGKILL);
			while (*p == '\n')
				p++;
		}
		usleep(5000);
	}
	return -EBUSY;
}

void
cgroup_remove(const char *rel)
{
	char path[512];
	if (cgroup_is_v2()) {
		snprintf(path, sizeof path, "/sys/fs/cgroup%s", rel);
		rmdir(path);
		return;
	}
	DIR *d = opendir("/sys/fs/cgroup");
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/sys/fs/cgroup/%s%s", de->d_name, rel);
		rmdir(path);
	}
	closedir(d);
}

void
cgroup_clear_children(const char *parent)
{
	cgroup_clear_children_except(parent, NULL);
}

void
cgroup_clear_children_except(const char *parent, bool (*keep)(const char *name))
{
	char dir[512], rel[512];
	if (procs_path(parent, dir, sizeof dir) < 0)
		return;
	*strrchr(dir, '/') = 0;
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		/* only names Warren gives (sandbox ids): a parent it shares with others (an
		 * operator's --cgroup-parent /system.slice) keeps their cgroups and processes */
		if (de->d_type != DT_DIR || !sandbox_id_valid(de->d_name) ||
		    (keep && keep(de->d_name)))
			continue;
		snprintf(rel, sizeof rel, "%s/%s", parent, de->d_name);
		log_info("Removing leftover cgroup %s", rel);
		cgroup_kill_all(rel);
		cgroup_remove(rel);
	}
	closedir(d);
}

/* lchown: cgroupfs has no symlinks, but nothing here follows one anyway */
static int
knob_chown(const char *path, uid_t uid)
{
	if (uid == (uid_t)-1)
		return 0;
	if (fchownat(AT_FDCWD, path, uid, (gid_t)-1, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

int
cgroup_hand_knobs(const char *rel, uid_t freezer_uid, uid_t memory_uid)
{
	char path[512], dir[4096];
	int r, v2;
	if (cgroup_is_v2())
		snprintf(path, sizeof path, "/sys/fs/cgroup%s/cgroup.freeze", rel);
	else
		snprintf(path, sizeof path, "/sys/fs/cgroup/freezer%s/freezer.state", rel);
	r = knob_chown(path, freezer_uid);
	if (r < 0)
		return r;
	/* the memory controller's directory as snapshotd finds it (a v2 mount with memory, or v1)
	 */
	r = cgroup_memory_dir(rel, dir, sizeof dir, &v2);
	if (r < 0)
		return r;
	snprintf(path, sizeof path, "%.400s/%s", dir, v2 ? "memory.reclaim" : "memory.force_empty");
	return knob_chown(path, memory_uid);
}
