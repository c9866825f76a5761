/* Seccomp allow-list compiler shared by every daemon. Groups are named for what they allow and
 * mean it: argument rules keep @file-read to read-only opens, and unshare(), ioctl() and
 * socket() to the flags, requests and families a policy lists; mmap/mprotect never get
 * PROT_EXEC after start-up. An unknown name fails the build of the filter. */
#include "seccomp-policy.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <unistd.h>

struct group {
	const char *name;
	const char *const *calls;
	/* open()/openat() are allowed by the group only when these flag bits are all clear;
	 * OPEN_NONE: the group does not open files. */
	unsigned long open_forbidden;
};
#define OPEN_NONE (~0ul)
/* O_TMPFILE creates a file too; its own bit is O_TMPFILE without O_DIRECTORY. */
#define O_CREATING ((unsigned long)(O_CREAT | O_TRUNC | (O_TMPFILE & ~O_DIRECTORY)))

/* What glibc, libevent and protobuf-c need in any daemon. */
static const char *const g_default[] = {"brk",
					"munmap",
					"mremap",
					"madvise",
					"exit",
					"exit_group",
					"rt_sigaction",
					"rt_sigprocmask",
					"rt_sigreturn",
					"sigaltstack",
					"getpid",
					"gettid",
					"getppid",
					"getuid",
					"geteuid",
					"getgid",
					"getegid",
					"getgroups",
					"clock_gettime",
					"clock_getres",
					"gettimeofday",
					"nanosleep",
					"clock_nanosleep",
					"futex",
					"getrandom",
					"uname",
					"restart_syscall",
					"set_robust_list",
					"rseq",
					"sched_yield",
					"prlimit64",
					"getrlimit",
					"time",
					"tgkill",
					NULL};
/* I/O on fds already open. ioctl() is not here: each policy lists the requests it uses. */
static const char *const g_basic_io[] = {"read",     "write", "readv", "writev", "pread64",
					 "pwrite64", "close", "lseek", "fstat",	 "newfstatat",
					 "statx",    "stat",  "lstat", "fcntl",	 "dup",
					 "dup2",     "dup3",  "pipe2", NULL};
static const char *const g_event_loop[] = {
	"epoll_create1", "epoll_ctl",	   "epoll_wait",      "epoll_pwait",
	"poll",		 "ppoll",	   "select",	      "pselect6",
	"eventfd2",	 "timerfd_create", "timerfd_settime", NULL};
/* Calls on sockets. socket() and socketpair() are not here: each policy lists its families. */
static const char *const g_ipc[] = {"connect",	   "accept",	 "accept4",    "bind",
				    "listen",	   "sendmsg",	 "recvmsg",    "sendto",
				    "recvfrom",	   "getsockopt", "setsockopt", "getsockname",
				    "getpeername", "shutdown",	 NULL};
/* Reading files and directories; open()/openat() read-only (argument rule below). */
static const char *const g_file_read[] = {"getdents64", "readlink",   "readlinkat", "access",
					  "faccessat",	"faccessat2", "getcwd",	    "fadvise64",
					  "statfs",	"fstatfs",    NULL};
/* Writing to files that exist (cgroup and /proc/sys knobs): open()/openat() for writing but
 * never creating or truncating. */
static const char *const g_file_update[] = {NULL};
/* Creating, changing and removing files: open()/openat() with any flags. */
static const char *const g_file_write[] = {
	"creat",	   "unlink",	"unlinkat",  "rename",	 "renameat",
	"renameat2",	   "mkdir",	"mkdirat",   "rmdir",	 "fsync",
	"fdatasync",	   "ftruncate", "fallocate", "fchmod",	 "fchown",
	"chmod",	   "chown",	"fchownat",  "fchmodat", "memfd_create",
	"sync_file_range", "symlink",	"symlinkat", "umask",	 NULL};
static const char *const g_process[] = {"kill", "wait4", "waitid", "prctl", "setsid", NULL};
/* setns() only; unshare() is allowed per policy with the CLONE_NEW* flags it needs. */
static const char *const g_namespaces[] = {"setns", NULL};
static const char *const g_swap[] = {"swapon", "swapoff", NULL};

static const struct group groups[] = {
	{"@default", g_default, OPEN_NONE},
	{"@basic-io", g_basic_io, OPEN_NONE},
	{"@event-loop", g_event_loop, OPEN_NONE},
	{"@ipc", g_ipc, OPEN_NONE},
	{"@file-read", g_file_read, O_WRONLY | O_RDWR | O_CREATING},
	{"@file-update", g_file_update, O_CREATING},
	{"@file-write", g_file_write, 0},
	{"@process", g_process, OPEN_NONE},
	{"@namespaces", g_namespaces, OPEN_NONE},
	{"@swap", g_swap, OPEN_NONE},
};

const char *const seccomp_group_names[] = {"@default",	  "@basic-io",	  "@event-loop", "@ipc",
					   "@file-read",  "@file-update", "@file-write", "@process",
					   "@namespaces", "@swap",	  NULL};

static const struct group *
group_find(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(groups); i++)
		if (!strcmp(groups[i].name, name))
			return &groups[i];
	return NULL;
}

const char *const *
seccomp_group_syscalls(const char *group)
{
	const struct group *g = group_find(group);
	return g ? g->calls : NULL;
}

static void
sigsys_report(int sig, siginfo_t *si, void *ctx)
{
	/* async-signal-safe: only write() */
	char buf[128];
	char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, si->si_syscall);
	int n = snprintf(buf, sizeof buf, "<2>seccomp: forbidden syscall %s (%d)\n",
			 name ? name : "?", si->si_syscall);
	if (write(STDERR_FILENO, buf, (size_t)n) < 0) {
	}
	_exit(159);
}

static int
add_call(scmp_filter_ctx ctx, const char *policy, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	/* A name libseccomp does not know is a typo in a policy, not a missing syscall (a call
	 * of another architecture resolves to a pseudo number that rule_add accepts). */
	if (nr == __NR_SCMP_ERROR) {
		log_error("seccomp policy %s: unknown syscall %s", policy, name);
		return -EINVAL;
	}
	return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
}

/* open(path, flags) has its flags in argument 1, openat(dirfd, path, flags) in argument 2. */
static int
add_open(scmp_filter_ctx ctx, unsigned long forbidden)
{
	if (forbidden == 0) {
		int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(open), 0);
		return r < 0 ? r : seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 0);
	}
	int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(open), 1,
				 SCMP_A1(SCMP_CMP_MASKED_EQ, forbidden, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, forbidden, 0));
	return r;
}

/* unshare(), ioctl(), socket(): only what the policy lists. Int arguments are compared in
 * their low 32 bits, which is all the kernel reads of them. */
static int
add_argument_rules(scmp_filter_ctx ctx, const struct seccomp_policy *p)
{
	int r = 0;
	if (p->unshare_flags)
		r = seccomp_rule_add(
			ctx, SCMP_ACT_ALLOW, SCMP_SYS(unshare), 1,
			SCMP_A0(SCMP_CMP_MASKED_EQ, ~p->unshare_flags & 0xffffffffu, 0));
	for (const unsigned long *io = p->ioctls; io && *io && r == 0; io++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_EQ, *io));
	for (const int *f = p->socket_families; f && *f && r == 0; f++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, (unsigned)*f));
		if (r == 0 && *f == AF_UNIX)
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 1,
					     SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, AF_UNIX));
	}
	return r;
}

static scmp_filter_ctx
policy_build(const struct seccomp_policy *p, bool debug)
{
	scmp_filter_ctx ctx = seccomp_init(debug ? SCMP_ACT_TRAP : SCMP_ACT_KILL_PROCESS);
	if (!ctx)
		return NULL;
	int r = 0;
	/* The least restrictive open rule of the policy's groups: one rule per syscall, as
	 * libseccomp refuses a conditional rule next to an unconditional one. */
	unsigned long open_forbidden = OPEN_NONE;
	for (const char *const *gn = p->groups; gn && *gn && r == 0; gn++) {
		const struct group *g = group_find(*gn);
		if (!g) {
			log_error("seccomp policy %s: unknown group %s", p->name, *gn);
			r = -EINVAL;
			break;
		}
		for (const char *const *calls = g->calls; *calls && r == 0; calls++)
			r = add_call(ctx, p->name, *calls);
		if (g->open_forbidden != OPEN_NONE &&
		    (open_forbidden == OPEN_NONE || (g->open_forbidden & ~open_forbidden) == 0))
			open_forbidden = g->open_forbidden;
	}
	for (const char *const *e = p->extra; e && *e && r == 0; e++)
		r = add_call(ctx, p->name, *e);
	if (r == 0 && open_forbidden != OPEN_NONE)
		r = add_open(ctx, open_forbidden);
	if (r == 0)
		r = add_argument_rules(ctx, p);
	/* Memory maps, but never executable ones once initialised. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r < 0) {
		log_error_errno(r, "seccomp policy %s: %m", p->name);
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

int
seccomp_policy_check(const struct seccomp_policy *p)
{
	scmp_filter_ctx ctx = policy_build(p, false);
	if (!ctx)
		return -EINVAL;
	seccomp_release(ctx);
	return 0;
}

int
seccomp_policy_load(const struct seccomp_policy *p, bool debug)
{
	if (debug) {
		struct sigaction sa = {.sa_sigaction = sigsys_report, .sa_flags = SA_SIGINFO};
		sigaction(SIGSYS, &sa, NULL);
	}
	scmp_filter_ctx ctx = policy_build(p, debug);
	if (!ctx)
		return -EINVAL;
	int r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r < 0)
		return log_error_errno(r, "Failed to load seccomp policy %s: %m", p->name);
	return 0;
}

int
seccomp_policy_dump(const struct seccomp_policy *p, FILE *f)
{
	scmp_filter_ctx ctx = policy_build(p, false);
	if (!ctx)
		return -EINVAL;
	fflush(f);
	int r = seccomp_export_pfc(ctx, fileno(f));
	seccomp_release(ctx);
	return r;
}
