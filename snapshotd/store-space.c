/* snapshotd: is there room in the image store for a snapshot? A checkpoint that runs out of
 * space fails half-way, and in this runsc a failed checkpoint kills the container: so the room
 * is checked before the sandbox is touched. The estimate is the sandbox's memory as its cgroup
 * reports it (read here, not taken from the supervisor): a gVisor image is that memory
 * compressed, a microVM's RAM file at most its RAM. Runs in snapshotd. */
#include "cgroup.h"
#include "fileio.h"
#include "log.h"
#include "names.h"
#include "snapshotd.h"

#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

int
store_space_check(struct snapshotd *s, const char *id, char *why, size_t size)
{
	struct statvfs st;
	if (fstatvfs(s->store_fd, &st) < 0)
		return 0; /* cannot tell: the write will say */
	uint64_t avail = (uint64_t)st.f_bavail * st.f_frsize, need = s->store_reserve, mem = 0;
	if (id[0]) {
		if (!sandbox_id_valid(id)) {
			snprintf(why, size, "bad sandbox id");
			return -EINVAL;
		}
		char rel[CGROUP_PATH_MAX];
		if (cgroup_sandbox_path(s->cgroup_parent, id, rel, sizeof rel) == 0 &&
		    cgroup_memory_usage(rel, &mem) == 0)
			need += mem;
	}
	if (avail >= need)
		return 0;
	snprintf(why, size,
		 "the image store has %llu MiB free; this snapshot needs about %llu MiB (the "
		 "sandbox's memory %llu MiB + %llu MiB kept free): free space in %s and retry",
		 (unsigned long long)(avail >> 20), (unsigned long long)(need >> 20),
		 (unsigned long long)(mem >> 20), (unsigned long long)(s->store_reserve >> 20),
		 s->store_dir);
	log_warning("Snapshot of %s refused: %s", id[0] ? id : "?", why);
	return -ENOSPC;
}
