/* Seccomp allow-list compiler shared by every daemon. Groups are named for the code that needs
 * them; mmap/mprotect never get PROT_EXEC after start-up (argument rule). */
#include "seccomp-policy.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct group {
	const char *name;
	const char *const *calls;
};

/* What glibc, libevent and protobuf-c need in any daemon. */
static const char *const g_default[] = {
	"brk", "munmap", "mremap", "madvise", "exit", "exit_group", "rt_sigaction",
	"rt_sigprocmask", "rt_sigreturn", "sigaltstack", "getpid", "gettid", "getppid", "getuid",
	"geteuid", "getgid", "getegid", "getgroups", "clock_gettime", "clock_getres", "gettimeofday",
	"nanosleep", "clock_nanosleep", "futex", "getrandom", "uname", "restart_syscall",
	"set_robust_list", "rseq", "sched_yield", "prlimit64", "getrlimit", "time", "tgkill", NULL};
static const char *const g_basic_io[] = {"read", "write", "readv", "writev", "pread64",
					 "pwrite64", "close", "lseek", "fstat", "newfstatat",
					 "statx", "stat", "lstat", "fcntl", "dup", "dup2", "dup3",
					 "pipe2", "ioctl", NULL};
static const char *const g_event_loop[] = {"epoll_create1", "epoll_ctl", "epoll_wait",
					   "epoll_pwait", "poll", "ppoll", "select", "pselect6",
					   "eventfd2", "timerfd_create", "timerfd_settime", NULL};
/* Unix sockets for IPC, TCP for the gateway and probes, netlink for netnsd. */
static const char *const g_ipc[] = {"socket", "socketpair", "connect", "accept", "accept4",
				    "bind", "listen", "sendmsg", "recvmsg", "sendto", "recvfrom",
				    "getsockopt", "setsockopt", "getsockname", "getpeername",
				    "shutdown", NULL};
static const char *const g_file_read[] = {"openat", "open", "getdents64", "readlink",
					  "readlinkat", "access", "faccessat", "faccessat2",
					  "getcwd", "fadvise64", "statfs", "fstatfs", NULL};
static const char *const g_file_write[] = {"unlink", "unlinkat", "rename", "renameat",
					   "renameat2", "mkdir", "mkdirat", "rmdir", "fsync",
					   "fdatasync", "ftruncate", "fallocate", "fchmod",
					   "fchown", "chmod", "chown", "fchownat", "fchmodat",
					   "memfd_create", "sync_file_range", "symlink",
					   "symlinkat", "umask", NULL};
static const char *const g_process[] = {"kill", "wait4", "waitid", "prctl", "setsid", NULL};
static const char *const g_namespaces[] = {"setns", "unshare", NULL};
static const char *const g_swap[] = {"swapon", "swapoff", NULL};

static const struct group groups[] = {
	{"@default", g_default},       {"@basic-io", g_basic_io}, {"@event-loop", g_event_loop},
	{"@ipc", g_ipc},               {"@file-read", g_file_read}, {"@file-write", g_file_write},
	{"@process", g_process},       {"@namespaces", g_namespaces}, {"@swap", g_swap},
};

const char *const *
seccomp_group_syscalls(const char *group)
{
	for (size_t i = 0; i < ELEMENTSOF(groups); i++)
		if (!strcmp(groups[i].name, group))
			return groups[i].calls;
	return NULL;
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
add_call(scmp_filter_ctx ctx, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0; /* not on this architecture */
	return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
}

static scmp_filter_ctx
policy_build(const struct seccomp_policy *p, bool debug)
{
	scmp_filter_ctx ctx = seccomp_init(debug ? SCMP_ACT_TRAP : SCMP_ACT_KILL_PROCESS);
	if (!ctx)
		return NULL;
	int r = 0;
	for (const char *const *g = p->groups; g && *g && r == 0; g++) {
		const char *const *calls = seccomp_group_syscalls(*g);
		if (!calls) {
			log_error("seccomp policy %s: unknown group %s", p->name, *g);
			r = -EINVAL;
			break;
		}
		for (; *calls && r == 0; calls++)
			r = add_call(ctx, *calls);
	}
	for (const char *const *e = p->extra; e && *e && r == 0; e++)
		r = add_call(ctx, *e);
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
