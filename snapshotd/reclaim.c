/* Memory reclaim of frozen sandboxes (snapshotd). gVisor keeps a sandbox's memory in a memfd
 * (shmem), so reclaiming it needs swap: SetupReclaim writes a swap file and turns zswap on
 * (recording the host's own zswap settings so UndoReclaim puts them back), and Reclaim pushes a
 * frozen sandbox's pages out: cgroup v2 memory.reclaim, or on v1 repeated memory.force_empty
 * passes (a lowered limit returns EBUSY long before the cgroup is empty on this kernel). A
 * cgroup the kernel does not report frozen is refused, before every pass. */
#include "fault.h"
#include "cgroup.h"
#include "clock.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "names.h"
#include "snapshotd.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/swap.h>

#define PASS_INTERVAL_US 100000
#define RECLAIM_BUDGET_US 3000000
#define ZSWAP "/sys/module/zswap/parameters/"

static const char *const zswap_params[] = {"enabled", "compressor", "max_pool_percent"};

static void
paths(struct snapshotd *s, char *swap, char *saved, size_t size)
{
	snprintf(swap, size, "%s/swapfile", s->reclaim_dir);
	snprintf(saved, size, "%s/zswap.saved", s->reclaim_dir);
}

/* Whether the file is an active swap area. Not by its name in /proc/swaps: that name is the path
 * in the mount namespace of whoever called swapon, and snapshotd runs in a private one (its
 * unit's ReadWritePaths bind mount), so after a restart the list names the file "/swapfile"
 * and a lookup by path misses it (the next set-up then failed with ETXTBSY rewriting it). The
 * kernel refuses fallocate() on an active swap file with ETXTBSY; on any other file of ours
 * (written in full, no holes) one byte at offset 0 is already allocated and nothing changes. */
static bool
swap_active(const char *path)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	return fallocate(fd, 0, 0, 1) < 0 && errno == ETXTBSY;
}

/* A swap file is a header page (the format mkswap writes) and no holes. */
static int
swap_file_write(const char *path, uint64_t bytes)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t pages = bytes / (uint64_t)page;
	if (pages < 10)
		return -EINVAL;
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	_cleanup_free_ char *buf = calloc(1, 1 << 20);
	if (!buf)
		return -ENOMEM;
	for (uint64_t left = pages * (uint64_t)page; left;) {
		size_t n = left < (1 << 20) ? (size_t)left : (1 << 20);
		ssize_t k = write(fd, buf, n);
		if (k < 0)
			return -errno;
		left -= (uint64_t)k;
	}
	memset(buf, 0, (size_t)page);
	uint32_t *hdr = (uint32_t *)(buf + 1024);
	hdr[0] = 1;			/* version */
	hdr[1] = (uint32_t)(pages - 1); /* last_page */
	hdr[2] = 0;			/* nr_badpages */
	memcpy(buf + page - 10, "SWAPSPACE2", 10);
	if (pwrite(fd, buf, (size_t)page, 0) != page || fsync(fd) < 0)
		return -errno;
	return 0;
}

static int
zswap_save(const char *saved)
{
	if (access(saved, F_OK) == 0)
		return 0; /* keep the host's settings from the first setup */
	char buf[512] = "", val[128];
	for (size_t i = 0; i < ELEMENTSOF(zswap_params); i++) {
		char path[256];
		snprintf(path, sizeof path, ZSWAP "%s", zswap_params[i]);
		if (file_read_line(path, val, sizeof val) < 0)
			return -ENOENT;
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s=%s\n", zswap_params[i],
			 val);
	}
	return file_write_atomic(saved, buf, strlen(buf), 0600, true);
}

void
reclaim_open_zswap(struct snapshotd *s)
{
	for (size_t i = 0; i < ELEMENTSOF(zswap_params); i++) {
		char path[256];
		snprintf(path, sizeof path, ZSWAP "%s", zswap_params[i]);
		s->zswap_fd[i] = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (s->zswap_fd[i] < 0)
			log_info("zswap's %s cannot be set (%m): reclaim without zswap", path);
	}
}

/* Set a zswap parameter through the fd opened at start (a sysfs attribute takes the whole value
 * in one write at offset 0). */
static int
zswap_set(struct snapshotd *s, const char *name, const char *val)
{
	for (size_t i = 0; i < ELEMENTSOF(zswap_params); i++)
		if (!strcmp(name, zswap_params[i])) {
			if (s->zswap_fd[i] < 0)
				return -EACCES;
			ssize_t n = pwrite(s->zswap_fd[i], val, strlen(val), 0);
			return n == (ssize_t)strlen(val) ? 0 : n < 0 ? -errno : -EIO;
		}
	return -EINVAL;
}

static int
zswap_restore_kv(const char *k, const char *v, void *ud)
{
	zswap_set(ud, k, v);
	return 0;
}

static void
report(Warren__V1__SetupReclaimResponse *out, const char *swap)
{
	static char compressor[64];
	warren__v1__setup_reclaim_response__init(out);
	struct stat st;
	if (swap_active(swap) && stat(swap, &st) == 0)
		out->swap_bytes = (uint64_t)st.st_size;
	char val[16];
	out->zswap_enabled = file_read_line(ZSWAP "enabled", val, sizeof val) == 0 && val[0] == 'Y';
	meminfo_bytes("Zswap", &out->zswap_pool_bytes);
	meminfo_bytes("Zswapped", &out->zswapped_bytes);
	if (file_read_line(ZSWAP "compressor", compressor, sizeof compressor) < 0)
		compressor[0] = 0;
	out->compressor = compressor;
}

int
reclaim_setup(struct snapshotd *s, const Warren__V1__SetupReclaimRequest *q,
	      Warren__V1__SetupReclaimResponse *out, char *err, size_t errlen)
{
	char swap[512], saved[512];
	paths(s, swap, saved, sizeof swap);
	int r = 0;
	if (q->query) {
	} else if (q->undo) {
		if (swap_active(swap) && swapoff(swap) < 0) {
			r = -errno;
			snprintf(err, errlen, "swapoff %s: %s", swap, strerror(errno));
			return r;
		}
		unlink(swap);
		if (access(saved, F_OK) == 0) {
			file_read_kv(saved, zswap_restore_kv, s);
			unlink(saved);
		}
		log_info("Reclaim set-up undone: swap file removed, zswap settings restored");
	} else {
		uint64_t mem = 0;
		meminfo_bytes("MemTotal", &mem);
		if (q->swap_bytes < (16ull << 20) || q->swap_bytes > mem * 4 ||
		    (q->compressor[0] &&
		     strspn(q->compressor, "abcdefghijklmnopqrstuvwxyz0123456789-") !=
			     strlen(q->compressor)) ||
		    q->max_pool_percent > 90) {
			snprintf(err, errlen,
				 "swap size must be 16 MiB..4x RAM, pool percent <= 90");
			return -EINVAL;
		}
		mkdir_p(s->reclaim_dir, 0700);
		struct stat st;
		if (!swap_active(swap) || stat(swap, &st) < 0 ||
		    (uint64_t)st.st_size != q->swap_bytes) {
			if (swap_active(swap))
				swapoff(swap);
			/* the size is the supervisor's word, up to 4x RAM: a swap file may take at
			 * most half of the free space (the old file's counted free), never the
			 * whole disk */
			struct statvfs vfs;
			uint64_t old = stat(swap, &st) == 0 ? (uint64_t)st.st_size : 0;
			if (statvfs(s->reclaim_dir, &vfs) < 0 ||
			    q->swap_bytes > ((uint64_t)vfs.f_bavail * vfs.f_frsize + old) / 2) {
				snprintf(err, errlen,
					 "a swap file of %llu MiB would take more than half "
					 "the free space of %s",
					 (unsigned long long)(q->swap_bytes >> 20), s->reclaim_dir);
				return -ENOSPC;
			}
			r = swap_file_write(swap, q->swap_bytes);
			if (r == 0 && swapon(swap, 0) < 0)
				r = -errno;
			if (r < 0) {
				snprintf(err, errlen, "swap file %s: %s", swap, strerror(-r));
				unlink(swap);
				return r;
			}
		}
		if (zswap_save(saved) < 0) {
			snprintf(err, errlen, "this kernel has no zswap");
			return -ENOENT;
		}
		if (zswap_set(s, "enabled", q->zswap ? "Y" : "N") < 0 && q->zswap) {
			snprintf(err, errlen, "zswap's parameters were not opened at start");
			return -EACCES;
		}
		if (q->zswap && q->compressor[0] && zswap_set(s, "compressor", q->compressor) < 0) {
			snprintf(err, errlen, "zswap compressor %s is not available",
				 q->compressor);
			return -EINVAL;
		}
		if (q->zswap && q->max_pool_percent) {
			char v[16];
			snprintf(v, sizeof v, "%u", q->max_pool_percent);
			zswap_set(s, "max_pool_percent", v);
		}
		log_info("Reclaim set up: %llu MiB swap at %s, zswap %s",
			 (unsigned long long)(q->swap_bytes >> 20), swap, q->zswap ? "on" : "off");
	}
	report(out, swap);
	return 0;
}

/* ---- reclaiming one frozen sandbox, a pass every 100 ms, without blocking the loop ---- */

struct reclaim_job {
	struct snapshotd *s;
	struct ipc_call *call;
	char rel[256], dir[512];
	int v2;
	uint64_t before, t0;
	struct event *timer;
};

static void
job_finish(struct reclaim_job *j, int r, const char *why)
{
	if (r < 0)
		ipc_call_error(j->call, r, "%s", why);
	else {
		uint64_t after = 0;
		cgroup_memory_usage(j->rel, &after);
		Warren__V1__ReclaimResponse rr = WARREN__V1__RECLAIM_RESPONSE__INIT;
		rr.before = j->before;
		rr.after = after;
		rr.elapsed_us = now_usec() - j->t0;
		IpcResponse resp = WARREN__V1__RESPONSE__INIT;
		resp.body_case = WARREN__V1__RESPONSE__BODY_RECLAIM;
		resp.reclaim = &rr;
		ipc_call_reply(j->call, &resp, NULL, 0);
		log_info("Reclaimed %s: %llu -> %llu MiB in %llu ms", j->rel,
			 (unsigned long long)(j->before >> 20), (unsigned long long)(after >> 20),
			 (unsigned long long)(rr.elapsed_us / 1000));
	}
	ipc_call_free(j->call);
	event_free(j->timer);
	free(j);
}

static void
job_pass(evutil_socket_t fd, short what, void *arg)
{
	struct reclaim_job *j = arg;
	/* Never touch a running sandbox's memory: check before every pass. */
	if (cgroup_frozen(j->rel) != 1) {
		job_finish(j, -EBUSY, "the sandbox is not frozen; reclaim refused");
		return;
	}
	char path[600], amount[32];
	uint64_t usage = 0;
	fault_point("reclaim");
	cgroup_memory_usage(j->rel, &usage);
	if (j->v2) {
		snprintf(path, sizeof path, "%s/memory.reclaim", j->dir);
		snprintf(amount, sizeof amount, "%llu", (unsigned long long)usage);
		file_write_string(path, amount); /* -EAGAIN when it could not take all: next pass */
	} else {
		snprintf(path, sizeof path, "%s/memory.force_empty", j->dir);
		file_write_string(path, "0");
	}
	cgroup_memory_usage(j->rel, &usage);
	/* force_empty often frees nothing for several passes and then much at once (1-7 passes
	 * 100 ms apart were seen), so there is no "no progress" stop, only the budget. */
	if (usage * 20 < j->before || now_usec() - j->t0 > RECLAIM_BUDGET_US) {
		job_finish(j, 0, NULL);
		return;
	}
	struct timeval tv = {0, PASS_INTERVAL_US};
	evtimer_add(j->timer, &tv);
}

int
reclaim_start(struct snapshotd *s, struct ipc_call *call)
{
	const char *id = call->req->reclaim->id;
	if (!sandbox_id_valid(id))
		return ipc_call_error(call, -EINVAL, "bad sandbox id");
	struct reclaim_job *j = calloc(1, sizeof *j);
	if (!j)
		return -ENOMEM;
	if (cgroup_sandbox_path(s->cgroup_parent, id, j->rel, sizeof j->rel) < 0 ||
	    cgroup_memory_dir(j->rel, j->dir, sizeof j->dir, &j->v2) < 0) {
		free(j);
		return ipc_call_error(call, -ENOENT, "sandbox %s has no memory cgroup", id);
	}
	if (cgroup_frozen(j->rel) != 1) {
		free(j);
		return ipc_call_error(call, -EBUSY, "sandbox %s is not frozen; reclaim refused",
				      id);
	}
	j->s = s;
	cgroup_memory_usage(j->rel, &j->before);
	j->t0 = now_usec();
	if (j->before < s->reclaim_min) {
		j->call = ipc_call_defer(call);
		j->timer = evtimer_new(s->dc.base, job_pass, j);
		job_finish(j, 0, NULL);
		return IPC_DEFER;
	}
	j->call = ipc_call_defer(call);
	j->timer = evtimer_new(s->dc.base, job_pass, j);
	job_pass(-1, 0, j);
	return IPC_DEFER;
}
