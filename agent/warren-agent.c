/* warren-agent: PID 1 of a Warren microVM guest (a small static binary in the guest's
 * initramfs). In order:
 *   1. mount /proc, /sys, /dev, /tmp, /run; with warren.root=disk (a template too big to
 *      unpack into RAM) first load the modules and make a read-only ext4 disk, under a tmpfs
 *      overlay for the VM's own writes, the root, as switch_root does;
 *   2. start the template's program (warren.argv=, warren.env= on the kernel command line) at
 *      once: it can bind its port before the network exists, and everything below runs while
 *      it loads: the program's start-up overlaps the agent's own, instead of following it.
 *      Its stdout and stderr are the serial port, which the host keeps as the sandbox's
 *      console log (`warrenctl logs`);
 *   3. load the virtio modules listed in /etc/warren/modules, bring up lo and eth0 with the
 *      fixed inner address 10.0.2.15/24 via 10.0.2.2 (every VM and every clone has the same
 *      inner address: the host reaches each one through its own namespace, see
 *      docs/MICROVM.md);
 *   4. answer the host on the virtio-serial port "org.warren.agent" (QEMU) or, with
 *      warren.agent=vsock (Firecracker, which has no virtio-serial), on vsock port 1024 after
 *      loading the modules in /etc/warren/modules-vsock; one request per line
 * (common/agent-protocol.h): ping                  -> ok clock <sec> <nsec>    -> ok      (after
 * every restore: the guest clock stood still) id <sandbox id>       -> ok      (after every
 * restore: clones must not share it; read it from /run/warren/id) exec <ms> <len>\n<len bytes:
 * argv, NUL-separated>
 *                              -> exit <status> <outlen> <errlen>\n<stdout><stderr>
 * When the program exits, the agent writes why on the console and powers the VM off (or, with
 * warren.halt=reboot, reboots it: Firecracker exits on a reboot), so the VMM exits and the host
 * reports the sandbox gone. Under either VMM the virtio-mmio devices are found through ACPI
 * (Debian's kernel has no CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES; Firecracker >= 1.8 has ACPI). */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/vm_sockets.h>

#include "agent-user.h"
#include "agent-protocol.h"
#include "envd-proto.h"
#include "envd.h"

#define MAX_FILE (64 * 1024)

static pid_t app_pid;
static char cmdline[4096];

/* The program ended or set-up failed: end the VM the way its VMM notices. */
static void
vm_end(void)
{
	sync();
	reboot(strstr(cmdline, "warren.halt=reboot") ? RB_AUTOBOOT : RB_POWER_OFF);
	for (;;)
		pause();
}

static void
say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	int fd = open("/dev/console", O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "warren-agent: ", 14) == 14)
			n = (int)write(fd, buf, (size_t)n);
		close(fd);
	}
}

/* Split n bytes of NUL- or newline-separated fields into a NULL-terminated vector. */
static char **
split_vector(char *buf, ssize_t n)
{
	size_t count = 0;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == 0 || buf[i] == '\n')
			count++;
	char **v = calloc(count + 2, sizeof *v);
	if (!v)
		return NULL; /* the caller says what is missing */
	size_t k = 0;
	char *start = buf;
	for (ssize_t i = 0; i <= n; i++)
		if (i == n || buf[i] == 0 || buf[i] == '\n') {
			buf[i] = 0;
			if (*start)
				v[k++] = start;
			start = buf + i + 1;
		}
	return v;
}

static char **
read_vector(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *buf = calloc(1, MAX_FILE + 1);
	ssize_t n = buf ? read(fd, buf, MAX_FILE) : -1;
	close(fd);
	if (!buf)
		return NULL;
	return split_vector(buf, n < 0 ? 0 : n);
}

static int
hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The program's argv and env come on the kernel command line as warren.argv=<hex> and
 * warren.env=<hex> of NUL-separated strings: the same image serves every template command,
 * and both VMMs (QEMU -append, Firecracker boot_args) can pass it. */
static char **
cmdline_vector(const char *line, const char *key)
{
	const char *p = line;
	size_t klen = strlen(key);
	while ((p = strstr(p, key))) {
		if ((p == line || p[-1] == ' ') && p[klen] == '=')
			break;
		p += klen;
	}
	if (!p)
		return NULL;
	p += klen + 1;
	size_t hexlen = strcspn(p, " \n");
	char *buf = calloc(1, hexlen / 2 + 1);
	if (!buf)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i + 1 < hexlen; i += 2) {
		int hi = hexval(p[i]), lo = hexval(p[i + 1]);
		if (hi < 0 || lo < 0)
			break;
		buf[n++] = (char)(hi << 4 | lo);
	}
	return split_vector(buf, (ssize_t)n);
}

static void
mount_basics(void)
{
	/* a template's rootfs need not have the mount points */
	static const char *const dirs[] = {"/proc", "/sys", "/dev", "/tmp", "/run"};
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		mkdir(dirs[i], 0755);
	mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
	mkdir("/run/warren", 0755);
	/* PTYs of the envd API (posix_openpt) */
	mkdir("/dev/pts", 0755);
	mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
	      "newinstance,ptmxmode=0666,mode=0620");
	if (access("/dev/ptmx", F_OK) < 0 && symlink("pts/ptmx", "/dev/ptmx") < 0)
		say("no /dev/ptmx: %s\n", strerror(errno));
}

/* The program's stdout and stderr: the first serial port, whose bytes the VMM hands to the
 * host's console log. Raw (no "\n" to "\r\n"), CLOCAL (no wait for a carrier); opened
 * without becoming anyone's controlling terminal. /dev/console where there is no such port. */
static int
open_program_console(void)
{
	int fd = open("/dev/ttyS0", O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	struct termios t;
	if (fd >= 0 && tcgetattr(fd, &t) == 0) {
		t.c_oflag &= ~(tcflag_t)OPOST;
		t.c_cflag |= CLOCAL;
		cfsetospeed(&t, B115200);
		if (tcsetattr(fd, TCSANOW, &t) == 0 &&
		    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0)
			return fd;
	}
	if (fd >= 0)
		close(fd);
	say("no serial port for the program's output (%s): the console instead\n", strerror(errno));
	return open("/dev/console", O_WRONLY | O_NOCTTY | O_CLOEXEC);
}

static int
switch_to_disk_root(void)
{
	struct stat st;
	for (int i = 0; i < 2000 && stat("/dev/vda", &st) < 0; i++)
		usleep(5000);
	mkdir("/lower", 0755);
	mkdir("/rw", 0755);
	mkdir("/newroot", 0755);
	if (mount("/dev/vda", "/lower", "ext4", MS_RDONLY, NULL) < 0 ||
	    mount("tmpfs", "/rw", "tmpfs", 0, "mode=0755") < 0)
		return -1;
	mkdir("/rw/upper", 0755);
	mkdir("/rw/work", 0755);
	if (mount("overlay", "/newroot", "overlay", 0,
		  "lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work") < 0 ||
	    chdir("/newroot") < 0 || mount("/newroot", "/", NULL, MS_MOVE, NULL) < 0 ||
	    chroot(".") < 0 || chdir("/") < 0)
		return -1;
	return 0;
}

/* The template's working directory and ids (warren.cwd=<hex>, warren.user=UID:GID), applied
 * to the template's program only; execs keep root in /. */
static const char *app_cwd;
static bool app_user_set;
static uid_t app_uid;
static gid_t app_gid;
static bool applying_app_identity;

/* In the program's child, before its exec: the template's user holds neither root nor the
 * sandbox's capabilities, which the agent keeps to run E2B's commands as any user. */
static int
become_app_user(uid_t uid, gid_t gid)
{
	return setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0 ? -errno : 0;
}

static pid_t
start_program(char **argv, char **env, int out_fd, int err_fd)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	/* the template's program: what goes wrong before it runs is said in the sandbox's
	 * console log (err_fd) as well as on the kernel's console */
	if (applying_app_identity) {
		if (app_cwd && chdir(app_cwd) < 0) {
			say("cannot enter %s: %s\n", app_cwd, strerror(errno));
			if (err_fd >= 0)
				dprintf(err_fd, "warren-agent: cannot enter %s: %s\n", app_cwd,
					strerror(errno));
		}
		int r = app_user_set ? become_app_user(app_uid, app_gid) : 0;
		if (r < 0) {
			say("cannot become %u:%u: %s\n", (unsigned)app_uid, (unsigned)app_gid,
			    strerror(-r));
			if (err_fd >= 0)
				dprintf(err_fd, "warren-agent: cannot become %u:%u: %s\n",
					(unsigned)app_uid, (unsigned)app_gid, strerror(-r));
			_exit(126);
		}
	}
	setsid();
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	int null = open("/dev/null", O_RDWR);
	dup2(null, 0);
	dup2(out_fd >= 0 ? out_fd : null, 1);
	dup2(err_fd >= 0 ? err_fd : null, 2);
	execve(argv[0], argv, env);
	/* the template's program: why it never ran goes into the sandbox's console log */
	if (applying_app_identity)
		dprintf(2, "warren-agent: cannot start %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

static void
load_modules(const char *list)
{
	char **mods = read_vector(list);
	for (size_t i = 0; mods && mods[i]; i++) {
		int fd = open(mods[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0 || syscall(SYS_finit_module, fd, "", 0) < 0)
			if (errno != EEXIST)
				say("module %s: %s\n", mods[i], strerror(errno));
		if (fd >= 0)
			close(fd);
	}
}

static int
set_addr(int s, const char *ifname, unsigned long req, const char *addr)
{
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, addr, &sin->sin_addr);
	return ioctl(s, req, &ifr);
}

static int
link_up(int s, const char *ifname)
{
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return -1;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(s, SIOCSIFFLAGS, &ifr);
}

static void
setup_network(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	link_up(s, "lo");
	/* eth0 appears once virtio_net has probed; modules are loaded synchronously, but be
	 * patient with a slow (emulated) guest. */
	for (int i = 0; i < 200 && if_nametoindex("eth0") == 0; i++)
		usleep(5000);
	if (set_addr(s, "eth0", SIOCSIFADDR, AGENT_PROTO_GUEST_ADDR) < 0 ||
	    set_addr(s, "eth0", SIOCSIFNETMASK, "255.255.255.0") < 0 || link_up(s, "eth0") < 0) {
		say("eth0: %s\n", strerror(errno));
		close(s);
		return;
	}
	struct rtentry rt = {0};
	struct sockaddr_in *gw = (struct sockaddr_in *)&rt.rt_gateway;
	gw->sin_family = AF_INET;
	inet_pton(AF_INET, AGENT_PROTO_HOST_ADDR, &gw->sin_addr);
	((struct sockaddr_in *)&rt.rt_dst)->sin_family = AF_INET;
	((struct sockaddr_in *)&rt.rt_genmask)->sin_family = AF_INET;
	rt.rt_flags = RTF_UP | RTF_GATEWAY;
	if (ioctl(s, SIOCADDRT, &rt) < 0)
		say("default route: %s\n", strerror(errno));
	close(s);
}

/* The virtio-serial port named AGENT_PROTO_PORT_NAME: /dev/vportNpM, found through sysfs (no udev).
 */
static int
open_port(void)
{
	for (int tries = 0; tries < 400; tries++) {
		DIR *d = opendir("/sys/class/virtio-ports");
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char path[300], name[64] = "";
			snprintf(path, sizeof path, "/sys/class/virtio-ports/%s/name", e->d_name);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			ssize_t n = read(fd, name, sizeof name - 1);
			close(fd);
			name[n > 0 ? n : 0] = 0;
			name[strcspn(name, "\n")] = 0;
			if (strcmp(name, AGENT_PROTO_PORT_NAME))
				continue;
			snprintf(path, sizeof path, "/dev/%s", e->d_name);
			closedir(d);
			return open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
		}
		if (d)
			closedir(d);
		usleep(5000);
	}
	return -1;
}

static void
write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t k = write(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			struct pollfd pfd = {fd, POLLOUT, 0};
			if (k < 0 && errno == EAGAIN && poll(&pfd, 1, 1000) > 0)
				continue;
			return;
		}
		c += k;
		n -= (size_t)k;
	}
}

/* Reap children; the program's end ends the VM. Exec children are waited for by exec. */
static void
wake(int sig)
{
	(void)sig;
}

static void
reap(void)
{
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid != app_pid) {
			envd_child_exited(pid, status);
			continue;
		}
		if (WIFEXITED(status))
			say("program exited with status %d\n", WEXITSTATUS(status));
		else
			say("program killed by signal %d\n", WTERMSIG(status));
		vm_end();
	}
}

static void
do_exec(int port, unsigned ms, char *args, size_t len)
{
	size_t n = 0;
	char **argv = agent_proto_exec_argv(args, len, &n);
	if (!argv)
		n = 0;
	int out = memfd_create("out", MFD_CLOEXEC), err = memfd_create("err", MFD_CLOEXEC);
	char *env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	int status = 127;
	if (n > 0) {
		pid_t pid = start_program(argv, env, out, err);
		struct timespec start;
		clock_gettime(CLOCK_MONOTONIC, &start);
		for (;;) {
			int st;
			pid_t r = waitpid(pid, &st, WNOHANG);
			if (r == pid) {
				status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				break;
			}
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			long el = (now.tv_sec - start.tv_sec) * 1000 +
				  (now.tv_nsec - start.tv_nsec) / 1000000;
			if (el > (long)ms)
				kill(pid, SIGKILL);
			usleep(2000); /* the program's own end is seen by the serve loop */
		}
	}
	off_t ol = lseek(out, 0, SEEK_END), el = lseek(err, 0, SEEK_END);
	char hdr[96];
	int h = snprintf(hdr, sizeof hdr, "exit %d %lld %lld\n", status, (long long)ol,
			 (long long)el);
	write_all(port, hdr, (size_t)h);
	char buf[8192];
	int fds[2] = {out, err};
	for (int i = 0; i < 2; i++) {
		lseek(fds[i], 0, SEEK_SET);
		ssize_t k;
		while ((k = read(fds[i], buf, sizeof buf)) > 0)
			write_all(port, buf, (size_t)k);
		close(fds[i]);
	}
	free(argv);
}

/* One request (common/agent-protocol.h parsed it); ud is the port. */
static void
handle(const struct agent_proto_request *q, void *ud)
{
	int port = *(int *)ud;
	switch (q->kind) {
	case AGENT_PROTO_PING:
		write_all(port, "ok\n", 3);
		break;
	case AGENT_PROTO_CLOCK: {
		struct timespec ts = {.tv_sec = q->sec, .tv_nsec = q->nsec};
		bool ok = ts.tv_sec > 0 && clock_settime(CLOCK_REALTIME, &ts) == 0;
		write_all(port, ok ? "ok\n" : "error clock\n", ok ? 3 : 12);
		break;
	}
	case AGENT_PROTO_ID: {
		int fd = open("/run/warren/id", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		bool ok = fd >= 0 && write(fd, q->id, strlen(q->id)) >= 0;
		if (fd >= 0)
			close(fd);
		write_all(port, ok ? "ok\n" : "error id\n", ok ? 3 : 9);
		break;
	}
	case AGENT_PROTO_EXEC:
		do_exec(port, q->ms, q->args, q->len);
		break;
	case AGENT_PROTO_BAD_EXEC:
		write_all(port, "error exec\n", 11);
		break;
	default:
		write_all(port, "error unknown\n", 14);
	}
}

/* Listen on vsock for the host (Firecracker's socket forwards "CONNECT 1024" here). */
static int
vsock_listen(void)
{
	load_modules(AGENT_PROTO_MODULES_VSOCK_PATH);
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_vm sa = {.svm_family = AF_VSOCK,
				 .svm_cid = VMADDR_CID_ANY,
				 .svm_port = AGENT_PROTO_VSOCK_PORT};
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 4) < 0) {
		say("vsock port %d: %s\n", AGENT_PROTO_VSOCK_PORT, strerror(errno));
		return -1;
	}
	return fd;
}

/* Serve the host: on the virtio-serial port (port, listener < 0), or on connections accepted
 * from listener (vsock; one at a time, the newest wins). */
static void
serve(int port, int listener, int envd_fd)
{
	static char buf[AGENT_PROTO_MAX_EXEC + 4096];
	size_t have = 0;
	bool vsock = listener >= 0;
	/* Sleep until something happens, never spin (every wake-up costs the host CPU under TCG):
	 * SIGCHLD for children, and SIGIO, which virtio_console sends when the host opens or
	 * closes the port. While no host is connected the port polls as hung up and reads 0, so
	 * then only the signals are waited for. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGIO);
	sigprocmask(SIG_BLOCK, &set, NULL);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	/* a program that ended before the mask above (a bad user, a missing file) sent a SIGCHLD
	 * that nobody waited for: without this its zombie waits for the next child's signal */
	reap();
	if (!vsock) {
		fcntl(port, F_SETOWN, getpid());
		fcntl(port, F_SETFL, fcntl(port, F_GETFL) | O_ASYNC | O_NONBLOCK);
	}
	bool host = !vsock;
	for (;;) {
		struct pollfd pfd[5] = {{sfd, POLLIN, 0},
					{listener, POLLIN, 0},
					{host ? port : -1, POLLIN, 0},
					{envd_fd, POLLIN, 0},
					{envd_fd >= 0 ? envd_listen_fd() : -1, POLLIN, 0}};
		if (poll(pfd, 5, envd_fd >= 0 ? envd_timeout_ms() : -1) < 0)
			continue;
		if (envd_fd >= 0)
			envd_run();
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) == sizeof si)
				;
			reap();
			if (!vsock)
				host = true; /* the port may have opened: try it */
		}
		if (pfd[1].revents & POLLIN) {
			int c = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (c >= 0) {
				if (port >= 0)
					close(port);
				port = c;
				have = 0;
				host = true;
			}
		}
		if (!host)
			continue;
		ssize_t k = read(port, buf + have, sizeof buf - have - 1);
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
			host = false; /* no host on the other end: wait for SIGIO or the next one */
			if (vsock) {
				close(port);
				port = -1;
			}
			continue;
		}
		if (k < 0)
			continue;
		have += (size_t)k;
		/* a request larger than allowed is dropped */
		agent_proto_drain(buf, &have, sizeof buf, handle, &port);
	}
}

/* In a gVisor sandbox the agent is the container's first process (the spawner bind-mounts it
 * read-only at /.warren/agent and runs `/.warren/agent [--user UID:GID] -- <program...>` as
 * root): it starts the template's program as its child, as the template's user, with its own stdio
 * and environment, serves the envd API, reaps every orphan, passes termination signals on, and
 * exits as the program does, so the sandbox ends when its program ends, as before. */
static int
container_main(char **argv, bool user_set, uid_t uid, gid_t gid)
{
	sigset_t set;
	sigemptyset(&set);
	int fwd[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
	sigaddset(&set, SIGCHLD);
	for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++)
		sigaddset(&set, fwd[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	app_pid = fork();
	if (app_pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		int r = user_set ? become_app_user(uid, gid) : 0;
		if (r < 0) {
			fprintf(stderr, "warren-agent: cannot become %u:%u: %s\n", (unsigned)uid,
				(unsigned)gid, strerror(-r));
			_exit(126);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "warren-agent: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (app_pid < 0) {
		fprintf(stderr, "warren-agent: fork: %s\n", strerror(errno));
		return 127;
	}
	int envd_fd = envd_init(AGENT_PROTO_ENVD_PORT, environ);
	if (envd_fd < 0)
		fprintf(stderr, "warren-agent: envd API on port %d: %s\n", AGENT_PROTO_ENVD_PORT,
			strerror(-envd_fd));
	for (;;) {
		struct pollfd pfd[3] = {{sfd, POLLIN, 0},
					{envd_fd, POLLIN, 0},
					{envd_fd >= 0 ? envd_listen_fd() : -1, POLLIN, 0}};
		if (poll(pfd, 3, envd_fd >= 0 ? envd_timeout_ms() : -1) < 0 && errno != EINTR)
			return 127;
		struct signalfd_siginfo si;
		while (read(sfd, &si, sizeof si) == sizeof si) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			kill(app_pid, (int)si.ssi_signo); /* the program decides */
		}
		int status;
		pid_t pid;
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			if (pid == app_pid)
				return WIFEXITED(status) ? WEXITSTATUS(status)
							 : 128 + WTERMSIG(status);
			envd_child_exited(pid, status);
		}
		if (envd_fd >= 0)
			envd_run();
	}
}

int
main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "--"))
		return container_main(argv + 2, false, 0, 0);
	if (argc >= 5 && !strcmp(argv[1], "--user") && !strcmp(argv[3], "--")) {
		uid_t uid;
		gid_t gid;
		if (agent_user_parse(argv[2], true, &uid, &gid) < 0) {
			fprintf(stderr, "warren-agent: --user is UID:GID, not %s\n", argv[2]);
			return 127;
		}
		return container_main(argv + 4, true, uid, gid);
	}
	if (getpid() != 1) {
		fprintf(stderr, "warren-agent runs as PID 1 of a Warren microVM\n");
		return 1;
	}
	/* The kernel makes the initramfs's root 0700 and the archive's "." does not change a
	 * directory that exists: a template's user could then reach no file at all, and its
	 * program could not even be executed. A template's tree is root's and 0755. */
	if (chmod("/", 0755) < 0)
		say("cannot open / to the template's user: %s\n", strerror(errno));
	mount_basics();
	/* The kernel gives init no fds 0-2 when the initramfs has no /dev/console: hold them
	 * with /dev/null, or the first fds opened below would become a child's stdio. */
	for (int fd = open("/dev/null", O_RDWR); fd >= 0 && fd < 2; fd = open("/dev/null", O_RDWR))
		;
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, cmdline, sizeof cmdline - 1);
		cmdline[n > 0 ? n : 0] = 0;
		close(fd);
	}
	/* A template whose tree is too big for RAM comes as a read-only ext4 disk: mount it under
	 * a tmpfs overlay (the VM's own writes) and make that the root, as switch_root does. */
	bool disk = strstr(cmdline, "warren.root=disk") != NULL;
	if (disk) {
		load_modules(AGENT_PROTO_MODULES_PATH);
		if (switch_to_disk_root() < 0) {
			say("cannot mount the root disk: %s\n", strerror(errno));
			vm_end();
		}
		mount_basics();
	}
	char **prog = cmdline_vector(cmdline, "warren.argv");
	char **env = cmdline_vector(cmdline, "warren.env");
	if (!prog || !prog[0]) {
		say("no warren.argv= on the kernel command line\n");
		vm_end();
	}
	for (char **e = env; e && *e; e++)
		if (!strncmp(*e, "WARREN_SANDBOX_ID=", 18)) {
			int id_fd = open("/run/warren/id", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
					 0644);
			if (id_fd >= 0 && write(id_fd, *e + 18, strlen(*e + 18)) < 0)
				say("cannot write /run/warren/id\n");
			if (id_fd >= 0)
				close(id_fd);
		}
	char **cwd = cmdline_vector(cmdline, "warren.cwd");
	if (cwd && cwd[0] && cwd[0][0] == '/')
		app_cwd = cwd[0];
	const char *user = strstr(cmdline, " warren.user=");
	/* named but not understood: never run the program as root instead */
	if (user && !(app_user_set = agent_user_parse(user + strlen(" warren.user="), false,
						      &app_uid, &app_gid) == 0)) {
		say("warren.user= is not UID:GID\n");
		vm_end();
	}
	int console = open_program_console();
	applying_app_identity = true;
	app_pid = start_program(prog, env, console, console);
	applying_app_identity = false;
	if (console >= 0)
		close(console);
	if (!disk)
		load_modules(AGENT_PROTO_MODULES_PATH);
	setup_network();
	bool vsock = strstr(cmdline, "warren.agent=vsock") != NULL;
	int listener = vsock ? vsock_listen() : -1;
	int port = vsock ? -1 : open_port();
	if (port < 0 && listener < 0) {
		say("no channel to the host (virtio-serial port %s, or vsock)\n",
		    AGENT_PROTO_PORT_NAME);
		DIR *d = opendir("/sys/bus/virtio/devices");
		struct dirent *e;
		while (d && (e = readdir(d)))
			say("virtio device %s\n", e->d_name);
		/* SIGCHLD's default is to discard it, which would never end pause(): caught, it
		 * wakes the loop so the program's end still ends the VM */
		signal(SIGCHLD, wake);
		for (;;) {
			reap();
			pause();
		}
	}
	/* E2B's envd API (envd.c) on its port, for the gateway's header routing */
	int envd_fd = envd_init(AGENT_PROTO_ENVD_PORT, env);
	if (envd_fd < 0)
		say("envd API on port %d: %s\n", AGENT_PROTO_ENVD_PORT, strerror(-envd_fd));
	say("ready\n");
	serve(port, listener, envd_fd);
	return 0;
}
