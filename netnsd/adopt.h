/* Restart without loss: what a restarted netnsd takes over from the one before it. The spawner
 * keeps one record per live runtime in <runtime-dir>/sandboxes/<id> (root's, 0600, in a
 * directory only root can write), and netnsd keeps one byte per slot in <runtime-dir>/slots
 * (claimed or not). A new netnsd reads them as root, before it forks its spawner, and trusts
 * none of it: every record is checked against the kernel (pidfd, /proc identity, cgroup, the
 * runsc state, the veth pair of the slot) and what fails is not adopted (its runtime is then
 * removed by the spawner's clean-up). Runs in netnsd (root, before lock-down) and the spawner. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "names.h"

#define ADOPT_MAX_SLOTS 4000 /* netnsd's --pool-size bound */

struct adopted {
	char id[SANDBOX_ID_LEN + 1];
	unsigned slot;
	pid_t pid;
	unsigned long long start; /* field 22 of /proc/<pid>/stat: the process's identity */
	bool vm;
	unsigned long long memory; /* the sandbox's memory limit (a microVM snapshot needs it) */
	int pidfd;		   /* pins the process; readable when it exits */
	int nsfd;		   /* its network namespace: the slot's */
	ino_t ns_ino;
};

/* A record as written (adopt_record_parse checks only its form; adopt_scan checks it against
 * the kernel). */
struct adopt_record {
	char id[SANDBOX_ID_LEN + 1];
	long slot;
	long pid;
	unsigned long long start;
	int backend; /* enum backend, -1 unknown */
	unsigned long long memory;
};
/* key=value lines, each of id slot pid start backend memory exactly once, bounded numbers, a
 * valid id, no NUL, at most 512 bytes, ending in a newline: 0 or -EBADMSG. */
int adopt_record_parse(const char *text, size_t len, struct adopt_record *out);

struct adoption {
	struct adopted *items;
	size_t n;
	unsigned char *claimed; /* claimed[i]: slot i was claimed by the supervisor */
	unsigned n_claimed;
};

struct adopt_config {
	const char *runtime_dir;
	const char *cgroup_parent;
	const char *ifname_prefix;
	bool have_runsc_state; /* gVisor records must match a runsc state file */
};

/* Open (creating it 0700 if missing) a directory that must be root's and writable by root only,
 * with no symlink on the way; -EPERM when it is someone else's or group/other may write. */
int adopt_open_root_dir(int at, const char *path, int *out);
/* Read and check every record; what does not hold is removed (logged). */
int adopt_scan(const struct adopt_config *c, struct adoption *a);
void adopt_free(struct adoption *a);
const struct adopted *adopt_find(const struct adoption *a, const char *id);
/* The spawner's side: write (atomically) or remove the record of a live runtime. */
int adopt_record_write(const char *runtime_dir, const char *id, unsigned slot, pid_t pid, bool vm,
		       unsigned long long memory);
/* Wait (up to timeout_ms) for the lock on <runtime-dir>/lock, held by a spawner until its last
 * command is done; the fd holds it. */
int adopt_lock(const char *runtime_dir, unsigned timeout_ms);
void adopt_record_remove(const char *runtime_dir, const char *id);
/* The claimed-slot bytes: open (root, before lock-down) sized for n slots, keeping what the
 * file said (for slots < n) in a->claimed; then netnsd writes one byte per claim or release. */
int adopt_slots_open(const char *runtime_dir, unsigned n, struct adoption *a);
void adopt_slots_set(int fd, unsigned slot, bool claimed);
/* Starttime of a process (field 22 of /proc/<pid>/stat); 0 when it cannot be read. */
unsigned long long adopt_proc_start(pid_t pid);
