/* The microVM core (see microvm.h): guest command line, launch into the slot namespace and the
 * cgroup, snapshot = pause + device state + RAM file + resume in place, restore = the RAM file
 * mapped private + device state + the agent told the time and the new identity. */
#include "microvm.h"
#include "agent-protocol.h"
#include "microvm-net.h"
#include "fileio.h"
#include "image-layout.h"
#include "ipc.h"
#include "log.h"
#include "macro.h"
#include "vmm.h"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <cap-ng.h>
#include <linux/capability.h>
#include <time.h>

#define AGENT_TIMEOUT_MS 10000

static const struct vmm_driver *driver = &vmm_qemu;

int
microvm_configure(const struct microvm_config *c)
{
	if (!c->vmm || !strcmp(c->vmm, "qemu"))
		driver = &vmm_qemu;
	else if (!strcmp(c->vmm, "firecracker"))
		driver = &vmm_firecracker;
	else
		return -EINVAL;
	return 0;
}

static const char *
vmm_binary(const struct microvm_config *c)
{
	return driver == &vmm_firecracker ? c->firecracker : c->qemu;
}

bool
microvm_available(const struct microvm_config *c, char *why, size_t size)
{
	const char *bin = vmm_binary(c);
	if (!bin || access(bin, X_OK) < 0)
		snprintf(why, size, "no %s VMM at %s", driver->name, bin ? bin : "(none)");
	else if (!c->kernel || access(c->kernel, R_OK) < 0)
		snprintf(why, size, "no guest kernel at %s", c->kernel ? c->kernel : "(none)");
	else if (driver == &vmm_firecracker && access("/dev/kvm", R_OK | W_OK) < 0)
		snprintf(why, size, "firecracker needs /dev/kvm");
	else
		return true;
	return false;
}

/* The VMM's own directory in the bundle: its sockets and the files it writes. */
static void
vmm_dir(const char *bundle, char *buf, size_t size)
{
	snprintf(buf, size, "%s/vmm", bundle);
}

/* Guest RAM: the template's memory limit, at least what the kernel and an initramfs need. */
static uint64_t
guest_ram(uint64_t limit)
{
	uint64_t ram = limit < (128ull << 20) ? (128ull << 20) : limit;
	return (ram + (1 << 20) - 1) & ~((1ull << 20) - 1);
}

/* The host's TSC rate in kHz for tsc_early_khz=: without it TCG guests hang in ~1 boot of 8. */
static unsigned long
tsc_khz(void)
{
	static unsigned long khz;
	if (khz)
		return khz;
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[256];
	double mhz = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "cpu MHz : %lf", &mhz) == 1)
			break;
	if (f)
		fclose(f);
	khz = mhz > 0 ? (unsigned long)(mhz * 1000) : 2000000;
	return khz;
}

static void
hex_append(char **p, char *end, char *const *v, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++)
		for (const unsigned char *c = (const unsigned char *)v[i];; c++) {
			if (*p + 2 >= end)
				return;
			*(*p)++ = digits[*c >> 4];
			*(*p)++ = digits[*c & 15];
			if (!*c)
				break;
		}
}

/* The default boot options, each of which the benchmark can switch (WARREN_VM_BOOT_OPTS
 * replaces them): no PS/2 probing, a quiet console; always the TSC rate so TCG boots reliably
 * and init_on_free, so freed guest pages are zero and stay holes in snapshot images. The
 * program's argv and env follow, hex-encoded, for the agent. */
static int
guest_cmdline(const struct microvm_config *c, const struct microvm_start *s, char *buf, size_t size)
{
	const char *opts = getenv("WARREN_VM_BOOT_OPTS");
	char base[512];
	snprintf(base, sizeof base, "%stsc_early_khz=%lu panic=-1 init_on_free=1 %s",
		 c->console ? "console=ttyS0 " : "", tsc_khz(),
		 opts ? opts : "quiet i8042.noaux i8042.nomux i8042.nopnp i8042.dumbkbd");
	char *p = buf, *end = buf + size;
	p += snprintf(p, (size_t)(end - p), "%s %s%s%s warren.argv=", base, driver->boot_args,
		      s->root_disk ? " warren.root=disk" : "",
		      driver->agent_vsock ? " warren.agent=vsock" : "");
	hex_append(&p, end, s->argv, s->argc);
	if (p + 16 >= end)
		return -E2BIG;
	p += snprintf(p, (size_t)(end - p), " warren.env=");
	hex_append(&p, end, s->env, s->envc);
	if (p + 2 >= end)
		return -E2BIG;
	/* the template's working directory and ids, for the agent to apply before the exec */
	if (s->cwd && s->cwd[0]) {
		char *const cwd[] = {(char *)s->cwd};
		p += snprintf(p, (size_t)(end - p), " warren.cwd=");
		hex_append(&p, end, cwd, 1);
	}
	if ((s->uid || s->gid) && p + 32 < end)
		p += snprintf(p, (size_t)(end - p), " warren.user=%u:%u", s->uid, s->gid);
	if (p + 2 >= end)
		return -E2BIG;
	*p = 0;
	/* x86 Linux keeps 2048 bytes of command line */
	return strlen(buf) < 2048 ? 0 : -E2BIG;
}

/* v1 controllers a VMM's cgroup is made in ("cpu,cpuacct" where the two are co-mounted, "cpu"
 * where they are not, as here; a symlinked "cpu" is the same directory twice, harmless) */
static const char *const vm_ctrls[] = {"memory", "freezer", "pids", "cpu,cpuacct", "cpu"};

static int
limit_write(const char *dir, const char *knob, const char *val)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", dir, knob);
	int r = file_write_string(path, val);
	if (r < 0)
		log_error_errno(r, "Cannot set %s to %s: %m", path, val);
	return r;
}

/* Make the sandbox's cgroup and set its limits, in the spawner before the VMM is forked (v2
 * first; v1: every controller above): memory, pids and CPU as a gVisor sandbox gets them, so a
 * VMM (and a guest that breaks out into it) forks and spins no further than runsc would. */
static int
cgroup_prepare(const char *rel, uint64_t limit, uint32_t pids_max, uint32_t cpu_millis)
{
	char dir[512], num[32], pids[16], quota[16], cpu2[48];
	snprintf(num, sizeof num, "%llu", (unsigned long long)limit);
	snprintf(pids, sizeof pids, "%u", pids_max);
	snprintf(quota, sizeof quota, "%u", cpu_millis * 100);
	snprintf(cpu2, sizeof cpu2, "%u 100000", cpu_millis * 100);
	struct stat st;
	int r = 0, made = 0;
	if (stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0) {
		snprintf(dir, sizeof dir, "/sys/fs/cgroup%s", rel);
		if (mkdir_p(dir, 0755) < 0)
			return -errno;
		if ((r = limit_write(dir, "memory.max", num)) < 0)
			return r;
		if (pids_max && (r = limit_write(dir, "pids.max", pids)) < 0)
			return r;
		if (cpu_millis && (r = limit_write(dir, "cpu.max", cpu2)) < 0)
			return r;
		return 0;
	}
	for (size_t i = 0; i < ELEMENTSOF(vm_ctrls); i++) {
		snprintf(dir, sizeof dir, "/sys/fs/cgroup/%s", vm_ctrls[i]);
		if (stat(dir, &st) < 0)
			continue;
		snprintf(dir, sizeof dir, "/sys/fs/cgroup/%s%s", vm_ctrls[i], rel);
		if (mkdir_p(dir, 0755) < 0)
			return -errno;
		made++;
		if (!strcmp(vm_ctrls[i], "memory"))
			r = limit_write(dir, "memory.limit_in_bytes", num);
		else if (!strcmp(vm_ctrls[i], "pids") && pids_max)
			r = limit_write(dir, "pids.max", pids);
		else if (!strncmp(vm_ctrls[i], "cpu", 3) && cpu_millis)
			r = limit_write(dir, "cpu.cfs_period_us", "100000") < 0
				    ? -EIO
				    : limit_write(dir, "cpu.cfs_quota_us", quota);
		if (r < 0)
			return r;
	}
	return made ? 0 : -ENOENT;
}

/* The VMM's child joins the cgroup made above, before exec. */
static int
cgroup_join(const char *rel)
{
	char path[600];
	struct stat st;
	if (stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0) {
		snprintf(path, sizeof path, "/sys/fs/cgroup%s/cgroup.procs", rel);
		return file_write_string(path, "0");
	}
	int joined = 0;
	for (size_t i = 0; i < ELEMENTSOF(vm_ctrls); i++) {
		snprintf(path, sizeof path, "/sys/fs/cgroup/%s%s/cgroup.procs", vm_ctrls[i], rel);
		if (access(path, W_OK) == 0 && file_write_string(path, "0") == 0)
			joined++;
	}
	return joined ? 0 : -ENOENT;
}

/* A restore's image files for a VMM that opens them as the VM user (firecracker): readable by
 * that user's group. Once per file (snapshotd re-hashes a file whose ctime changed, once). */
static int
share_with_vm_user(int fd, gid_t gid)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_gid == gid && (st.st_mode & 0040))
		return 0;
	if (fchown(fd, (uid_t)-1, gid) < 0 || fchmod(fd, (st.st_mode & 07777) | 0040) < 0)
		return -errno;
	return 0;
}

/* A member of a restore's image: netnsd proved the directory is snapshotd's; the file itself is
 * opened without following a symlink and must be a plain file with one link. */
static int
image_member_open(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
		close(fd);
		return -EACCES;
	}
	return fd;
}

pid_t
microvm_launch(const struct microvm_config *c, const struct microvm_start *s, int incoming[2])
{
	char cmdline[2200], ram[400], console[400], dir[400];
	int r = guest_cmdline(c, s, cmdline, sizeof cmdline);
	if (r < 0)
		return r;
	struct passwd *pw = c->vm_user ? getpwnam(c->vm_user) : NULL;
	if (c->vm_user && !pw)
		return -ESRCH;
	/* the VMM's directory: its sockets, and for a VMM running as its user the files it
	 * writes (Firecracker's snapshots) */
	vmm_dir(s->bundle, dir, sizeof dir);
	if (mkdir_p(dir, 0700) < 0)
		return -errno;
	if (!driver->drops_itself && pw) {
		/* it binds its sockets by path as that user: its directory is its own and the
		 * three above (bundle, bundles, runtime dir) traversable, not listable */
		char up[400];
		snprintf(up, sizeof up, "%s", s->bundle);
		for (int i = 0; i < 3; i++) {
			if (chmod(up, 0711) < 0)
				return -errno;
			char *slash = strrchr(up, '/');
			if (!slash || slash == up)
				break;
			*slash = 0;
		}
		if (chown(dir, pw->pw_uid, pw->pw_gid) < 0)
			return -errno;
	}
	uint64_t ram_bytes = guest_ram(s->memory_limit);
	int state_fd = -1, ram_fd = -1;
	const char *ram_path = ram;
	if (s->image_fd >= 0) {
		/* restore: the image's RAM file mapped private; the device state read from an fd
		 * the VMM inherits at the same number. Both are opened here, without following
		 * symlinks, and the VMM gets the fds (/proc/self/fd/N names its own inherited fd:
		 * QEMU opens it before it drops to its user, Firecracker as the VM user). */
		state_fd = image_member_open(s->image_fd, IMAGE_LAYOUT_VM_STATE);
		ram_fd = state_fd < 0 ? -1 : image_member_open(s->image_fd, IMAGE_LAYOUT_VM_RAM);
		struct stat st;
		if (state_fd < 0 || ram_fd < 0)
			r = state_fd < 0 ? state_fd : ram_fd;
		else if (fstat(ram_fd, &st) < 0 || (uint64_t)st.st_size != ram_bytes)
			r = -EINVAL; /* an image of another memory size */
		else if (!driver->drops_itself && pw)
			if ((r = share_with_vm_user(state_fd, pw->pw_gid)) == 0)
				r = share_with_vm_user(ram_fd, pw->pw_gid);
		if (r < 0) {
			safe_close(state_fd);
			safe_close(ram_fd);
			return r;
		}
		snprintf(ram, sizeof ram, "/proc/self/fd/%d", ram_fd);
	} else if (driver->own_ram) {
		ram_path = NULL; /* the VMM's own memory */
	} else {
		/* cold boot: the guest's RAM is anonymous shared memory the VMM inherits (0.2.0
		 * kept it in a file under a predictable name in /dev/shm, which another user could
		 * make first and read live). A snapshot finds it through the VMM's mappings. */
		ram_fd = memfd_create(MICROVM_RAM_NAME, MFD_CLOEXEC);
		if (ram_fd < 0 || ftruncate(ram_fd, (off_t)ram_bytes) < 0) {
			r = -errno;
			safe_close(ram_fd);
			return r;
		}
		snprintf(ram, sizeof ram, "/proc/self/fd/%d", ram_fd);
	}
	incoming[0] = state_fd;
	incoming[1] = s->image_fd >= 0 ? ram_fd : -1;
	/* The guest's serial port goes into the sandbox's console FIFO, which the VMM inherits
	 * read-write: it then holds a reader itself, so its writes never meet EPIPE while no
	 * spawner drains the FIFO (a restart), they wait for the next one. QEMU opens it again
	 * by its /proc name as root, before -runas; Firecracker writes the port to stdout. */
	bool console_named = s->console_fd >= 0 && !driver->serial_stdout;
	snprintf(console, sizeof console, "/proc/self/fd/%d", s->console_fd);
	/* a VMM whose stdout is the serial port logs into its own file: made here, new (the
	 * directory is the VM user's: never a name it placed), the VM user's to write */
	char own_log[440];
	snprintf(own_log, sizeof own_log, "%s/vmm-own.log", dir);
	bool has_own_log = false;
	if (s->console_fd >= 0 && driver->serial_stdout) {
		int fd = open(own_log, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		has_own_log = fd >= 0 && (!pw || fchown(fd, pw->pw_uid, pw->pw_gid) == 0);
		if (fd >= 0)
			close(fd);
		if (!has_own_log)
			log_warning_errno(-errno,
					  "%s: %m (the VMM's own messages join the console)",
					  own_log);
	}
	char **argv = NULL;
	bool tap = driver->needs_tap || c->tap;
	struct vmm_launch l = {.binary = vmm_binary(c),
			       .kernel = c->kernel,
			       .initrd = s->initrd,
			       .root_disk = s->root_disk,
			       .cmdline = cmdline,
			       .ram_path = ram_path,
			       .ram_private = s->image_fd >= 0,
			       .ram_bytes = ram_bytes,
			       .port = s->port,
			       .bundle = s->bundle,
			       .vmm_dir = dir,
			       .console = console_named ? console : NULL,
			       .own_log = has_own_log ? own_log : NULL,
			       .user = c->vm_user,
			       .tap = tap,
			       .incoming_fd = state_fd};
	r = driver->argv(&l, &argv);
	if (r < 0) {
		safe_close(state_fd);
		safe_close(ram_fd);
		return r;
	}
	/* The limit is the guest's RAM (a shmem file charged here) plus QEMU's own memory: ~80-100
	 * MiB when idle (TCG's code buffer included), 161 MiB seen while a 100 MiB upload went
	 * through slirp into a guest whose RAM was all in use, which a 160 MiB margin OOM-killed
	 * (CI, test-e2b-microvm). The margin bounds the VMM, not the guest. */
	r = cgroup_prepare(s->cgroup, ram_bytes + (256ull << 20), s->pids_max, s->cpu_millis);
	if (r < 0) {
		for (char **a = argv; *a; a++)
			free(*a);
		free(argv);
		safe_close(state_fd);
		safe_close(ram_fd);
		return r;
	}
	char log[400];
	snprintf(log, sizeof log, "%s/vmm.log", s->bundle);
	int logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (logfd >= 0 && pw && !driver->drops_itself && fchown(logfd, pw->pw_uid, pw->pw_gid) < 0)
		log_warning_errno(-errno, "chown %s: %m", log);
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		/* the VMM itself joins the namespace and the cgroup: no wrapper stays around */
		if (setns(s->nsfd, CLONE_NEWNET) < 0 || cgroup_join(s->cgroup) < 0)
			_exit(121);
		if (tap && microvm_net_setup(pw ? pw->pw_uid : 0, s->port) < 0)
			_exit(122);
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		int out = logfd >= 0 ? logfd : null;
		if (s->console_fd >= 0 && driver->serial_stdout)
			out = s->console_fd; /* Firecracker's serial port */
		dup2(out, 1);
		dup2(logfd >= 0 ? logfd : null, 2);
		/* the VMM inherits stdio and the fds it is told about, nothing else */
		close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
		if (console_named)
			fcntl(s->console_fd, F_SETFD, 0); /* "file:/proc/self/fd/<n>" */
		if (state_fd >= 0)
			fcntl(state_fd, F_SETFD, 0); /* inherited at its number: "fd:<n>" */
		if (ram_fd >= 0)
			fcntl(ram_fd, F_SETFD, 0); /* its RAM: /proc/self/fd/<n> */
		/* a VMM that does not drop privileges itself starts as the VM user (its group,
		 * and supplementary groups such as kvm for /dev/kvm), with nothing to regain */
		if (!driver->drops_itself && pw &&
		    (initgroups(pw->pw_name, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
		     setuid(pw->pw_uid) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0))
			_exit(123);
		execv(argv[0], argv);
		_exit(127);
	}
	for (char **a = argv; *a; a++)
		free(*a);
	free(argv);
	safe_close(logfd);
	safe_close(state_fd);
	safe_close(ram_fd);
	return pid < 0 ? -errno : pid;
}

/* ---- blocking steps (forked children) ---- */

static void
vmm_log(const char *bundle, const char *fmt, ...)
{
	char path[400], msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(path, sizeof path, "%s/vmm.log", bundle);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dprintf(fd, "warren: %s\n", msg);
		close(fd);
	}
}

static int
read_full(int fd, void *buf, size_t n, int timeout_ms)
{
	char *p = buf;
	while (n > 0) {
		struct pollfd pfd = {fd, POLLIN, 0};
		if (poll(&pfd, 1, timeout_ms) <= 0)
			return -ETIMEDOUT;
		ssize_t k = read(fd, p, n);
		if (k <= 0)
			return k < 0 ? -errno : -ECONNRESET;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int
read_line(int fd, char *buf, size_t size, int timeout_ms)
{
	size_t n = 0;
	while (n + 1 < size) {
		int r = read_full(fd, buf + n, 1, timeout_ms);
		if (r < 0)
			return r;
		if (buf[n] == '\n') {
			buf[n] = 0;
			return 0;
		}
		n++;
	}
	return -EMSGSIZE;
}

static int
write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -errno;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The agent's channel: QEMU's virtio-serial socket, or Firecracker's vsock socket, which
 * forwards to a guest port after "CONNECT <port>\n" is answered with "OK <host port>\n". */
static int
agent_open(const char *bundle)
{
	char dir[400], path[420];
	vmm_dir(bundle, dir, sizeof dir);
	snprintf(path, sizeof path, "%s/agent.sock", dir);
	int fd = unix_connect(path, SOCK_STREAM, 0);
	if (fd < 0)
		return fd;
	if (driver->agent_vsock) {
		char line[64];
		snprintf(line, sizeof line, "CONNECT %u\n", AGENT_PROTO_VSOCK_PORT);
		int r = write_full(fd, line, strlen(line));
		if (r == 0)
			r = read_line(fd, line, sizeof line, AGENT_TIMEOUT_MS);
		if (r == 0 && strncmp(line, "OK ", 3))
			r = -ECONNREFUSED;
		if (r < 0) {
			close(fd);
			return r;
		}
	}
	return fd;
}

int
microvm_finish_restore(const char *bundle, const char *id, const int incoming[2])
{
	struct timespec t0, t1, t2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char dir[400];
	vmm_dir(bundle, dir, sizeof dir);
	struct vmm_restore rs = {.vmm_dir = dir, .state_fd = incoming[0], .ram_fd = incoming[1]};
	int r = rs.state_fd >= 0 ? driver->restore(&rs) : -EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (r < 0) {
		vmm_log(bundle, "restore: %s", strerror(-r));
		return r;
	}
	/* The guest's clock stood still since the snapshot, and a clone must not keep its
	 * parent's identity. */
	int fd = agent_open(bundle);
	if (fd < 0) {
		vmm_log(bundle, "agent: %s", strerror(-fd));
		return fd;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	/* both requests in one write: one round trip through the emulated guest */
	char lines[192], reply[128];
	snprintf(lines, sizeof lines, "clock %lld %ld\nid %s\n", (long long)now.tv_sec, now.tv_nsec,
		 id);
	r = write_full(fd, lines, strlen(lines));
	for (int i = 0; i < 2 && r == 0; i++) {
		r = read_line(fd, reply, sizeof reply, AGENT_TIMEOUT_MS);
		if (r == 0 && strcmp(reply, "ok"))
			r = -EIO;
	}
	close(fd);
	clock_gettime(CLOCK_MONOTONIC, &t2);
	if (r < 0)
		vmm_log(bundle, "agent after restore: %s", strerror(-r));
	else
		vmm_log(bundle,
			"restored: device state loaded and running in %ld ms, agent told "
			"the time and id in %ld ms",
			(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000,
			(t2.tv_sec - t1.tv_sec) * 1000 + (t2.tv_nsec - t1.tv_nsec) / 1000000);
	return r;
}

/* Copy the non-zero pages of from's data (not its holes) into to at the same offsets,
 * except those marked in skip (NULL: none). to is a fresh file of the right size: pages the
 * guest touched but left zero, like holes, stay holes in the image. With mark, every page of
 * from's data is marked there and counted in *marked (a VMM's diff file: its data are the pages
 * the guest wrote). */
static int
copy_nonzero_pages(int from, int to, const uint8_t *skip, uint8_t *mark, uint64_t *marked)
{
	static char buf[1 << 20];
	off_t off = 0;
	for (;;) {
		off_t data = lseek(from, off, SEEK_DATA);
		if (data < 0)
			return errno == ENXIO ? 0 : -errno;
		off_t hole = lseek(from, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		for (off_t p = data & ~4095; p < hole;) {
			size_t want =
				(size_t)(hole - p) < sizeof buf ? (size_t)(hole - p) : sizeof buf;
			ssize_t k = pread(from, buf, want, p);
			if (k <= 0)
				return k < 0 ? -errno : -EIO;
			for (ssize_t pg = 0; pg < k; pg += 4096) {
				uint64_t n = (uint64_t)(p + pg) / 4096;
				if (mark) {
					mark[n / 8] |= (uint8_t)(1 << (n % 8));
					(*marked)++;
				}
				if (skip && (skip[n / 8] >> (n % 8) & 1))
					continue;
				size_t len = (size_t)(k - pg) < 4096 ? (size_t)(k - pg) : 4096;
				int r = pwrite_nonzero_pages(to, buf + pg, len, p + pg);
				if (r < 0)
					return r;
			}
			p += k;
		}
		off = hole;
	}
}

/* The guest RAM mapping of a VM: a restored VM's image RAM file mapped private, or a cold VM's
 * shared memfd (MICROVM_RAM_NAME). Returns its start address, whether it is the restored kind,
 * and opens what it maps (through map_files, whatever its name now). */
static int
vm_ram(pid_t pid, uint64_t ram_bytes, uint64_t *start, int *fd, bool *restored)
{
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	int r = -ENOENT;
	while (fgets(line, sizeof line, f)) {
		unsigned long long a, b;
		char perms[8], file[400] = "";
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %399s", &a, &b, perms, file) < 3)
			continue;
		size_t n = strlen(file);
		bool image = perms[3] == 'p' && n >= 4 && !strcmp(file + n - 4, "/ram");
		bool memfd = perms[3] == 's' && !strcmp(file, "/memfd:" MICROVM_RAM_NAME);
		if (b - a != ram_bytes || (!image && !memfd))
			continue;
		snprintf(path, sizeof path, "/proc/%d/map_files/%llx-%llx", (int)pid, a, b);
		*fd = open(path, O_RDONLY | O_CLOEXEC);
		*start = a;
		*restored = image;
		r = *fd < 0 ? -errno : 0;
		break;
	}
	fclose(f);
	return r;
}

/* A file the VMM (as its user) wrote into its own directory: opened without following a
 * symlink, and only if it is a plain file with one link owned by the directory's owner, so a
 * VMM cannot make the spawner read another file for it. */
static int
vmm_file_open(const char *dir, const char *path)
{
	struct stat dst, st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (stat(dir, &dst) < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    st.st_uid != dst.st_uid) {
		close(fd);
		return -EACCES;
	}
	return fd;
}

/* Write tracking without soft-dirty bits: a restored VM's RAM is a private file mapping, so
 * the pages it wrote since are exactly those no longer backed by the file (pagemap: present and
 * not a file page, or swapped). Copy them into out (marking them in dirty) while it is paused.
 * pm and mem are the VMM's /proc pagemap and mem, opened as root before the copier dropped it:
 * the kernel checked access at open, and reads through them need no privilege. */
static int
copy_written_pages(int pm, int mem, uint64_t start, uint64_t ram_bytes, int out, uint8_t *dirty,
		   uint64_t *count)
{
	uint64_t pages = ram_bytes / 4096, entries[512];
	static char page[4096];
	*count = 0;
	for (uint64_t i = 0; i < pages; i += 512) {
		uint64_t n = pages - i < 512 ? pages - i : 512;
		if (pread(pm, entries, n * 8, (off_t)((start / 4096 + i) * 8)) != (ssize_t)(n * 8))
			return -EIO;
		for (uint64_t j = 0; j < n; j++) {
			bool present = entries[j] >> 63 & 1, swapped = entries[j] >> 62 & 1,
			     file = entries[j] >> 61 & 1;
			if (!((present && !file) || swapped))
				continue;
			uint64_t off = (i + j) * 4096;
			if (pread(mem, page, 4096, (off_t)(start + off)) != 4096 ||
			    pwrite(out, page, 4096, (off_t)off) != 4096)
				return -EIO;
			dirty[(i + j) / 8] |= (uint8_t)(1 << ((i + j) % 8));
			(*count)++;
		}
	}
	return 0;
}

/* What a copy step reads and writes: fds the root child opened, and the write-tracking state
 * in a shared mapping, so the steps (separate unprivileged children) and the parent see it. */
struct copy_job {
	int in, out, pm, mem, m;
	uint64_t start, ram_bytes;
	bool cold;
	uint8_t *dirty;	   /* shared: pages written since restore */
	uint64_t *written; /* shared */
};

static int
copy_while_paused(const struct copy_job *j)
{
	return j->cold ? copy_nonzero_pages(j->in, j->out, NULL, NULL, NULL)
		       : copy_written_pages(j->pm, j->mem, j->start, j->ram_bytes, j->out, j->dirty,
					    j->written);
}

static int
copy_after_resume(const struct copy_job *j)
{
	int r = 0;
	if (j->m >= 0)
		r = copy_nonzero_pages(j->m, j->out, NULL, j->cold ? NULL : j->dirty, j->written);
	if (r == 0 && !j->cold)
		r = copy_nonzero_pages(j->in, j->out, j->dirty, NULL,
				       NULL); /* the image's others */
	return r;
}

/* Become uid:gid with no supplementary group, no capability in any set and no_new_privs, then
 * read back /proc/self/status to say (in logfd) who the copy runs as. */
static int
copy_drop(uid_t uid, gid_t gid, int logfd, const char *id)
{
	if (uid == 0 || gid == 0)
		return -EPERM;
	/* the bounding set too, where the spawner still may (CAP_SETPCAP); with no_new_privs
	 * and no file capability gained through exec, it matters little if it may not */
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL && errno != EPERM)
			return -errno;
	/* leaving uid 0 clears the permitted and effective sets (no SECBIT_KEEP_CAPS: checked
	 * below), then every set is cleared explicitly */
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -errno;
	/* (the bounding set was dealt with above, while it still could be) */
	capng_clear(CAPNG_SELECT_CAPS);
	if (capng_apply(CAPNG_SELECT_CAPS) < 0)
		return -EPERM;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	uid_t ru, eu, su;
	if (getresuid(&ru, &eu, &su) < 0 || ru == 0 || eu == 0 || su == 0)
		return -EPERM;
	capng_get_caps_process();
	if (capng_have_capabilities(CAPNG_SELECT_CAPS) != CAPNG_NONE)
		return -EPERM;
	/* the kernel's word, not ours: what a test asserts */
	char line[256], uids[128] = "?", capeff[64] = "?", capprm[64] = "?";
	FILE *f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "Uid:", 4))
			snprintf(uids, sizeof uids, "%s", line + 4 + strspn(line + 4, " \t"));
		else if (!strncmp(line, "CapEff:", 7))
			snprintf(capeff, sizeof capeff, "%s", line + 7 + strspn(line + 7, " \t"));
		else if (!strncmp(line, "CapPrm:", 7))
			snprintf(capprm, sizeof capprm, "%s", line + 7 + strspn(line + 7, " \t"));
	}
	if (f)
		fclose(f);
	for (char *p = uids; *p; p++)
		if (*p == '\t')
			*p = ' ';
	if (logfd >= 0)
		dprintf(logfd,
			"warren: snapshot of %s: copying as pid %d uid %s CapEff %s CapPrm %s\n",
			id, (int)getpid(), uids, capeff, capprm);
	return 0;
}

/* Run a copy step in a child that drops to uid:gid first; its result, waited for. */
static int
copy_unprivileged(int (*step)(const struct copy_job *), const struct copy_job *j, uid_t uid,
		  gid_t gid, int logfd, const char *id)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int r = copy_drop(uid, gid, logfd, id);
		if (r < 0) {
			if (logfd >= 0)
				dprintf(logfd,
					"warren: snapshot of %s: cannot drop privileges: %s\n", id,
					strerror(-r));
			_exit(254);
		}
		r = step(j);
		_exit(r < 0 ? (-r > 253 ? EIO : -r) : 0);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status))
		return -EIO;
	if (WEXITSTATUS(status) == 254)
		return -EPERM;
	return -WEXITSTATUS(status);
}

int
microvm_snapshot(const struct microvm_config *c, const char *bundle, const char *id, pid_t pid,
		 uint64_t memory_limit, int image_dirfd, uid_t owner, gid_t group)
{
	uint64_t ram_bytes = guest_ram(memory_limit);
	char dir[400], mem[420];
	vmm_dir(bundle, dir, sizeof dir);
	snprintf(mem, sizeof mem, "%s/mem", dir);
	/* Guest memory is the guest's to write: it is read, and the image written, by children
	 * with no privilege (the store's owner, or if snapshotd runs as root the VM user), through
	 * fds opened here as root. Pausing, saving, resuming (the VMM's root-made control socket)
	 * and unlinking stay here. */
	if (owner == 0) {
		struct passwd *pw = c->vm_user ? getpwnam(c->vm_user) : NULL;
		if (!pw || pw->pw_uid == 0) {
			vmm_log(bundle, "snapshot of %s: no unprivileged user to copy as", id);
			return -EPERM;
		}
		owner = pw->pw_uid;
		group = pw->pw_gid;
	}
	char logpath[420];
	snprintf(logpath, sizeof logpath, "%s/vmm.log", bundle);
	_cleanup_close_ int logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	/* netnsd proved image_dirfd is a new, empty image directory of snapshotd's; its files
	 * are created here, never opened through a name that was there before. They stay root's
	 * until sealed (image_proof_seal proves them ours, then hands them to the store's owner);
	 * the copier writes through these fds, checked at open. */
	_cleanup_close_ int state =
		openat(image_dirfd, IMAGE_LAYOUT_VM_STATE,
		       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	_cleanup_close_ int out =
		state < 0 ? -1
			  : openat(image_dirfd, IMAGE_LAYOUT_VM_RAM,
				   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		int r = -errno;
		vmm_log(bundle, "snapshot of %s: cannot create the image's %s: %s", id,
			state < 0 ? IMAGE_LAYOUT_VM_STATE : IMAGE_LAYOUT_VM_RAM, strerror(-r));
		return r;
	}
	_cleanup_close_ int in = -1; /* a cold VM's RAM memfd, or a restored VM's image RAM */
	_cleanup_close_ int pm = -1, vmem = -1, m = -1;
	uint64_t start = 0;
	/* a restored VM maps its image's RAM file private; a cold one has its RAM in a shared
	 * memfd (QEMU) or in the VMM's own memory (Firecracker) */
	bool restored = false;
	int r = vm_ram(pid, ram_bytes, &start, &in, &restored);
	bool cold = !restored;
	if (r == -ENOENT && driver->own_ram)
		r = 0;
	if (r < 0)
		return r;
	if (!cold && !driver->own_ram) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/pagemap", (int)pid);
		pm = open(path, O_RDONLY | O_CLOEXEC);
		snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
		vmem = pm < 0 ? -1 : open(path, O_RDONLY | O_CLOEXEC);
		if (vmem < 0)
			return -errno;
	}
	if (ftruncate(out, (off_t)ram_bytes) < 0)
		return -errno;
	size_t shared = ram_bytes / 4096 / 8 + 1 + sizeof(uint64_t);
	uint8_t *sh = mmap(NULL, shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return -errno;
	struct copy_job j = {.in = in,
			     .out = out,
			     .pm = pm,
			     .mem = vmem,
			     .m = -1,
			     .start = start,
			     .ram_bytes = ram_bytes,
			     .cold = cold,
			     .written = (uint64_t *)(void *)sh,
			     .dirty = sh + sizeof(uint64_t)};
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = driver->pause(dir);
	if (r == 0)
		r = driver->save(dir, state, driver->own_ram ? mem : NULL, !cold);
	/* QEMU: a cold VM's RAM is a shared memfd, all of it copied while paused; a restored VM
	 * has only the pages it wrote copied while paused, its image's others afterwards.
	 * Firecracker wrote guest memory itself (all, or for a restored VM the pages it wrote,
	 * from KVM's dirty log): that copy is private, so it is read after the VM resumes. */
	if (r == 0 && !driver->own_ram)
		r = copy_unprivileged(copy_while_paused, &j, owner, group, logfd, id);
	/* resume in place, whatever happened: the parent goes on */
	int rr = driver->resume(dir);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (r == 0)
		r = rr;
	if (r == 0 && driver->own_ram) {
		m = vmm_file_open(dir, mem);
		r = m < 0 ? m : 0;
		j.m = m;
	}
	if (r == 0 && (driver->own_ram || !cold))
		r = copy_unprivileged(copy_after_resume, &j, owner, group, logfd, id);
	if (driver->own_ram)
		unlink(mem);
	uint64_t written = *j.written;
	munmap(sh, shared);
	if (r < 0)
		vmm_log(bundle, "snapshot of %s: %s", id, strerror(-r));
	else
		vmm_log(bundle, "snapshot of %s: paused %ld ms%s, %llu pages written since restore",
			id,
			(long)((t1.tv_sec - t0.tv_sec) * 1000 +
			       (t1.tv_nsec - t0.tv_nsec) / 1000000),
			cold ? " (whole RAM copied)" : "", (unsigned long long)written);
	return r;
}

int
microvm_agent_open(const char *bundle)
{
	return agent_open(bundle);
}

int
microvm_exec(int fd, char *const *argv, size_t argc, unsigned timeout_ms, int out_fd, int err_fd)
{
	size_t len = 0;
	for (size_t i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *payload = malloc(len + 64), *p = payload;
	if (!payload)
		return -ENOMEM;
	p += sprintf(p, "exec %u %zu\n", timeout_ms, len);
	for (size_t i = 0; i < argc; i++)
		p = stpcpy(p, argv[i]) + 1;
	int r = write_full(fd, payload, (size_t)(p - payload));
	free(payload);
	char line[128];
	if (r == 0)
		r = read_line(fd, line, sizeof line, (int)timeout_ms + AGENT_TIMEOUT_MS);
	int status = -1;
	long long ol = 0, el = 0;
	if (r == 0 && !agent_proto_parse_exit(line, &status, &ol, &el))
		r = -EIO;
	/* the sizes are the guest's word: each stream is copied up to MICROVM_EXEC_OUTPUT_MAX
	 * (the memfds are the spawner's memory), then the connection is dropped */
	static char buf[65536];
	bool truncated = false;
	for (int i = 0; i < 2 && r == 0 && !truncated; i++) {
		long long left = i == 0 ? ol : el;
		if (left > (long long)MICROVM_EXEC_OUTPUT_MAX) {
			left = MICROVM_EXEC_OUTPUT_MAX;
			truncated = true;
		}
		while (left > 0 && r == 0) {
			size_t want = left < (long long)sizeof buf ? (size_t)left : sizeof buf;
			r = read_full(fd, buf, want, AGENT_TIMEOUT_MS);
			if (r == 0)
				r = write_full(i == 0 ? out_fd : err_fd, buf, want);
			left -= (long long)want;
		}
	}
	if (r == 0 && truncated)
		dprintf(err_fd, "\nwarren: exec output truncated: more than %u bytes on %s\n",
			MICROVM_EXEC_OUTPUT_MAX,
			ol > (long long)MICROVM_EXEC_OUTPUT_MAX ? "stdout" : "stderr");
	close(fd);
	return r < 0 ? r : status;
}
