/* Restart without loss (see adopt.h): the records a netnsd and its spawner leave behind, and
 * the checks a new netnsd makes before it takes any of them over. Runs as root in netnsd before
 * it forks its spawner (adopt_scan, adopt_slots_open) and in the spawner (record writes). A
 * record is hostile input: a compromised or buggy writer, or a user who found a way into the
 * directory, must not make root signal, enter or hand out a process or namespace that is not
 * the sandbox the record names. So nothing in it is used as is: the id must be the file's name
 * and a valid id, the pid is pinned with a pidfd and must have the recorded start time, sit in
 * the sandbox's own cgroup and (gVisor) have a runsc state; the namespace is the process's
 * own, and the slot's host veth must be the other end of that namespace's eth0. */
#include "backend.h"
#include "adopt.h"
#include "cgroup.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "netlink.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RECORD_MAX 512

int
adopt_open_root_dir(int at, const char *path, int *out)
{
	struct open_how how = {.flags = O_DIRECTORY | O_RDONLY | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	if (at != AT_FDCWD)
		how.resolve |= RESOLVE_BENEATH;
	int fd = (int)syscall(SYS_openat2, at, path, &how, sizeof how);
	if (fd < 0 && errno == ENOENT) {
		if (mkdirat(at, path, 0700) < 0 && errno != EEXIST)
			return -errno;
		fd = (int)syscall(SYS_openat2, at, path, &how, sizeof how);
	}
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	*out = fd;
	return 0;
}

unsigned long long
adopt_proc_start(pid_t pid)
{
	char path[64], *buf = NULL;
	size_t len;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (file_read_all(path, &buf, &len) < 0)
		return 0;
	/* after the last ')': the command name may hold spaces and parentheses */
	char *p = strrchr(buf, ')');
	unsigned long long start = 0;
	if (p && p[1] == ' ') {
		p += 2; /* field 3, the state */
		for (int field = 3; field < 22 && p; field++) {
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		if (p)
			start = strtoull(p, NULL, 10);
	}
	free(buf);
	return start;
}

/* The process sits in <cgroup_parent>/<id> (v2: the one hierarchy; v1: any controller line). */
static bool
proc_in_cgroup(pid_t pid, const char *cgroup_parent, const char *id)
{
	char path[64], rel[CGROUP_PATH_MAX], *buf = NULL;
	size_t len;
	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	if (cgroup_sandbox_path(cgroup_parent, id, rel, sizeof rel) < 0)
		return false;
	if (file_read_all(path, &buf, &len) < 0)
		return false;
	/* each line is "hierarchy:controllers:path"; the path is compared whole (a cgroup name
	 * may hold ':', so "/user.slice/x:<rel>" must not match) */
	bool ok = false;
	for (char *line = buf, *next; line && *line && !ok; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		ok = c2 && !strcmp(c2 + 1, rel);
	}
	free(buf);
	return ok;
}

#define record adopt_record

static int
parse_ulong(const char *v, unsigned long long max, unsigned long long *out)
{
	if (!*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 20)
		return -EBADMSG;
	errno = 0;
	unsigned long long x = strtoull(v, NULL, 10);
	if (errno || x > max)
		return -EBADMSG;
	*out = x;
	return 0;
}

/* Parse the record from its fd: key=value lines, every key known and given once. */
static int
record_parse(int fd, struct record *r)
{
	char buf[RECORD_MAX + 1];
	ssize_t k = read(fd, buf, RECORD_MAX + 1);
	if (k <= 0 || k > RECORD_MAX)
		return -EBADMSG;
	return adopt_record_parse(buf, (size_t)k, r);
}

int
adopt_record_parse(const char *text, size_t len, struct adopt_record *r)
{
	char buf[RECORD_MAX + 1];
	if (len == 0 || len > RECORD_MAX)
		return -EBADMSG;
	memcpy(buf, text, len);
	ssize_t k = (ssize_t)len;
	buf[k] = 0;
	if (memchr(buf, 0, (size_t)k) || buf[k - 1] != '\n')
		return -EBADMSG;
	*r = (struct record){.slot = -1, .pid = -1, .backend = -1};
	unsigned seen = 0;
	for (char *line = buf, *next; *line; line = next) {
		next = strchr(line, '\n');
		*next++ = 0;
		char *eq = strchr(line, '=');
		if (!eq)
			return -EBADMSG;
		*eq = 0;
		const char *key = line, *v = eq + 1;
		unsigned long long x;
		unsigned bit;
		if (!strcmp(key, "id")) {
			bit = 1;
			if (!sandbox_id_valid(v))
				return -EBADMSG;
			snprintf(r->id, sizeof r->id, "%s", v);
		} else if (!strcmp(key, "slot")) {
			bit = 2;
			if (parse_ulong(v, ADOPT_MAX_SLOTS - 1, &x) < 0)
				return -EBADMSG;
			r->slot = (long)x;
		} else if (!strcmp(key, "pid")) {
			bit = 4;
			if (parse_ulong(v, 4194304, &x) < 0 || x < 2)
				return -EBADMSG;
			r->pid = (long)x;
		} else if (!strcmp(key, "start")) {
			bit = 8;
			if (parse_ulong(v, ~0ULL, &x) < 0 || x == 0)
				return -EBADMSG;
			r->start = x;
		} else if (!strcmp(key, "backend")) {
			bit = 16;
			r->backend = backend_from_string(v);
			if (r->backend < 0)
				return -EBADMSG;
		} else if (!strcmp(key, "memory")) {
			bit = 32;
			if (parse_ulong(v, 1ULL << 40, &x) < 0)
				return -EBADMSG;
			r->memory = x;
		} else
			return -EBADMSG;
		if (seen & bit)
			return -EBADMSG;
		seen |= bit;
	}
	return seen == 63 ? 0 : -EBADMSG;
}

static int
pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int
pidfd_alive(int pidfd)
{
	return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
}

/* Inside the namespace: eth0's other end must be the slot's host veth. Run as root before
 * lock-down; comes back to the host namespace. */
static int
veth_pair_check(int nsfd, int host_ns, int host_ifindex)
{
	int nl = nl_open(NETLINK_ROUTE);
	if (nl < 0)
		return nl;
	int host_peer = nl_link_peer(nl, host_ifindex);
	close(nl);
	if (setns(nsfd, CLONE_NEWNET) < 0)
		return -errno;
	int eth0 = (int)if_nametoindex("eth0"), peer = -ENOENT;
	nl = nl_open(NETLINK_ROUTE);
	if (nl >= 0 && eth0 > 0)
		peer = nl_link_peer(nl, eth0);
	safe_close(nl);
	if (setns(host_ns, CLONE_NEWNET) < 0) {
		log_error_errno(-errno, "Cannot return to the host namespace: %m");
		abort();
	}
	if (peer < 0 || host_peer < 0)
		return -ENOENT;
	/* each side names the other: the pair is this slot's, not another's */
	return peer == host_ifindex && host_peer == eth0 ? 0 : -EXDEV;
}

/* Check one record against the kernel; on success *out holds the pinned process and its
 * namespace. why says what failed. */
static int
record_check(const struct adopt_config *c, int runsc_dir, int host_ns, ino_t host_ino,
	     const struct record *rec, struct adopted *out, char *why, size_t whysize)
{
	*out = (struct adopted){.slot = (unsigned)rec->slot,
				.pid = (pid_t)rec->pid,
				.start = rec->start,
				.vm = rec->backend == BACKEND_MICROVM,
				.memory = rec->memory,
				.pidfd = -1,
				.nsfd = -1};
	snprintf(out->id, sizeof out->id, "%s", rec->id);
	out->pidfd = pidfd_open_(out->pid);
	if (out->pidfd < 0)
		return snprintf(why, whysize, "process %d is gone", out->pid), -ESRCH;
	if (adopt_proc_start(out->pid) != rec->start)
		return snprintf(why, whysize, "pid %d is another process now", out->pid), -ESRCH;
	if (!proc_in_cgroup(out->pid, c->cgroup_parent, rec->id))
		return snprintf(why, whysize, "pid %d is not in cgroup %s/%s", out->pid,
				c->cgroup_parent, rec->id),
		       -EPERM;
	if (!out->vm) {
		if (!c->have_runsc_state)
			return snprintf(why, whysize, "no runsc state directory"), -ENOENT;
		char name[80];
		snprintf(name, sizeof name, "%s_sandbox:%s.state", rec->id, rec->id);
		struct stat st;
		if (fstatat(runsc_dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != 0)
			return snprintf(why, whysize, "runsc has no state for it"), -ENOENT;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/ns/net", out->pid);
	out->nsfd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (out->nsfd < 0 || fstat(out->nsfd, &st) < 0)
		return snprintf(why, whysize, "cannot open its network namespace"), -EIO;
	out->ns_ino = st.st_ino;
	if (st.st_ino == host_ino)
		return snprintf(why, whysize, "it runs in the host's network namespace"), -EPERM;
	/* everything read from /proc belonged to the pinned process if it still lives: a pid is
	 * not reused while the process (or its zombie) exists */
	if (!pidfd_alive(out->pidfd) || adopt_proc_start(out->pid) != rec->start)
		return snprintf(why, whysize, "process %d went away while checked", out->pid),
		       -ESRCH;
	char ifname[IFNAMSIZ + 8];
	snprintf(ifname, sizeof ifname, "%s%u", c->ifname_prefix, out->slot);
	int host_ifindex = strlen(ifname) < IFNAMSIZ ? (int)if_nametoindex(ifname) : 0;
	if (!host_ifindex)
		return snprintf(why, whysize, "slot %u has no host veth %s", out->slot, ifname),
		       -ENOENT;
	int r = veth_pair_check(out->nsfd, host_ns, host_ifindex);
	if (r < 0)
		return snprintf(why, whysize, "veth %s is not the pair of its namespace's eth0",
				ifname),
		       r;
	return 0;
}

static void
adopted_close(struct adopted *a)
{
	a->pidfd = safe_close(a->pidfd);
	a->nsfd = safe_close(a->nsfd);
}

int
adopt_scan(const struct adopt_config *c, struct adoption *a)
{
	*a = (struct adoption){0};
	_cleanup_close_ int rundir = -1, recdir = -1, runsc_dir = -1, host_ns = -1;
	int r = adopt_open_root_dir(AT_FDCWD, c->runtime_dir, &rundir);
	if (r < 0)
		return log_error_errno(r,
				       "Runtime directory %s must be root's and writable by "
				       "root only, reached without symlinks: %m",
				       c->runtime_dir);
	r = adopt_open_root_dir(rundir, "sandboxes", &recdir);
	if (r < 0)
		return log_error_errno(r,
				       "%s/sandboxes must be root's and writable by root only: %m",
				       c->runtime_dir);
	struct open_how how = {.flags = O_DIRECTORY | O_RDONLY | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS};
	runsc_dir = (int)syscall(SYS_openat2, rundir, "runsc", &how, sizeof how);
	struct stat st;
	struct adopt_config cc = *c;
	cc.have_runsc_state = runsc_dir >= 0 && fstat(runsc_dir, &st) == 0 && st.st_uid == 0 &&
			      !(st.st_mode & 022);
	host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (host_ns < 0 || fstat(host_ns, &st) < 0)
		return -errno;
	ino_t host_ino = st.st_ino;
	DIR *d = fdopendir(dup(recdir));
	if (!d)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char why[200] = "";
		struct record rec;
		struct adopted item = {.pidfd = -1, .nsfd = -1};
		_cleanup_close_ int fd =
			openat(recdir, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		r = 0;
		if (!sandbox_id_valid(de->d_name))
			r = -EBADMSG, snprintf(why, sizeof why, "not a sandbox id");
		else if (fd < 0 || fstat(fd, &st) < 0)
			r = -errno, snprintf(why, sizeof why, "cannot open it");
		else if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077) ||
			 st.st_nlink != 1)
			r = -EPERM, snprintf(why, sizeof why, "not a root-only regular file");
		else if (record_parse(fd, &rec) < 0 || strcmp(rec.id, de->d_name))
			r = -EBADMSG, snprintf(why, sizeof why, "malformed");
		for (size_t i = 0; r == 0 && i < a->n; i++)
			if (a->items[i].slot == (unsigned)rec.slot)
				r = -EEXIST,
				snprintf(why, sizeof why, "slot %ld is taken twice", rec.slot);
		if (r == 0)
			r = record_check(&cc, runsc_dir, host_ns, host_ino, &rec, &item, why,
					 sizeof why);
		for (size_t i = 0; r == 0 && i < a->n; i++)
			if (a->items[i].ns_ino == item.ns_ino)
				r = -EEXIST,
				snprintf(why, sizeof why, "its namespace is taken twice");
		if (r < 0) {
			log_warning("Not adopting sandbox record %s/sandboxes/%s: %s",
				    c->runtime_dir, de->d_name, why);
			adopted_close(&item);
			if (unlinkat(recdir, de->d_name, 0) < 0 && errno == EISDIR)
				unlinkat(recdir, de->d_name, AT_REMOVEDIR);
			continue;
		}
		struct adopted *n = realloc(a->items, (a->n + 1) * sizeof *n);
		if (!n) {
			adopted_close(&item);
			continue;
		}
		a->items = n;
		a->items[a->n++] = item;
		log_info("Adopting sandbox %s (%s, slot %u, pid %d)", item.id,
			 backend_to_string(item.vm ? BACKEND_MICROVM : BACKEND_GVISOR), item.slot,
			 item.pid);
	}
	closedir(d);
	return (int)a->n;
}

void
adopt_free(struct adoption *a)
{
	for (size_t i = 0; i < a->n; i++)
		adopted_close(&a->items[i]);
	free(a->items);
	free(a->claimed);
	*a = (struct adoption){0};
}

const struct adopted *
adopt_find(const struct adoption *a, const char *id)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->items[i].id, id))
			return &a->items[i];
	return NULL;
}

int
adopt_record_write(const char *runtime_dir, const char *id, unsigned slot, pid_t pid, bool vm,
		   unsigned long long memory)
{
	unsigned long long start = adopt_proc_start(pid);
	if (!sandbox_id_valid(id) || !start)
		return -EINVAL;
	char path[512], buf[RECORD_MAX];
	snprintf(path, sizeof path, "%s/sandboxes/%s", runtime_dir, id);
	int n = snprintf(buf, sizeof buf,
			 "id=%s\nslot=%u\npid=%d\nstart=%llu\nbackend=%s\nmemory=%llu\n", id, slot,
			 (int)pid, start, backend_to_string(vm ? BACKEND_MICROVM : BACKEND_GVISOR),
			 memory);
	/* not durable: the runtimes it names do not survive a reboot either */
	int r = file_write_atomic(path, buf, (size_t)n, 0600, false);
	if (r < 0)
		log_error_errno(r,
				"Sandbox %s: cannot write its record %s: %m; a restarted netnsd "
				"would not adopt it",
				id, path);
	return r;
}

void
adopt_record_remove(const char *runtime_dir, const char *id)
{
	char path[512];
	snprintf(path, sizeof path, "%s/sandboxes/%s", runtime_dir, id);
	unlink(path);
}

int
adopt_slots_open(const char *runtime_dir, unsigned n, struct adoption *a)
{
	_cleanup_close_ int rundir = -1;
	int r = adopt_open_root_dir(AT_FDCWD, runtime_dir, &rundir);
	if (r < 0)
		return r;
	int fd = openat(rundir, "slots", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct stat st;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || st.st_nlink != 1 ||
	    (st.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	a->claimed = calloc(n ? n : 1, 1);
	a->n_claimed = n;
	if (!a->claimed) {
		close(fd);
		return -ENOMEM;
	}
	/* only '1' means claimed; anything else in the file is ignored */
	unsigned char *old = calloc(n ? n : 1, 1);
	ssize_t k = old ? pread(fd, old, n, 0) : -1;
	for (ssize_t i = 0; i < k; i++)
		a->claimed[i] = old[i] == '1';
	free(old);
	/* the file is rewritten from what holds now: a claimed slot stays claimed (the supervisor
	 * holds it and will release it), every other one is free */
	char *now = malloc(n ? n : 1);
	for (unsigned i = 0; now && i < n; i++)
		now[i] = a->claimed[i] ? '1' : '0';
	for (size_t i = 0; now && i < a->n; i++)
		if (a->items[i].slot < n)
			now[a->items[i].slot] = '1';
	if (!now || ftruncate(fd, 0) < 0 || pwrite(fd, now, n, 0) != (ssize_t)n) {
		free(now);
		close(fd);
		return -EIO;
	}
	free(now);
	return fd;
}

void
adopt_slots_set(int fd, unsigned slot, bool claimed)
{
	if (fd < 0)
		return;
	char b = claimed ? '1' : '0';
	if (pwrite(fd, &b, 1, slot) != 1)
		log_warning_errno(-errno, "Slot %u: cannot note it %s in the slot file: %m", slot,
				  claimed ? "claimed" : "free");
}

int
adopt_lock(const char *runtime_dir, unsigned timeout_ms)
{
	_cleanup_close_ int rundir = -1;
	int r = adopt_open_root_dir(AT_FDCWD, runtime_dir, &rundir);
	if (r < 0)
		return r;
	int fd = openat(rundir, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	bool said = false;
	for (unsigned waited = 0;; waited += 100) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		if (errno != EWOULDBLOCK || waited >= timeout_ms) {
			r = errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
			close(fd);
			return r;
		}
		if (!said)
			log_info("Waiting for the previous spawner to finish its commands");
		said = true;
		usleep(100000);
	}
}
