/* The microVM core (see microvm.h): guest command line, launch into the slot namespace and the
 * cgroup, snapshot = pause + device state + RAM file + resume in place, restore = the RAM file
 * mapped private + device state + the agent told the time and the new identity. */
#include "microvm.h"
#include "fileio.h"
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#define AGENT_TIMEOUT_MS 10000

static const struct vmm_driver *driver = &vmm_qemu;

bool
microvm_available(const struct microvm_config *c)
{
	return c->qemu && access(c->qemu, X_OK) == 0 && c->kernel && access(c->kernel, R_OK) == 0;
}

void
microvm_ram_path(const struct microvm_config *c, const char *id, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s.ram", c->ram_dir, id);
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

/* The seed's boot options, each of which the benchmark can switch (WARREN_VM_BOOT_OPTS
 * replaces them): no PS/2 probing, a quiet console; always the TSC rate so TCG boots reliably
 * and init_on_free, so freed guest pages are zero and stay holes in snapshot images. The
 * program's argv and env follow, hex-encoded, for the agent. */
static int
guest_cmdline(const struct microvm_config *c, const struct microvm_start *s, char *buf,
	      size_t size)
{
	const char *opts = getenv("WARREN_VM_BOOT_OPTS");
	char base[512];
	snprintf(base, sizeof base,
		 "%stsc_early_khz=%lu panic=-1 init_on_free=1 %s", c->console ? "console=ttyS0 " : "",
		 tsc_khz(),
		 opts ? opts : "quiet i8042.noaux i8042.nomux i8042.nopnp i8042.dumbkbd");
	char *p = buf, *end = buf + size;
	p += snprintf(p, (size_t)(end - p), "%s%s warren.argv=", base,
		      s->root_disk ? " warren.root=disk" : "");
	hex_append(&p, end, s->argv, s->argc);
	if (p + 16 >= end)
		return -E2BIG;
	p += snprintf(p, (size_t)(end - p), " warren.env=");
	hex_append(&p, end, s->env, s->envc);
	if (p + 2 >= end)
		return -E2BIG;
	*p = 0;
	/* x86 Linux keeps 2048 bytes of command line */
	return strlen(buf) < 2048 ? 0 : -E2BIG;
}

/* Join the sandbox's cgroup before exec (v2 first; v1: every controller we use). */
static int
cgroup_enter(const char *rel, uint64_t limit)
{
	char dir[512], path[600], num[32];
	snprintf(num, sizeof num, "%llu", (unsigned long long)limit);
	struct stat st;
	int joined = 0;
	if (stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0) {
		snprintf(dir, sizeof dir, "/sys/fs/cgroup%s", rel);
		if (mkdir_p(dir, 0755) < 0)
			return -errno;
		snprintf(path, sizeof path, "%s/memory.max", dir);
		file_write_string(path, num);
		snprintf(path, sizeof path, "%s/cgroup.procs", dir);
		return file_write_string(path, "0");
	}
	static const char *const ctrls[] = {"memory", "freezer", "pids", "cpu,cpuacct"};
	for (size_t i = 0; i < ELEMENTSOF(ctrls); i++) {
		snprintf(dir, sizeof dir, "/sys/fs/cgroup/%s", ctrls[i]);
		if (stat(dir, &st) < 0)
			continue;
		snprintf(dir, sizeof dir, "/sys/fs/cgroup/%s%s", ctrls[i], rel);
		if (mkdir_p(dir, 0755) < 0)
			continue;
		if (!strcmp(ctrls[i], "memory")) {
			snprintf(path, sizeof path, "%s/memory.limit_in_bytes", dir);
			file_write_string(path, num);
		}
		snprintf(path, sizeof path, "%s/cgroup.procs", dir);
		if (file_write_string(path, "0") == 0)
			joined++;
	}
	return joined ? 0 : -ENOENT;
}

pid_t
microvm_launch(const struct microvm_config *c, const struct microvm_start *s, int *incoming_fd)
{
	char cmdline[2200], ram[400], console[400];
	int r = guest_cmdline(c, s, cmdline, sizeof cmdline);
	if (r < 0)
		return r;
	uint64_t ram_bytes = guest_ram(s->memory_limit);
	int state_fd = -1;
	if (s->image_fd >= 0) {
		/* restore: the image's RAM file mapped private (named through the spawner's fd
		 * table, opened by QEMU before it drops to its user); the device state read from an
		 * fd QEMU inherits at the same number */
		state_fd = openat(s->image_fd, "state", O_RDONLY | O_CLOEXEC);
		if (state_fd < 0)
			return -errno;
		struct stat st;
		if (fstatat(s->image_fd, "ram", &st, 0) < 0 || (uint64_t)st.st_size != ram_bytes) {
			close(state_fd);
			return -EINVAL; /* an image of another memory size */
		}
		snprintf(ram, sizeof ram, "/proc/%d/fd/%d/ram", (int)getpid(), s->image_fd);
	} else {
		microvm_ram_path(c, s->id, ram, sizeof ram);
		mkdir_p(c->ram_dir, 0700);
		_cleanup_close_ int fd = open(ram, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)ram_bytes) < 0)
			return -errno;
	}
	*incoming_fd = state_fd;
	snprintf(console, sizeof console, "%s/console.log", s->bundle);
	char **argv = NULL;
	struct vmm_launch l = {.binary = c->qemu,
			       .kernel = c->kernel,
			       .initrd = s->initrd,
			       .root_disk = s->root_disk,
			       .cmdline = cmdline,
			       .ram_path = ram,
			       .ram_private = s->image_fd >= 0,
			       .ram_bytes = ram_bytes,
			       .port = s->port,
			       .bundle = s->bundle,
			       .console = c->console ? console : NULL,
			       .user = c->vm_user,
			       .incoming_fd = state_fd};
	r = driver->argv(&l, &argv);
	if (r < 0) {
		safe_close(state_fd);
		return r;
	}
	char log[400];
	snprintf(log, sizeof log, "%s/vmm.log", s->bundle);
	int logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		/* the VMM itself joins the namespace and the cgroup: no wrapper stays around. The
		 * limit is the guest's RAM (a shmem file charged here) plus QEMU's own ~80-100 MiB
		 * (TCG's code buffer included), with room to spare. */
		if (setns(s->nsfd, CLONE_NEWNET) < 0 ||
		    cgroup_enter(s->cgroup, ram_bytes + (160ull << 20)) < 0)
			_exit(121);
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(logfd >= 0 ? logfd : null, 1);
		dup2(logfd >= 0 ? logfd : null, 2);
		if (state_fd >= 0)
			fcntl(state_fd, F_SETFD, 0); /* inherited at its number: "fd:<n>" */
		execv(argv[0], argv);
		_exit(127);
	}
	for (char **a = argv; *a; a++)
		free(*a);
	free(argv);
	safe_close(logfd);
	safe_close(state_fd);
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
agent_open(const char *bundle)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/agent.sock", bundle);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
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

int
microvm_finish_restore(const char *bundle, const char *id, int state_fd)
{
	struct timespec t0, t1, t2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = state_fd >= 0 ? driver->restore(bundle, state_fd) : -EINVAL;
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
		vmm_log(bundle, "restored: device state loaded and running in %ld ms, agent told "
				"the time and id in %ld ms",
			(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000,
			(t2.tv_sec - t1.tv_sec) * 1000 + (t2.tv_nsec - t1.tv_nsec) / 1000000);
	return r;
}

/* Copy the non-zero pages of from's data (not its holes) into to at the same offsets,
 * except those marked in skip (NULL: none). to is a fresh file of the right size: pages the
 * guest touched but left zero, like holes, stay holes in the image. */
static int
copy_nonzero_pages(int from, int to, const uint8_t *skip)
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
			size_t want = (size_t)(hole - p) < sizeof buf ? (size_t)(hole - p) : sizeof buf;
			ssize_t k = pread(from, buf, want, p);
			if (k <= 0)
				return k < 0 ? -errno : -EIO;
			for (ssize_t pg = 0; pg < k; pg += 4096) {
				uint64_t n = (uint64_t)(p + pg) / 4096;
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

/* The guest RAM mapping of a restored VM: the image's RAM file mapped private. Returns its
 * start address and opens the file it maps (through map_files, whatever its name now). */
static int
restored_ram(pid_t pid, uint64_t ram_bytes, uint64_t *start, int *fd)
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
		if (b - a != ram_bytes || perms[3] != 'p' || n < 4 || strcmp(file + n - 4, "/ram"))
			continue;
		snprintf(path, sizeof path, "/proc/%d/map_files/%llx-%llx", (int)pid, a, b);
		*fd = open(path, O_RDONLY | O_CLOEXEC);
		*start = a;
		r = *fd < 0 ? -errno : 0;
		break;
	}
	fclose(f);
	return r;
}

/* Write tracking without soft-dirty bits: a restored VM's RAM is a private file mapping, so
 * the pages it wrote since are exactly those no longer backed by the file (pagemap: present and
 * not a file page, or swapped). Copy them into out (marking them in dirty) while it is paused. */
static int
copy_written_pages(pid_t pid, uint64_t start, uint64_t ram_bytes, int out, uint8_t *dirty,
		   uint64_t *count)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/pagemap", (int)pid);
	_cleanup_close_ int pm = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	_cleanup_close_ int mem = open(path, O_RDONLY | O_CLOEXEC);
	if (pm < 0 || mem < 0)
		return -errno;
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

int
microvm_snapshot(const struct microvm_config *c, const char *bundle, const char *id, pid_t pid,
		 uint64_t memory_limit, int image_dirfd)
{
	uint64_t ram_bytes = guest_ram(memory_limit);
	/* a cold-booted VM has its RAM file in ram_dir; a restored one maps its image's */
	char ram[400];
	microvm_ram_path(c, id, ram, sizeof ram);
	bool cold = access(ram, F_OK) == 0;
	_cleanup_close_ int state = openat(image_dirfd, "state", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	_cleanup_close_ int out = openat(image_dirfd, "ram", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	_cleanup_close_ int in = -1;
	uint64_t start = 0, written = 0;
	int r = 0;
	if (cold)
		in = open(ram, O_RDONLY | O_CLOEXEC);
	else
		r = restored_ram(pid, ram_bytes, &start, &in);
	if (state < 0 || out < 0 || in < 0 || r < 0)
		return r < 0 ? r : -errno;
	if (ftruncate(out, (off_t)ram_bytes) < 0)
		return -errno;
	_cleanup_free_ uint8_t *dirty = calloc(1, ram_bytes / 4096 / 8 + 1);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = driver->pause(bundle);
	if (r == 0)
		r = driver->save_state(bundle, state);
	/* a cold VM's RAM is a shared file: all of it is copied while paused; a restored VM
	 * only has the pages it wrote copied while paused, its image's others afterwards */
	if (r == 0)
		r = cold ? copy_nonzero_pages(in, out, NULL)
			 : copy_written_pages(pid, start, ram_bytes, out, dirty, &written);
	/* resume in place, whatever happened: the parent goes on */
	int rr = driver->resume(bundle);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (r == 0)
		r = rr;
	if (r == 0 && !cold)
		r = copy_nonzero_pages(in, out, dirty); /* the image's pages it did not write */
	if (r < 0)
		vmm_log(bundle, "snapshot of %s: %s", id, strerror(-r));
	else
		vmm_log(bundle, "snapshot of %s: paused %ld ms%s, %llu pages written since restore",
			id, (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000),
			cold ? " (whole RAM copied)" : "", (unsigned long long)written);
	return r;
}

int
microvm_exec(const char *bundle, char *const *argv, size_t argc, unsigned timeout_ms,
	     int out_fd, int err_fd)
{
	int fd = agent_open(bundle);
	if (fd < 0)
		return fd;
	size_t len = 0;
	for (size_t i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *payload = malloc(len + 64), *p = payload;
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
	if (r == 0 && sscanf(line, "exit %d %lld %lld", &status, &ol, &el) != 3)
		r = -EIO;
	static char buf[65536];
	for (int i = 0; i < 2 && r == 0; i++) {
		long long left = i == 0 ? ol : el;
		while (left > 0 && r == 0) {
			size_t want = left < (long long)sizeof buf ? (size_t)left : sizeof buf;
			r = read_full(fd, buf, want, AGENT_TIMEOUT_MS);
			if (r == 0)
				r = write_full(i == 0 ? out_fd : err_fd, buf, want);
			left -= (long long)want;
		}
	}
	close(fd);
	return r < 0 ? r : status;
}
