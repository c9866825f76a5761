/* The spawner (see spawn.h). Every runsc command runs in the sandbox's slot namespace: runsc's
 * control socket is abstract, so exec/delete from another namespace would not find it. `run`
 * also gets a private mount namespace with a tmpfs over /proc/sys/net, because this runsc
 * takes /proc/sys/net/core/rmem_default as proof of the root namespace and refuses to start.
 * A gVisor sandbox's stdout/stderr (and runsc's own messages) go into a pipe the spawner drains
 * as they come into <bundle>/runsc.log, at most 256 KiB a second (the rest is counted and the
 * file ends with the last bytes), rotated once to runsc.log.1 at 1 MiB: a guest that writes
 * without end fills neither the disk nor the spawner. The last bytes stay in memory as the
 * reason a start or checkpoint failed. A microVM's serial port (where the agent puts its
 * program's stdout and stderr) goes through the same kind of FIFO into <bundle>/console.log
 * and the same ring, so `warrenctl logs` reads either backend.
 * Image directories come from the supervisor through netnsd as it sent them: the spawner, which
 * writes there as root, proves each is snapshotd's (image-proof.c) before runsc or the VMM sees
 * it, uses only its own fd of it afterwards, and hands the files it wrote to snapshotd's uid.
 * `runsc exec` writes into pipes the spawner drains into memfds of at most EXEC_OUTPUT_MAX
 * bytes per stream, as the microVM agent's output is bounded (microvm.c). */
#include "backend.h"
#include "spawn.h"
#include "adopt.h"
#include "cgroup.h"
#include "egress.h"
#include "fault.h"
#include "log-ring.h"
#include "microvm.h"
#include "fileio.h"
#include "image-layout.h"
#include "ipc-server.h"
#include "log.h"
#include "macro.h"
#include "names.h"
#include "netlink.h"
#include "oci-spec.h"
#include "pool.h"
#include "rootfs.h"
#include "spawner-lockdown.h"

#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/netlink.h>

#define CONSOLE_FILE_MAX (1 << 20) /* runsc.log rotates to runsc.log.1 at this size */
#define CONSOLE_RATE (256 << 10)   /* bytes per second written to the file; beyond, counted */
#define CONSOLE_TAIL 1024	   /* kept in memory for failure reasons */
/* A microVM's serial port reaches the FIFO a byte per write (the VMMs' UART emulation): its
 * console is read at most this often, so a guest writing without end cannot wake the spawner
 * for every byte. Meanwhile the FIFO holds what comes; when it is full the guest's UART waits. */
#define CONSOLE_VM_BATCH_MS 20
/* per stream of an exec, in the spawner's memory */
#define EXEC_OUTPUT_MAX MICROVM_EXEC_OUTPUT_MAX

struct console {
	int rfd, wfd; /* the pipe; the write end is kept for later runsc commands (checkpoint) */
	int file;     /* <bundle>/runsc.log, or a microVM's console.log (console_file) */
	off_t size;
	struct event *ev, *timer;
	struct event *resume;  /* a microVM's: reading starts again (CONSOLE_VM_BATCH_MS) */
	uint64_t window_start; /* usec, CLOCK_MONOTONIC */
	size_t window_bytes;   /* written to the file in this second */
	uint64_t dropped;      /* not written in this second */
	char tail[CONSOLE_TAIL];
	size_t tail_len;
	struct log_ring *ring; /* what `warrenctl logs` reads: what the file gets, bounded */
};

struct sb {
	char id[SANDBOX_ID_LEN + 1];
	int nsfd;
	int rootfs_fd; /* gVisor: the checked template rootfs, mounted for runsc (rootfs.h) */
	pid_t pid;
	unsigned slot;
	int pidfd; /* adopted from an earlier spawner: not our child, watched here */
	struct event *pidfd_ev;
	struct ipc_call *destroy_waiting; /* a Destroy that came during a checkpoint or restore */
	char bundle[300];
	char cgroup[CGROUP_PATH_MAX];
	bool checkpointing; /* its exit is the checkpoint's doing, not news */
	bool exited;	    /* its program ended by itself: its console log is kept (log-ring.h) */
	bool destroying;    /* a destroy is under way: an exec ending now was interrupted by it */
	bool vm;	    /* microVM backend: pid is the VMM's */
	/* a restore in place after a checkpoint: the slot's addresses (netnsd's, network order)
	 * that runsc took from the namespace, set there again before runsc restore; 0 otherwise */
	uint32_t resume_sandbox_addr, resume_host_addr;
	uint64_t memory_limit;
	struct console *console; /* runsc's stdio, or a microVM's serial port */
	struct sb *next;
};

/* CMD_KILL: `runsc kill` of an exec'd process whose `runsc exec` client timed out */
/* CMD_RESUME_DELETE: `runsc delete` of a container its checkpoint stopped, before its restore in
 * place (resume_in_place) */
enum cmd_kind {
	CMD_RUN,
	CMD_DELETE,
	CMD_EXEC,
	CMD_CHECKPOINT,
	CMD_VM_RESTORE,
	CMD_KILL,
	CMD_RESUME_DELETE
};

/* One stream of a gVisor exec: runsc exec writes into a pipe; the spawner copies at most
 * EXEC_OUTPUT_MAX bytes into the memfd the supervisor gets, and reads and drops the rest so the
 * exec runs to its end (a guest that writes without end is stopped by the exec timeout). */
struct exec_stream {
	int pipe; /* read end, non-blocking */
	int memfd;
	size_t size;
	bool truncated;
	struct event *ev;
};

struct cmd {
	pid_t pid;
	enum cmd_kind kind;
	struct sb *sb;
	struct ipc_call *call;
	int out_fd, err_fd;
	/* checkpoint/restore: the proven image directory (fd -1 if none), kept open until runsc
	 * is done, and the store's owner who gets the files written there */
	struct image_proof image;
	struct exec_stream *streams[2]; /* gVisor exec: stdout and stderr being drained */
	struct event *timer;
	char *error;   /* a failed run being cleaned up: the error to answer with */
	char *pidfile; /* gVisor exec: where runsc writes the exec'd process's pid in the sandbox */
	/* exec: its time limit, when it began, and whether the limit ended it (named, never a
	 * status: a command killed at its limit did not exit 137 by itself) */
	unsigned timeout_ms;
	uint64_t started_us;
	bool timed_out;
	/* a checkpoint asked to resume, and the delete and restore that do it: the call is the
	 * checkpoint's, answered once the sandbox runs again */
	bool resume;
	struct cmd *next;
};

static const struct spawner_config *cfg;
static struct event_base *base;
static struct ipc_server *server;
static struct sb *sandboxes;
static struct cmd *cmds;
static char runsc_root[300];
static int templates_fd = -1;
static char rootfs_mnt[300]; /* where runsc finds the rootfs, in its own mount namespace */
/* warren-agent, the first process of every gVisor container: opened once beside netnsd's own
 * binary, mounted from this fd (as the rootfs) onto agent_mnt in runsc's mount namespace */
static int agent_fd = -1;
static char agent_mnt[300];

static uint64_t
mono_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void
console_keep_tail(struct console *c, const char *buf, size_t n)
{
	if (n >= CONSOLE_TAIL) {
		memcpy(c->tail, buf + n - CONSOLE_TAIL, CONSOLE_TAIL);
		c->tail_len = CONSOLE_TAIL;
		return;
	}
	if (c->tail_len + n > CONSOLE_TAIL) {
		size_t drop = c->tail_len + n - CONSOLE_TAIL;
		memmove(c->tail, c->tail + drop, c->tail_len - drop);
		c->tail_len -= drop;
	}
	memcpy(c->tail + c->tail_len, buf, n);
	c->tail_len += n;
}

/* The console's file in the bundle: runsc's own messages share a gVisor sandbox's (vmm.log
 * is a microVM's VMM's). */
static const char *
console_file(const struct sb *sb)
{
	return sb->vm ? "console.log" : "runsc.log";
}

/* Append to the file; at the cap it becomes <file>.1 (replacing the older one) and a new one
 * starts, so a sandbox holds at most two caps on disk. */
static void
console_write_file(const struct sb *sb, const char *buf, size_t n)
{
	struct console *c = sb->console;
	log_ring_take(c->ring, buf, n);
	if (c->file < 0)
		return;
	if (c->size + (off_t)n > CONSOLE_FILE_MAX) {
		char cur[400], old[400];
		snprintf(cur, sizeof cur, "%s/%s", sb->bundle, console_file(sb));
		snprintf(old, sizeof old, "%s/%s.1", sb->bundle, console_file(sb));
		safe_close(c->file);
		c->file = -1;
		if (rename(cur, old) < 0)
			return;
		c->file = open(cur, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		c->size = 0;
		if (c->file < 0)
			return;
	}
	ssize_t k = write(c->file, buf, n);
	if (k > 0)
		c->size += k;
}

/* Bytes read from the pipe: all of them to the in-memory tail, to the file only up to
 * CONSOLE_RATE per second; the rest is counted and noted once the second is over. */
static void
console_take(struct sb *sb, const char *buf, size_t n)
{
	struct console *c = sb->console;
	console_keep_tail(c, buf, n);
	uint64_t now = mono_usec();
	if (now - c->window_start >= 1000000 && !c->dropped) {
		c->window_start = now;
		c->window_bytes = 0;
	}
	size_t room = c->window_bytes < CONSOLE_RATE ? CONSOLE_RATE - c->window_bytes : 0;
	size_t w = n < room ? n : room;
	if (w)
		console_write_file(sb, buf, w);
	c->window_bytes += w;
	if (w < n) {
		if (!c->dropped) {
			uint64_t left = 1000000 - (now - c->window_start) % 1000000;
			struct timeval tv = {(time_t)(left / 1000000),
					     (suseconds_t)(left % 1000000)};
			evtimer_add(c->timer, &tv);
		}
		c->dropped += n - w;
		log_ring_dropped(c->ring, n - w);
	}
}

/* Read what is there now, up to max bytes; returns bytes read. */
static size_t
console_read(struct sb *sb, size_t max)
{
	char buf[65536];
	size_t total = 0;
	while (total < max) {
		ssize_t k = read(sb->console->rfd, buf, sizeof buf);
		if (k <= 0)
			break;
		console_take(sb, buf, (size_t)k);
		total += (size_t)k;
	}
	return total;
}

/* The end of a second in which output was dropped: say so in the file and end it with the
 * last bytes, so the file on disk always ends as the output did. */
static void
console_flush(evutil_socket_t fd, short what, void *arg)
{
	struct sb *sb = arg;
	struct console *c = sb->console;
	char note[96];
	int k = snprintf(note, sizeof note,
			 "\n[warren: %llu bytes of output not kept; the last %zu:]\n",
			 (unsigned long long)c->dropped, c->tail_len);
	console_write_file(sb, note, (size_t)k);
	console_write_file(sb, c->tail, c->tail_len);
	c->dropped = 0;
	c->window_start = mono_usec();
	c->window_bytes = 0;
}

/* Drained as fast as the guest writes, so its writes never wait or fail (gVisor hands a full
 * pipe's EAGAIN to the guest); a round is bounded so other sandboxes' events are served. */
static void
console_readable(evutil_socket_t fd, short what, void *arg)
{
	struct sb *sb = arg;
	console_read(sb, 1 << 20);
	if (sb->console->resume) {
		event_del(sb->console->ev);
		struct timeval tv = {0, CONSOLE_VM_BATCH_MS * 1000};
		evtimer_add(sb->console->resume, &tv);
	}
}

static void
console_resume(evutil_socket_t fd, short what, void *arg)
{
	struct sb *sb = arg;
	event_add(sb->console->ev, NULL);
}

static void
console_free(struct console *c)
{
	if (!c)
		return;
	if (c->ev)
		event_free(c->ev);
	if (c->timer)
		event_free(c->timer);
	if (c->resume)
		event_free(c->resume);
	safe_close(c->rfd);
	safe_close(c->wfd);
	safe_close(c->file);
	log_ring_free(c->ring);
	free(c);
}

static int
console_new(struct sb *sb, bool adopted)
{
	struct console *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->rfd = c->wfd = c->file = -1;
	/* A FIFO in the bundle, not a pipe: runsc gets it opened read-write, so the sandbox holds
	 * a reader itself and never sees EPIPE (a Go runtime dies of SIGPIPE on stdout) while no
	 * spawner reads; a restarted spawner opens it again by name and drains what waited. */
	char path[400];
	snprintf(path, sizeof path, "%s/console", sb->bundle);
	if (!adopted && mkfifo(path, 0600) < 0 && errno != EEXIST) {
		free(c);
		return -errno;
	}
	c->rfd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	c->wfd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	/* runsc hands stdio to the sandbox's user (fchown): the owner is not checked, the FIFO is
	 * reached only through the root-only runtime directory */
	if (c->rfd < 0 || c->wfd < 0 || fstat(c->rfd, &st) < 0 || !S_ISFIFO(st.st_mode) ||
	    st.st_nlink != 1) {
		int r = c->rfd < 0 || c->wfd < 0 ? -errno : -EPERM;
		console_free(c);
		return r;
	}
	/* only the read end: runsc and the guest write to a blocking pipe; room for bursts while
	 * the spawner is busy elsewhere */
	fcntl(c->rfd, F_SETPIPE_SZ, 256 << 10);
	snprintf(path, sizeof path, "%s/%s", sb->bundle, console_file(sb));
	c->file = open(path,
		       O_WRONLY | O_CREAT | (adopted ? O_APPEND : O_TRUNC) | O_NOFOLLOW | O_CLOEXEC,
		       0600);
	if (c->file >= 0 && adopted)
		c->size = lseek(c->file, 0, SEEK_END);
	c->ev = event_new(base, c->rfd, EV_READ | EV_PERSIST, console_readable, sb);
	c->timer = evtimer_new(base, console_flush, sb);
	c->resume = sb->vm ? evtimer_new(base, console_resume, sb) : NULL;
	c->ring = log_ring_new(base, cfg->log_ring_size);
	if (c->file < 0 || !c->ev || !c->timer || !c->ring || (sb->vm && !c->resume)) {
		int r = c->file < 0 ? -errno : -ENOMEM;
		console_free(c);
		return r;
	}
	c->window_start = mono_usec();
	event_add(c->ev, NULL);
	sb->console = c;
	return 0;
}

static struct sb *
sb_find(const char *id)
{
	for (struct sb *s = sandboxes; s; s = s->next)
		if (!strcmp(s->id, id))
			return s;
	return NULL;
}

static void
sb_forget(struct sb *sb)
{
	for (struct sb **pp = &sandboxes; *pp; pp = &(*pp)->next)
		if (*pp == sb) {
			*pp = sb->next;
			break;
		}
	/* an exec still running (or its kill) outlives the sandbox's record */
	for (struct cmd *c = cmds; c; c = c->next)
		if (c->sb == sb)
			c->sb = NULL;
	if (sb->exited && sb->console) {
		console_read(sb, 1 << 20);
		log_ring_keep(sb->id, TAKE_PTR(sb->console->ring));
	}
	console_free(sb->console);
	if (sb->pidfd_ev)
		event_free(sb->pidfd_ev);
	safe_close(sb->pidfd);
	if (sb->destroy_waiting) {
		IpcResponse resp = WARREN__V1__RESPONSE__INIT;
		ipc_call_reply(sb->destroy_waiting, &resp, NULL, 0);
		ipc_call_free(sb->destroy_waiting);
	}
	/* the record goes first: a crash from here on leaves no record naming what is removed */
	adopt_record_remove(cfg->runtime_dir, sb->id);
	rm_rf(sb->bundle);
	cgroup_remove(sb->cgroup);
	safe_close(sb->nsfd);
	safe_close(sb->rootfs_fd);
	free(sb);
}

/* Fork a runsc command inside the slot. */
static pid_t
run_in_slot(struct sb *sb, char **argv, int out_fd, int err_fd, bool for_run)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid < 0 ? -errno : pid;
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	int tree = for_run ? rootfs_clone(sb->rootfs_fd) : -1;
	int atree = for_run && agent_fd >= 0 ? rootfs_clone(agent_fd) : -1;
	if (setns(sb->nsfd, CLONE_NEWNET) < 0 || (for_run && tree < 0) ||
	    (for_run && agent_fd >= 0 && atree < 0))
		_exit(120);
	if (for_run && sb->resume_sandbox_addr) {
		int nl = nl_open(NETLINK_ROUTE);
		if (nl < 0 ||
		    slot_net_configure(nl, sb->resume_sandbox_addr, sb->resume_host_addr) < 0)
			_exit(123);
		close(nl);
	}
	if (for_run &&
	    (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	     mount("tmpfs", "/proc/sys/net", "tmpfs", MS_NOSUID | MS_NODEV, NULL) < 0))
		_exit(121);
	if (for_run && rootfs_attach(tree, rootfs_mnt) < 0)
		_exit(122);
	if (atree >= 0 && rootfs_attach(atree, agent_mnt) < 0)
		_exit(122);
	int null = open("/dev/null", O_RDWR);
	dup2(null, 0);
	dup2(out_fd >= 0 ? out_fd : null, 1);
	dup2(err_fd >= 0 ? err_fd : null, 2);
	/* runsc gets stdio and nothing else of the spawner's (other sandboxes' namespaces, image
	 * fds): found when a fork of 100 failed now and then with "unable to remap stdios, FD 258
	 * is already in use" */
	close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
	execv(cfg->runsc, argv);
	_exit(127);
}

/* runsc commands and helpers under way (the debug log's measure of how many share the CPU) */
static unsigned
cmds_running(void)
{
	unsigned n = 0;
	for (struct cmd *c = cmds; c; c = c->next)
		n++;
	return n;
}

static int
cmd_start(enum cmd_kind kind, struct sb *sb, struct ipc_call *call, char **argv, int out_fd,
	  int err_fd)
{
	pid_t pid = argv ? run_in_slot(sb, argv, out_fd, err_fd, kind == CMD_RUN) : 0;
	if (pid < 0)
		return (int)pid;
	struct cmd *c = calloc(1, sizeof *c);
	if (!c) {
		if (pid > 0)
			kill(pid, SIGKILL); /* unwatched it would never be answered for */
		return -ENOMEM;
	}
	c->pid = pid;
	c->kind = kind;
	c->sb = sb;
	c->call = call;
	c->out_fd = out_fd;
	c->err_fd = err_fd;
	c->image.fd = -1;
	c->next = cmds;
	cmds = c;
	return 0;
}

/* A blocking step of the microVM backend, run in a forked child; its exit status is the
 * result (see microvm.h). */
typedef int (*cmd_fn)(struct sb *sb, void *arg, int out_fd, int err_fd);

static int
cmd_start_fn(enum cmd_kind kind, struct sb *sb, struct ipc_call *call, cmd_fn fn, void *arg,
	     int out_fd, int err_fd)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		signal(SIGCHLD, SIG_DFL);
		signal(SIGPIPE, SIG_IGN);
		_exit(fn(sb, arg, out_fd, err_fd));
	}
	int r = cmd_start(kind, sb, call, NULL, out_fd, err_fd);
	if (r == 0)
		cmds->pid = pid;
	return r;
}

/* Copy what the pipe holds now into the memfd, up to EXEC_OUTPUT_MAX; beyond, read and drop.
 * At most max bytes per call, so a guest that writes without end cannot hold the loop. */
static void
exec_stream_drain(struct exec_stream *e, size_t max)
{
	static char buf[65536];
	size_t done = 0;
	while (e->pipe >= 0 && done < max) {
		ssize_t k = read(e->pipe, buf, sizeof buf);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0 || errno != EAGAIN) {
				/* end of file, or broken: nothing more will come */
				if (e->ev)
					event_del(e->ev);
				e->pipe = safe_close(e->pipe);
			}
			return;
		}
		done += (size_t)k;
		size_t keep = e->size >= EXEC_OUTPUT_MAX ? 0 : EXEC_OUTPUT_MAX - e->size;
		if ((size_t)k > keep)
			e->truncated = true;
		if (keep > (size_t)k)
			keep = (size_t)k;
		for (size_t off = 0; off < keep;) {
			ssize_t w = write(e->memfd, buf + off, keep - off);
			if (w <= 0)
				break;
			off += (size_t)w;
			e->size += (size_t)w;
		}
	}
}

static void
exec_stream_readable(evutil_socket_t fd, short what, void *arg)
{
	exec_stream_drain(arg, 1 << 20);
}

static void
exec_stream_free(struct exec_stream *e)
{
	if (!e)
		return;
	if (e->ev)
		event_free(e->ev);
	safe_close(e->pipe);
	free(e); /* the memfd is the cmd's out_fd/err_fd */
}

/* A pipe for runsc exec to write one stream into: *wfd is the write end for the child, the
 * stream (with memfd, the reply's fd) drains the read end in the event loop. */
static int
exec_stream_new(int memfd, int *wfd, struct exec_stream **out)
{
	int p[2];
	if (memfd < 0 || pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	struct exec_stream *e = calloc(1, sizeof *e);
	if (!e) {
		close(p[0]);
		close(p[1]);
		return -ENOMEM;
	}
	e->pipe = p[0];
	e->memfd = memfd;
	fcntl(e->pipe, F_SETFL, O_NONBLOCK);
	e->ev = event_new(base, e->pipe, EV_READ | EV_PERSIST, exec_stream_readable, e);
	if (!e->ev) {
		exec_stream_free(e);
		close(p[1]);
		return -ENOMEM;
	}
	event_add(e->ev, NULL);
	*wfd = p[1];
	*out = e;
	return 0;
}

/* runsc exec is done: what its pipes still hold now goes in (a process the exec left behind in
 * the sandbox may keep writing: that is not waited for), then the truncation note. */
static void
exec_streams_finish(struct cmd *c)
{
	for (int i = 0; i < 2; i++)
		if (c->streams[i])
			exec_stream_drain(c->streams[i], 2 * (size_t)EXEC_OUTPUT_MAX);
	for (int i = 0; i < 2; i++)
		if (c->streams[i] && c->streams[i]->truncated) {
			dprintf(c->err_fd,
				"\nwarren: exec output truncated: more than %u bytes on %s\n",
				EXEC_OUTPUT_MAX, i == 0 ? "stdout" : "stderr");
			break;
		}
	for (int i = 0; i < 2; i++) {
		exec_stream_free(c->streams[i]);
		c->streams[i] = NULL;
	}
}

static void
cmd_free(struct cmd *c)
{
	for (struct cmd **pp = &cmds; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	if (c->timer)
		event_free(c->timer);
	safe_close(c->out_fd);
	safe_close(c->err_fd);
	safe_close(c->image.fd);
	for (int i = 0; i < 2; i++)
		exec_stream_free(c->streams[i]);
	ipc_call_free(c->call);
	free(c->error);
	if (c->pidfile)
		unlink(c->pidfile);
	free(c->pidfile);
	free(c);
}

static int
start_delete(struct sb *sb, struct ipc_call *call, char *error)
{
	/* Killing the cgroup first makes `runsc delete --force` take ~50 ms instead of ~1.6 s. */
	cgroup_kill_all(sb->cgroup);
	char *argv[] = {(char *)cfg->runsc, runsc_root, "delete", "--force", sb->id, NULL};
	int r = cmd_start(CMD_DELETE, sb, call, argv, -1, -1);
	if (r == 0)
		cmds->error = error;
	return r;
}

/* A microVM has no runtime to delete: its VMM and cgroup are killed at once. */
static void
vm_kill(struct sb *sb)
{
	if (sb->pid > 0)
		kill(sb->pid, SIGKILL);
	cgroup_kill_all(sb->cgroup);
	sb->pid = 0;
}

static void
log_tail(const struct sb *sb, char *buf, size_t size)
{
	if (sb->console && !sb->vm) {
		/* what runsc said last may still be in the pipe */
		console_read((struct sb *)sb, 65536);
		const struct console *c = sb->console;
		size_t n = c->tail_len < size - 1 ? c->tail_len : size - 1;
		memcpy(buf, c->tail + c->tail_len - n, n);
		buf[n] = 0;
		for (char *p = buf; p < buf + n; p++)
			if (*p == '\n' || *p == 0)
				*p = ' ';
		return;
	}
	char path[400];
	snprintf(path, sizeof path, "%s/%s", sb->bundle, sb->vm ? "vmm.log" : "runsc.log");
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	buf[0] = 0;
	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	lseek(fd, end > (off_t)size - 1 ? end - (off_t)size + 1 : 0, SEEK_SET);
	ssize_t k = read(fd, buf, size - 1);
	buf[k > 0 ? k : 0] = 0;
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = ' ';
}

/* sb is still in the list (a failed run forgets it inside cmd_done) */
static bool
sb_live(const struct sb *sb)
{
	for (const struct sb *s = sandboxes; s; s = s->next)
		if (s == sb)
			return true;
	return false;
}

/* A command that is not an exec runs for sb: a checkpoint, a run, a restore or a delete. */
static bool
sb_busy(const struct sb *sb)
{
	for (struct cmd *c = cmds; c; c = c->next)
		if (c->sb == sb && c->kind != CMD_EXEC && c->kind != CMD_KILL)
			return true;
	return false;
}

/* A Destroy that came while a checkpoint or a start ran is done once that is over: it waited
 * instead of answering EBUSY, so the supervisor never gives back a slot still in use. */
static void
destroy_if_waiting(struct sb *sb)
{
	if (!sb->destroy_waiting || sb_busy(sb))
		return;
	struct ipc_call *call = TAKE_PTR(sb->destroy_waiting);
	log_info("Sandbox %s: the destroy that waited goes on", sb->id);
	if (sb->vm) {
		vm_kill(sb);
		sb->destroy_waiting = call; /* answered by sb_forget */
		sb_forget(sb);
		return;
	}
	if (start_delete(sb, call, NULL) < 0) {
		ipc_call_error(call, -EIO, "cannot start runsc delete");
		ipc_call_free(call);
	}
}

static void spawner_maybe_done(void);

/* The console log travels with a checkpoint image: its restores (the parent's, a fork's
 * children) start with it (console_log_load). A log that cannot be written is left out,
 * never the image. */
static void
console_log_save(struct sb *sb, const struct image_proof *img)
{
	console_read(sb, 65536);
	int r = log_ring_save(sb->console->ring, img->fd, LOG_RING_IMAGE_FILE);
	if (r == 0)
		r = image_proof_seal(img, LOG_RING_IMAGE_FILE);
	if (r < 0) {
		log_warning_errno(r, "Sandbox %s: console log not kept in the image: %m", sb->id);
		unlinkat(img->fd, LOG_RING_IMAGE_FILE, 0);
	}
}

/* A restore's ring starts with its image's log (image_fd is proven snapshotd's:
 * handle_restore) and a line saying where the restore took over. */
static void
console_log_mark_restore(struct sb *sb)
{
	static const char note[] = "[warren: restored from a snapshot]\n";
	log_ring_take(sb->console->ring, note, sizeof note - 1);
}

static void
console_log_load(struct sb *sb, int image_fd)
{
	int r = log_ring_load(sb->console->ring, image_fd, LOG_RING_IMAGE_FILE);
	if (r < 0)
		log_warning_errno(r, "Sandbox %s: the image's console log: %m", sb->id);
	console_log_mark_restore(sb);
}

static int runsc_start(struct sb *sb, struct ipc_call *call, int image_fd);

/* runsc's checkpoint stopped the container: delete it, then restore it in place from the image
 * just written (CMD_RESUME_DELETE, then CMD_RUN with resume), so it runs again whatever becomes
 * of the image (its seal can fail, snapshotd can die); the checkpoint's call is answered by the
 * restore. 0, or -errno with c keeping its call. */
static int
resume_in_place(struct sb *sb, struct cmd *c)
{
	int fd = fcntl(c->image.fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	cgroup_kill_all(sb->cgroup); /* what the checkpoint left (as start_delete) */
	char *argv[] = {(char *)cfg->runsc, runsc_root, "delete", "--force", sb->id, NULL};
	int r = cmd_start(CMD_RESUME_DELETE, sb, c->call, argv, -1, -1);
	if (r < 0) {
		close(fd);
		return r;
	}
	c->call = NULL;
	cmds->image = c->image;
	cmds->image.fd = fd;
	cmds->resume = true;
	return 0;
}

/* A runtime adopted from an earlier spawner, watched by pidfd, restored in place: the new one
 * is this spawner's child, its exit comes as SIGCHLD with its status. */
static void
sb_unwatch_adopted(struct sb *sb)
{
	if (sb->pidfd_ev) {
		event_free(sb->pidfd_ev);
		sb->pidfd_ev = NULL;
	}
	safe_close(sb->pidfd);
	sb->pidfd = -1;
}

static void
cmd_done(struct cmd *c, int status)
{
	struct sb *sb = c->sb;
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	switch (c->kind) {
	case CMD_RUN: {
		log_debug("Sandbox %s: runsc %s took %llu ms (%u commands running)", sb->id,
			  c->image.fd >= 0 ? "restore" : "run",
			  (unsigned long long)(mono_usec() - c->started_us) / 1000, cmds_running());
		char path[400], pidbuf[32];
		int kr = 0;
		snprintf(path, sizeof path, "%s/pid", sb->bundle);
		/* runsc made the cgroup: its freezer and reclaim knobs go to netnsd and snapshotd
		 * before anyone hears of the sandbox (no freeze can come earlier) */
		if (ok && file_read_line(path, pidbuf, sizeof pidbuf) == 0 && atoi(pidbuf) > 0 &&
		    (kr = cgroup_hand_knobs(sb->cgroup, cfg->freezer_uid, cfg->reclaim_uid)) == 0) {
			sb->pid = atoi(pidbuf);
			adopt_record_write(cfg->runtime_dir, sb->id, sb->slot, sb->pid, false,
					   sb->memory_limit);
			if (c->resume) {
				sb->checkpointing = false;
				sb->resume_sandbox_addr = sb->resume_host_addr = 0;
				sb_unwatch_adopted(sb);
				log_info("Sandbox %s: restored in place after its checkpoint (pid "
					 "%d)",
					 sb->id, (int)sb->pid);
				Warren__V1__CheckpointSandboxResponse cr =
					WARREN__V1__CHECKPOINT_SANDBOX_RESPONSE__INIT;
				cr.still_running = true;
				cr.pid = sb->pid;
				resp.body_case = WARREN__V1__RESPONSE__BODY_CHECKPOINT_SANDBOX;
				resp.checkpoint_sandbox = &cr;
				ipc_call_reply(c->call, &resp, NULL, 0);
				break;
			}
			fault_point(c->image.fd >= 0 ? "restore" : "spawn");
			Warren__V1__SpawnSandboxResponse sr =
				WARREN__V1__SPAWN_SANDBOX_RESPONSE__INIT;
			sr.pid = sb->pid;
			sr.cgroup = sb->cgroup;
			resp.body_case = WARREN__V1__RESPONSE__BODY_SPAWN_SANDBOX;
			resp.spawn_sandbox = &sr;
			if (c->image.fd >= 0) {
				resp.body_case = WARREN__V1__RESPONSE__BODY_RESTORE_SANDBOX;
				resp.restore_sandbox = &sr;
			}
			ipc_call_reply(c->call, &resp, NULL, 0);
			break;
		}
		char tail[400], *msg = NULL;
		log_tail(sb, tail, sizeof tail);
		if (kr < 0 ? asprintf(&msg, "cannot hand cgroup %s's knobs to the helpers: %s",
				      sb->cgroup, strerror(-kr)) < 0
			   : asprintf(&msg, "runsc %s failed (status 0x%x): %s",
				      c->resume		 ? "restore in place after the checkpoint"
				      : c->image.fd >= 0 ? "restore"
							 : "run",
				      status, tail) < 0)
			msg = NULL;
		log_error("Sandbox %s: %s", sb->id, msg ? msg : "runsc run failed");
		struct ipc_call *call = TAKE_PTR(c->call);
		if (start_delete(sb, call, msg) < 0) {
			ipc_call_error(call, -EIO, "%s", msg ? msg : "runsc run failed");
			ipc_call_free(call);
			free(msg);
			sb_forget(sb);
		}
		break;
	}
	case CMD_DELETE:
		/* Whatever runsc said, nothing of the sandbox may stay. */
		cgroup_kill_all(sb->cgroup);
		if (c->error)
			ipc_call_error(c->call, -EIO, "%s", c->error);
		else if (c->call)
			ipc_call_reply(c->call, &resp, NULL, 0);
		sb_forget(sb);
		break;
	case CMD_VM_RESTORE: {
		if (ok && sb->pid > 0) {
			adopt_record_write(cfg->runtime_dir, sb->id, sb->slot, sb->pid, true,
					   sb->memory_limit);
			fault_point("restore");
			Warren__V1__SpawnSandboxResponse sr =
				WARREN__V1__SPAWN_SANDBOX_RESPONSE__INIT;
			sr.pid = sb->pid;
			sr.cgroup = sb->cgroup;
			resp.body_case = WARREN__V1__RESPONSE__BODY_RESTORE_SANDBOX;
			resp.restore_sandbox = &sr;
			ipc_call_reply(c->call, &resp, NULL, 0);
			break;
		}
		char tail[400];
		log_tail(sb, tail, sizeof tail);
		log_error("Sandbox %s: microVM restore failed: %s", sb->id, tail);
		ipc_call_error(c->call, -EIO, "microVM restore failed: %s", tail);
		vm_kill(sb);
		sb_forget(sb);
		break;
	}
	case CMD_CHECKPOINT:
		fault_point("checkpoint-write");
		/* what runsc or the snapshot wrote, root's, becomes snapshotd's to seal */
		if (ok && !sb->vm)
			ok = image_proof_seal(&c->image, IMAGE_LAYOUT_GVISOR_CHECKPOINT) == 0;
		if (ok && sb->vm)
			ok = image_proof_seal(&c->image, IMAGE_LAYOUT_VM_STATE) == 0 &&
			     image_proof_seal(&c->image, IMAGE_LAYOUT_VM_RAM) == 0;
		if (ok && sb->console)
			console_log_save(sb, &c->image);
		if (ok && !sb->vm && c->resume) {
			int rr = resume_in_place(sb, c);
			if (rr == 0)
				break;
			log_error_errno(rr,
					"Sandbox %s: cannot restore it after its checkpoint: %m",
					sb->id);
		}
		if (ok) {
			Warren__V1__CheckpointSandboxResponse cr =
				WARREN__V1__CHECKPOINT_SANDBOX_RESPONSE__INIT;
			cr.still_running = sb->vm; /* a microVM resumes in place */
			resp.body_case = WARREN__V1__RESPONSE__BODY_CHECKPOINT_SANDBOX;
			resp.checkpoint_sandbox = &cr;
			ipc_call_reply(c->call, &resp, NULL, 0);
		} else {
			char tail[400];
			log_tail(sb, tail, sizeof tail);
			ipc_call_error(c->call, -EIO, "%s checkpoint failed (status 0x%x): %s",
				       sb->vm ? "microVM" : "runsc", status, tail);
		}
		break;
	case CMD_RESUME_DELETE: {
		/* whatever runsc delete said, the restore tells whether the sandbox runs again */
		int fd = TAKE_FD(c->image.fd);
		struct ipc_call *call = TAKE_PTR(c->call);
		/* its log goes on in the same ring, with the line every restore's log has */
		console_read(sb, 65536);
		console_log_mark_restore(sb);
		int r = runsc_start(sb, call, fd);
		if (r < 0) {
			safe_close(fd);
			log_error_errno(r, "Sandbox %s: cannot restore it after its checkpoint: %m",
					sb->id);
			ipc_call_error(call, r,
				       "checkpoint written, restore in place not started: %s",
				       strerror(-r));
			ipc_call_free(call);
			break;
		}
		cmds->resume = true;
		break;
	}
	case CMD_KILL:
		break;
	case CMD_EXEC: {
		if (c->streams[0])
			exec_streams_finish(c);
		/* a microVM's agent kills at the limit and answers 137: the time says it was the
		 * limit; gVisor's exec_timeout says so itself */
		if (sb && sb->vm && WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGKILL &&
		    mono_usec() - c->started_us >= (uint64_t)c->timeout_ms * 1000)
			c->timed_out = true;
		if (c->timed_out) {
			ipc_call_error(
				c->call, -ETIMEDOUT,
				"the command ran past its time limit of %u ms and was killed",
				c->timeout_ms);
			break;
		}
		if (!sb || !sb->pid || sb->destroying) {
			ipc_call_error(c->call, -ECONNABORTED,
				       sb && !sb->destroying
					       ? "the sandbox stopped while the command ran"
					       : "the sandbox was destroyed while the command ran");
			break;
		}
		Warren__V1__ExecResponse er = WARREN__V1__EXEC_RESPONSE__INIT;
		er.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		resp.body_case = WARREN__V1__RESPONSE__BODY_EXEC;
		resp.exec = &er;
		lseek(c->out_fd, 0, SEEK_SET);
		lseek(c->err_fd, 0, SEEK_SET);
		int fds[2] = {c->out_fd, c->err_fd};
		ipc_call_reply(c->call, &resp, fds, 2);
		break;
	}
	}
	enum cmd_kind kind = c->kind;
	cmd_free(c);
	if (kind != CMD_DELETE && kind != CMD_EXEC && kind != CMD_KILL && sb && sb_live(sb))
		destroy_if_waiting(sb);
	spawner_maybe_done();
}

static void
on_sigchld(evutil_socket_t sig, short what, void *arg)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid <= 0)
			return;
		struct cmd *c = cmds;
		while (c && c->pid != pid)
			c = c->next;
		if (c) {
			cmd_done(c, status);
			continue;
		}
		for (struct sb *sb = sandboxes; sb; sb = sb->next) {
			if (sb->pid != pid)
				continue;
			/* The sandbox went away by itself: tell netnsd, which tells the supervisor.
			 */
			sb->pid = 0;
			if (sb->checkpointing)
				continue;
			sb->exited = true;
			Warren__V1__SandboxExitedEvent ev = WARREN__V1__SANDBOX_EXITED_EVENT__INIT;
			ev.id = sb->id;
			ev.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
			ev.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
			IpcResponse resp = WARREN__V1__RESPONSE__INIT;
			resp.body_case = WARREN__V1__RESPONSE__BODY_SANDBOX_EXITED;
			resp.sandbox_exited = &ev;
			ipc_server_broadcast(server, &resp);
		}
	}
}

static int
vm_finish_restore(struct sb *sb, void *arg, int out_fd, int err_fd)
{
	return microvm_finish_restore(sb->bundle, sb->id, arg) < 0 ? 1 : 0;
}

/* A microVM: the VMM starts at once; a cold boot is answered now (the gateway's probe sees
 * when the guest's program answers), a restore once the VM runs again. netnsd checked the
 * initramfs next to the rootfs. */
static int
start_vm(struct ipc_call *call, struct sb *sb, const Warren__V1__SpawnSandboxRequest *q,
	 int image_fd)
{
	sb->vm = true;
	sb->memory_limit = q->memory_limit;
	char initrd[PATH_MAX], disk[PATH_MAX];
	/* a template too big for an initramfs has a read-only root disk next to it */
	int r = image_layout_template_file(q->rootfs, IMAGE_LAYOUT_VM_INITRAMFS, initrd,
					   sizeof initrd);
	if (r == 0)
		r = image_layout_template_file(q->rootfs, IMAGE_LAYOUT_VM_ROOT_DISK, disk,
					       sizeof disk);
	if (r < 0) {
		sb_forget(sb);
		return r;
	}
	bool has_disk = access(disk, R_OK) == 0;
	r = mkdir_p(sb->bundle, 0700);
	if (r == 0)
		r = console_new(sb, false);
	if (r < 0) {
		sb_forget(sb);
		return r;
	}
	if (image_fd >= 0)
		console_log_load(sb, image_fd);
	/* the template's bounds, the host's caps above them: the VMM's cgroup as runsc's */
	struct oci_limits lim = oci_limits_effective(cfg->limits, q->pids_limit, q->cpu_millis);
	struct microvm_start ms = {.id = sb->id,
				   .bundle = sb->bundle,
				   .cgroup = sb->cgroup,
				   .initrd = initrd,
				   .root_disk = has_disk ? disk : NULL,
				   .argv = q->argv,
				   .argc = q->n_argv,
				   .env = q->env,
				   .envc = q->n_env,
				   .cwd = q->cwd,
				   .uid = q->uid,
				   .gid = q->gid,
				   .port = q->port,
				   .memory_limit = q->memory_limit,
				   .pids_max = lim.pids_max,
				   .cpu_millis = lim.cpu_millis,
				   .nsfd = sb->nsfd,
				   .image_fd = image_fd,
				   .console_fd = sb->console->wfd};
	int incoming[2]; /* fd numbers in the VMM, for the forked finishing step */
	pid_t pid = microvm_launch(cfg->vm, &ms, incoming);
	if (pid < 0) {
		sb_forget(sb);
		return (int)pid;
	}
	sb->pid = pid;
	/* the cgroup exists (made before the fork): its freezer and reclaim knobs go to netnsd
	 * and snapshotd before anyone hears of the VM */
	r = cgroup_hand_knobs(sb->cgroup, cfg->freezer_uid, cfg->reclaim_uid);
	if (r < 0) {
		log_error_errno(r, "Sandbox %s: cannot hand cgroup %s's knobs to the helpers: %m",
				sb->id, sb->cgroup);
		vm_kill(sb);
		sb_forget(sb);
		return r; /* handle_restore closes image_fd */
	}
	if (image_fd < 0) {
		adopt_record_write(cfg->runtime_dir, sb->id, sb->slot, sb->pid, true,
				   sb->memory_limit);
		fault_point("spawn");
		Warren__V1__SpawnSandboxResponse sr = WARREN__V1__SPAWN_SANDBOX_RESPONSE__INIT;
		sr.pid = pid;
		sr.cgroup = sb->cgroup;
		IpcResponse resp = WARREN__V1__RESPONSE__INIT;
		resp.body_case = WARREN__V1__RESPONSE__BODY_SPAWN_SANDBOX;
		resp.spawn_sandbox = &sr;
		return ipc_call_reply(call, &resp, NULL, 0);
	}
	struct ipc_call *d = ipc_call_defer(call);
	r = cmd_start_fn(CMD_VM_RESTORE, sb, d, vm_finish_restore, incoming, -1, -1);
	if (r < 0) {
		ipc_call_free(d);
		vm_kill(sb);
		sb_forget(sb);
		return r; /* handle_restore closes image_fd */
	}
	cmds->image.fd = image_fd; /* QEMU maps the RAM file through it: kept until it runs */
	return IPC_DEFER;
}

/* `runsc run` of the bundle, or `runsc restore` of the image directory image_fd (proven
 * snapshotd's; the command owns it once started, the caller still does on failure), for call.
 * 0 or -errno. */
static int
runsc_start(struct sb *sb, struct ipc_call *call, int image_fd)
{
	char pidfile[400];
	snprintf(pidfile, sizeof pidfile, "%s/pid", sb->bundle);
	int logfd = fcntl(sb->console->wfd, F_DUPFD_CLOEXEC, 3);
	/* run --detach hands its stdout/stderr to the sandbox: a pipe the spawner drains as it
	 * goes, never one it waits on for end-of-file (it holds a write end itself). */
	char image[80];
	snprintf(image, sizeof image, "--image-path=/proc/%d/fd/%d", (int)getpid(), image_fd);
	char *run[] = {(char *)cfg->runsc,
		       runsc_root,
		       "--platform=ptrace",
		       "--network=sandbox",
		       "--overlay2=root:memory",
		       "run",
		       "--bundle",
		       sb->bundle,
		       "--detach",
		       "--pid-file",
		       pidfile,
		       sb->id,
		       NULL};
	/* one image restores into many containers; the restore lands on this slot's address */
	char *restore[] = {(char *)cfg->runsc,
			   runsc_root,
			   "--platform=ptrace",
			   "--network=sandbox",
			   "--overlay2=root:memory",
			   "restore",
			   image,
			   "--bundle",
			   sb->bundle,
			   "--detach",
			   "--pid-file",
			   pidfile,
			   sb->id,
			   NULL};
	int r = cmd_start(CMD_RUN, sb, call, image_fd >= 0 ? restore : run, logfd,
			  logfd >= 0 ? fcntl(logfd, F_DUPFD_CLOEXEC, 3) : -1);
	if (r < 0) {
		safe_close(logfd);
		return r;
	}
	cmds->image.fd = image_fd;
	cmds->started_us = mono_usec(); /* for the debug log of how long runsc took */
	return 0;
}

/* Record the sandbox and start its runtime: runsc on the checked rootfs, or the VMM. */
static int
launch_runtime(struct ipc_call *call, const Warren__V1__SpawnSandboxRequest *q, int image_fd)
{
	char cgroup[CGROUP_PATH_MAX];
	if (!sandbox_id_valid(q->id) || sb_find(q->id) || q->n_argv == 0 ||
	    cgroup_sandbox_path(cfg->cgroup_parent, q->id, cgroup, sizeof cgroup) < 0)
		return -EINVAL;
	struct sb *sb = calloc(1, sizeof *sb);
	if (!sb)
		return -ENOMEM;
	snprintf(sb->id, sizeof sb->id, "%s", q->id);
	memcpy(sb->cgroup, cgroup, sizeof cgroup);
	sb->nsfd = TAKE_FD(call->fds[0]);
	sb->rootfs_fd = -1;
	sb->pidfd = -1;
	sb->slot = q->slot;
	sb->memory_limit = q->memory_limit;
	snprintf(sb->bundle, sizeof sb->bundle, "%s/bundles/%s", cfg->runtime_dir, q->id);
	sb->next = sandboxes;
	sandboxes = sb;
	if (q->backend == (int)BACKEND_MICROVM)
		return start_vm(call, sb, q, image_fd);
	/* runsc gets the tree checked here, by fd: never the path, which could change under it */
	char why[600];
	sb->rootfs_fd = rootfs_open(templates_fd, cfg->templates_dir, q->rootfs, why, sizeof why);
	if (sb->rootfs_fd < 0) {
		int e = sb->rootfs_fd;
		log_error("Sandbox %s: template rootfs refused: %s", q->id, why);
		sb_forget(sb);
		safe_close(image_fd);
		return ipc_call_error(call, e, "template rootfs refused: %s", why);
	}
	/* the agent goes first where the template has its mount point (`warren-template-build`
	 * makes it); elsewhere the program runs directly, as without --gvisor-agent */
	bool with_agent = agent_fd >= 0;
	if (with_agent && rootfs_agent_mountpoint(sb->rootfs_fd, AGENT_PROTO_GVISOR_PATH) < 0) {
		with_agent = false;
		log_info("Sandbox %s: template %s has no " AGENT_PROTO_GVISOR_PATH
			 " file to mount the "
			 "agent on: its program runs without the agent (no envd API)",
			 q->id, q->rootfs);
	}
	/* with the agent first, runsc no longer sees the program: a missing one is named here */
	int pr = with_agent && image_fd < 0 && q->n_argv
			 ? rootfs_program_check(sb->rootfs_fd, q->argv[0], why, sizeof why)
			 : 0;
	if (pr < 0) {
		log_error("Sandbox %s: %s", q->id, why);
		sb_forget(sb);
		safe_close(image_fd);
		return ipc_call_error(call, pr, "%s", why);
	}
	char netns[64];
	snprintf(netns, sizeof netns, "/proc/%d/fd/%d", (int)getpid(), sb->nsfd);
	/* the agent runs first and starts the template's program: `agent -- program...` */
	char **argv = calloc(q->n_argv + 5, sizeof *argv);
	if (!argv) {
		sb_forget(sb);
		safe_close(image_fd);
		return -ENOMEM;
	}
	size_t argc = 0;
	char user[32];
	if (with_agent) {
		/* the agent runs as root to start E2B's commands as any user; it starts the
		 * program as the template's user (q->uid and q->gid: validated by netnsd) */
		argv[argc++] = (char *)AGENT_PROTO_GVISOR_PATH;
		if (q->uid || q->gid) {
			snprintf(user, sizeof user, "%u:%u", (unsigned)q->uid, (unsigned)q->gid);
			argv[argc++] = (char *)"--user";
			argv[argc++] = user;
		}
		argv[argc++] = (char *)"--";
	}
	for (size_t i = 0; i < q->n_argv; i++)
		argv[argc++] = q->argv[i];
	struct oci_spec spec = {.id = q->id,
				.rootfs = rootfs_mnt,
				.argv = argv,
				.argc = argc,
				.agent_source = with_agent ? agent_mnt : NULL,
				.env = q->env,
				.envc = q->n_env,
				.cwd = q->cwd,
				.uid = with_agent ? 0 : q->uid,
				.gid = with_agent ? 0 : q->gid,
				.memory_limit = q->memory_limit,
				.netns_path = netns,
				.cgroups_path = sb->cgroup};
	/* the template's bounds where it has them, never above the host's caps */
	struct oci_limits lim = oci_limits_effective(cfg->limits, q->pids_limit, q->cpu_millis);
	spec.pids_limit = lim.pids_max;
	if (lim.cpu_millis) {
		spec.cpu_period_us = 100000;
		spec.cpu_quota_us = lim.cpu_millis * 100;
	}
	int r = mkdir_p(sb->bundle, 0700);
	if (r == 0)
		r = oci_spec_write(sb->bundle, &spec);
	free(argv);
	if (r == 0)
		r = console_new(sb, false);
	if (r < 0) {
		sb_forget(sb);
		return r;
	}
	if (image_fd >= 0)
		console_log_load(sb, image_fd);
	struct ipc_call *deferred = ipc_call_defer(call);
	r = runsc_start(sb, deferred, image_fd);
	if (r < 0) {
		ipc_call_free(deferred);
		sb_forget(sb);
		return r;
	}
	return IPC_DEFER;
}

/* AddTemplate's check, as launch_runtime's: netnsd canonicalised the path inside the templates
 * dir; here it is opened beneath it and its tree checked (cached per template root). */
static int
handle_check_rootfs(struct ipc_call *call, void *ud)
{
	const char *p = call->req->check_rootfs->rootfs;
	char why[600];
	if (!p || p[0] != '/')
		return -EINVAL;
	int fd = rootfs_open(templates_fd, cfg->templates_dir, p, why, sizeof why);
	if (fd < 0) {
		log_warning("Template rootfs %s refused: %s", p, why);
		return ipc_call_error(call, fd, "template rootfs refused: %s", why);
	}
	close(fd);
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	return ipc_call_reply(call, &resp, NULL, 0);
}

/* An egress allow-list's chain and record for a slot (egress.c), or their removal: netnsd has
 * checked the slot is claimed; the policy is parsed again here, where nft runs as root. */
static int
handle_set_egress(struct ipc_call *call, void *ud)
{
	const Warren__V1__SetEgressRequest *q = call->req->set_egress;
	struct egress_policy p;
	char why[200];
	if (q->slot >= ADOPT_MAX_SLOTS || !q->policy ||
	    egress_policy_parse(q->policy, &p, why, sizeof why) < 0)
		return ipc_call_error(call, -EINVAL, "bad egress request for slot %u", q->slot);
	int r = egress_apply(cfg->isolation, q->slot, &p);
	if (r < 0)
		return ipc_call_error(call, r, "slot %u: egress chain: %s", q->slot, strerror(-r));
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	return ipc_call_reply(call, &resp, NULL, 0);
}

static int
handle_spawn(struct ipc_call *call, void *ud)
{
	return launch_runtime(call, call->req->spawn_sandbox, -1);
}

static int
handle_restore(struct ipc_call *call, void *ud)
{
	const Warren__V1__RestoreSandboxRequest *q = call->req->restore_sandbox;
	if (!q->spawn || !backend_valid(q->spawn->backend))
		return -EINVAL;
	/* runsc or the VMM reads the image as root: only a sealed image of snapshotd's store or
	 * cache, opened here beneath it, is used; the fd that came is closed unused */
	struct image_proof img;
	char why[400];
	int r = image_proof_open(&cfg->images, call->fds[1], IMAGE_PROOF_RESTORE,
				 q->spawn->backend == (int)BACKEND_MICROVM, &img, why, sizeof why);
	if (r < 0) {
		log_warning("Restore of %s refused: %s", q->spawn->id, why);
		return ipc_call_error(call, r, "%s", why);
	}
	r = launch_runtime(call, q->spawn, img.fd);
	if (r < 0)
		safe_close(img.fd);
	return r;
}

static int
vm_snapshot(struct sb *sb, void *arg, int out_fd, int err_fd)
{
	const struct image_proof *img = arg;
	return microvm_snapshot(cfg->vm, sb->bundle, sb->id, sb->pid, sb->memory_limit, img->fd,
				img->owner, img->group) < 0
		       ? 1
		       : 0;
}

static int
handle_checkpoint(struct ipc_call *call, void *ud)
{
	struct sb *sb = sb_find(call->req->checkpoint_sandbox->id);
	if (!sb || !sb->pid)
		return -ENOENT;
	for (struct cmd *c = cmds; c; c = c->next)
		if (c->sb == sb && c->kind != CMD_EXEC && c->kind != CMD_KILL)
			return -EBUSY;
	/* runsc or the snapshot creates the image's files in it as root: only an empty new image
	 * directory of snapshotd's store, opened here beneath the store, is written to */
	struct image_proof img;
	char why[400];
	int r = image_proof_open(&cfg->images, call->fds[0], IMAGE_PROOF_CHECKPOINT, sb->vm, &img,
				 why, sizeof why);
	if (r < 0) {
		log_warning("Checkpoint of %s refused: %s", sb->id, why);
		return ipc_call_error(call, r, "%s", why);
	}
	if (sb->vm) {
		struct ipc_call *d = ipc_call_defer(call);
		r = cmd_start_fn(CMD_CHECKPOINT, sb, d, vm_snapshot, &img, -1, -1);
		if (r < 0) {
			safe_close(img.fd);
			ipc_call_free(d);
			return r;
		}
		cmds->image = img;
		return IPC_DEFER;
	}
	char image[80];
	snprintf(image, sizeof image, "--image-path=/proc/%d/fd/%d", (int)getpid(), img.fd);
	int logfd = sb->console ? fcntl(sb->console->wfd, F_DUPFD_CLOEXEC, 3) : -1;
	char *argv[] = {(char *)cfg->runsc, runsc_root, "checkpoint", image, sb->id, NULL};
	const Warren__V1__CheckpointSandboxRequest *q = call->req->checkpoint_sandbox;
	/* a restore in place needs the slot's addresses (netnsd's); without them it is not tried */
	bool resume = q->resume && q->sandbox_addr && q->host_addr && sb->console;
	if (resume && sb->rootfs_fd < 0) {
		/* adopted from an earlier spawner: the template's tree, opened and checked now */
		sb->rootfs_fd = q->rootfs && *q->rootfs
					? rootfs_open(templates_fd, cfg->templates_dir, q->rootfs,
						      why, sizeof why)
					: -EINVAL;
		char netns[64];
		snprintf(netns, sizeof netns, "/proc/%d/fd/%d", (int)getpid(), sb->nsfd);
		int nr = sb->rootfs_fd >= 0 ? oci_spec_set_netns(sb->bundle, netns) : 0;
		if (nr < 0) {
			log_warning_errno(nr,
					  "Sandbox %s: cannot name this spawner's namespace in "
					  "its bundle: %m",
					  sb->id);
			sb->rootfs_fd = safe_close(sb->rootfs_fd);
			snprintf(why, sizeof why, "its bundle could not be updated");
		}
		if (sb->rootfs_fd < 0) {
			log_warning("Sandbox %s: no rootfs for a restore in place (%s): the "
				    "supervisor restores it from the sealed image",
				    sb->id, q->rootfs && *q->rootfs ? why : "none given");
			sb->rootfs_fd = -1;
			resume = false;
		}
	}
	sb->resume_sandbox_addr = resume ? q->sandbox_addr : 0;
	sb->resume_host_addr = resume ? q->host_addr : 0;
	struct ipc_call *d = ipc_call_defer(call);
	sb->checkpointing = true;
	/* runsc creates checkpoint.img in the image directory proven above to be snapshotd's new,
	 * empty one; with umask 077 it is root's alone, not world-readable guest memory, until
	 * it is sealed and handed to snapshotd */
	mode_t old_umask = umask(077);
	r = cmd_start(CMD_CHECKPOINT, sb, d, argv, logfd,
		      logfd >= 0 ? fcntl(logfd, F_DUPFD_CLOEXEC, 3) : -1);
	umask(old_umask);
	if (r < 0) {
		sb->checkpointing = false;
		safe_close(logfd);
		safe_close(img.fd);
		ipc_call_free(d);
		return r;
	}
	cmds->image = img;
	cmds->resume = resume;
	return IPC_DEFER;
}

static int
handle_destroy(struct ipc_call *call, void *ud)
{
	struct sb *sb = sb_find(call->req->destroy_sandbox->id);
	if (!sb)
		return -ENOENT;
	fault_point("destroy");
	if (sb_busy(sb)) {
		/* a checkpoint, run or restore is under way: wait behind it (one destroy waits;
		 * another one is refused, the first answers for both) */
		if (sb->destroy_waiting)
			return -EBUSY;
		sb->destroy_waiting = ipc_call_defer(call);
		log_info("Sandbox %s: destroy waits for the command under way", sb->id);
		return IPC_DEFER;
	}
	if (sb->vm) {
		vm_kill(sb);
		sb_forget(sb);
		IpcResponse resp = WARREN__V1__RESPONSE__INIT;
		return ipc_call_reply(call, &resp, NULL, 0);
	}
	sb->destroying = true;
	struct ipc_call *d = ipc_call_defer(call);
	int r = start_delete(sb, d, NULL);
	if (r < 0) {
		ipc_call_free(d);
		return r;
	}
	return IPC_DEFER;
}

/* Killing the `runsc exec` client leaves the process it started running in the sandbox: kill
 * that one too, by the pid runsc wrote (in the sandbox's root pid namespace, as `runsc kill
 * --pid` takes it). */
static void
exec_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct cmd *c = arg;
	c->timed_out = true;
	kill(c->pid, SIGKILL);
	char buf[32];
	if (!c->sb || !c->pidfile || file_read_line(c->pidfile, buf, sizeof buf) < 0)
		return;
	char *end;
	long pid = strtol(buf, &end, 10);
	if (*end || pid <= 1 || pid > INT32_MAX)
		return;
	char pidarg[32];
	snprintf(pidarg, sizeof pidarg, "--pid=%ld", pid);
	char *argv[] = {(char *)cfg->runsc, runsc_root, "kill", pidarg, c->sb->id, "KILL", NULL};
	int r = cmd_start(CMD_KILL, c->sb, NULL, argv, -1, -1);
	if (r < 0)
		log_warning_errno(r, "Sandbox %s: cannot kill timed-out exec pid %ld: %m",
				  c->sb->id, pid);
	else
		log_info("Sandbox %s: exec timed out, killing its process %ld", c->sb->id, pid);
}

static int
vm_exec(struct sb *sb, void *arg, int out_fd, int err_fd)
{
	const Warren__V1__ExecRequest *q = arg;
	unsigned ms = q->timeout_ms ? q->timeout_ms : 30000;
	/* the agent's answer is the guest's to write: read it as the VMM's user, with no
	 * capability, once the channel (root's socket) is open */
	int fd = microvm_agent_open(sb->bundle);
	if (fd >= 0 && cfg->vm->vm_user) {
		int r = spawner_lockdown_drop_step(cfg->vm->vm_user);
		if (r < 0) {
			dprintf(err_fd, "warren: cannot drop privileges: %s\n", strerror(-r));
			return 255;
		}
	}
	int status = fd < 0 ? fd : microvm_exec(fd, q->argv, q->n_argv, ms, out_fd, err_fd);
	if (status < 0) {
		dprintf(err_fd, "warren: the guest agent did not answer: %s\n", strerror(-status));
		return 255;
	}
	return status;
}

/* Exec in a microVM goes through its agent; the request stays alive in the forked child. */
static int
vm_exec_start(struct ipc_call *call, struct sb *sb, const Warren__V1__ExecRequest *q)
{
	int out = memfd_create("exec-stdout", MFD_CLOEXEC),
	    err = memfd_create("exec-stderr", MFD_CLOEXEC);
	struct ipc_call *d = ipc_call_defer(call);
	int r = cmd_start_fn(CMD_EXEC, sb, d, vm_exec, (void *)q, out, err);
	if (r < 0) {
		safe_close(out);
		safe_close(err);
		ipc_call_free(d);
		return r;
	}
	cmds->timeout_ms = q->timeout_ms ? q->timeout_ms : 30000;
	cmds->started_us = mono_usec();
	unsigned ms =
		(q->timeout_ms ? q->timeout_ms : 30000) + 15000; /* the agent's own limit first */
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	cmds->timer = evtimer_new(base, exec_timeout, cmds);
	evtimer_add(cmds->timer, &tv);
	return IPC_DEFER;
}

static int
handle_exec(struct ipc_call *call, void *ud)
{
	const Warren__V1__ExecRequest *q = call->req->exec;
	struct sb *sb = sb_find(q->id);
	if (!sb || !sb->pid)
		return -ENOENT;
	if (q->n_argv == 0 || q->n_argv > 250)
		return -EINVAL;
	if (sb->vm)
		return vm_exec_start(call, sb, q);
	static unsigned exec_seq;
	char *pidfile = NULL;
	if (asprintf(&pidfile, "%s/exec-%u.pid", sb->bundle, ++exec_seq) < 0)
		return -ENOMEM;
	char pidarg[450];
	snprintf(pidarg, sizeof pidarg, "--internal-pid-file=%s", pidfile);
	char **argv = calloc(q->n_argv + 7, sizeof *argv);
	if (!argv) {
		free(pidfile);
		return -ENOMEM;
	}
	size_t n = 0;
	argv[n++] = (char *)cfg->runsc;
	argv[n++] = runsc_root;
	argv[n++] = "exec";
	argv[n++] = pidarg;
	argv[n++] = sb->id;
	for (size_t i = 0; i < q->n_argv; i++)
		argv[n++] = q->argv[i];
	/* runsc writes into pipes, drained into the memfds with a bound (exec_stream_drain) */
	int out = memfd_create("exec-stdout", MFD_CLOEXEC),
	    err = memfd_create("exec-stderr", MFD_CLOEXEC);
	struct exec_stream *streams[2] = {NULL, NULL};
	int wout = -1, werr = -1;
	int r = exec_stream_new(out, &wout, &streams[0]);
	if (r == 0)
		r = exec_stream_new(err, &werr, &streams[1]);
	struct ipc_call *d = NULL;
	if (r == 0) {
		d = ipc_call_defer(call);
		r = cmd_start(CMD_EXEC, sb, d, argv, wout, werr);
	}
	free(argv);
	/* the write ends are runsc's alone now: the spawner keeps only the read ends */
	safe_close(wout);
	safe_close(werr);
	if (r < 0) {
		free(pidfile);
		exec_stream_free(streams[0]);
		exec_stream_free(streams[1]);
		safe_close(out);
		safe_close(err);
		if (d)
			ipc_call_free(d);
		return r;
	}
	cmds->out_fd = out;
	cmds->err_fd = err;
	cmds->streams[0] = streams[0];
	cmds->streams[1] = streams[1];
	cmds->pidfile = pidfile;
	unsigned ms = q->timeout_ms ? q->timeout_ms : 30000;
	cmds->timeout_ms = ms;
	cmds->started_us = mono_usec();
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	cmds->timer = evtimer_new(base, exec_timeout, cmds);
	evtimer_add(cmds->timer, &tv);
	return IPC_DEFER;
}

/* A sandbox's console log for its owner (the supervisor checked who asks): a sealed memfd of
 * the ring, or with follow a pipe fed as output comes. */
static int
handle_open_logs(struct ipc_call *call, void *ud)
{
	const Warren__V1__OpenLogsRequest *q = call->req->open_logs;
	struct sb *sb = sb_find(q->id);
	/* a sandbox whose program ended: its kept log, whole (nothing more will come) */
	struct log_ring *ring = sb ? NULL : log_ring_kept(q->id);
	if (!sb && !ring)
		return -ENOENT;
	if (sb && !sb->console)
		return ipc_call_error(call, -EOPNOTSUPP,
				      "this sandbox's console could not be opened again after a "
				      "restart: its output is not kept");
	if (sb) {
		console_read(sb, 1 << 20); /* what the guest wrote just before is in it */
		ring = sb->console->ring;
	}
	int fd = -1;
	uint64_t size = 0;
	int r = log_ring_open(ring, q->follow && sb, &fd, &size);
	if (r < 0)
		return ipc_call_error(call, r, "%s",
				      r == -EBUSY ? "too many followers of this log"
						  : strerror(-r));
	Warren__V1__OpenLogsResponse lr = WARREN__V1__OPEN_LOGS_RESPONSE__INIT;
	lr.size = size;
	lr.dropped = log_ring_dropped_total(ring);
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_OPEN_LOGS;
	resp.open_logs = &lr;
	r = ipc_call_reply(call, &resp, &fd, 1);
	close(fd);
	return r;
}

/* An id the new netnsd adopted (fixed-width ids: a name starting with one is its). */
static bool
adopted_name(const char *name)
{
	for (size_t i = 0; cfg->adopt && i < cfg->adopt->n; i++)
		if (!strncmp(name, cfg->adopt->items[i].id, SANDBOX_ID_LEN))
			return true;
	return false;
}

static void
clear_dir_except_adopted(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	char p[600];
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || adopted_name(de->d_name))
			continue;
		snprintf(p, sizeof p, "%s/%s", path, de->d_name);
		log_info("Removing leftover %s", p);
		if (de->d_type == DT_DIR)
			rm_rf(p);
		else
			unlink(p);
	}
	closedir(d);
}

/* What an earlier netnsd left and nobody adopted goes: runtimes in cgroups that are not an
 * adopted sandbox's are killed, runsc state and bundles of others removed. */
static void
clean_slate(void)
{
	cgroup_clear_children_except(cfg->cgroup_parent, adopted_name);
	char path[400];
	const char *root = runsc_root + strlen("--root=");
	mkdir_p(root, 0700);
	clear_dir_except_adopted(root);
	snprintf(path, sizeof path, "%s/bundles", cfg->runtime_dir);
	mkdir_p(path, 0700);
	clear_dir_except_adopted(path);
}

/* An adopted runtime is not our child (its first spawner is gone): its pidfd says it ended. */
static void
adopted_exited(evutil_socket_t fd, short what, void *arg)
{
	struct sb *sb = arg;
	event_del(sb->pidfd_ev);
	sb->pid = 0;
	if (sb->checkpointing)
		return;
	Warren__V1__SandboxExitedEvent ev = WARREN__V1__SANDBOX_EXITED_EVENT__INIT;
	ev.id = sb->id;
	ev.exit_status = -1; /* not ours to wait for: the status went to its new parent */
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	resp.body_case = WARREN__V1__RESPONSE__BODY_SANDBOX_EXITED;
	resp.sandbox_exited = &ev;
	ipc_server_broadcast(server, &resp);
}

/* Take over what netnsd checked before the fork. The fds it used were not inherited (the
 * spawner keeps only its link), so the process is pinned again and must still be the one
 * checked (start time) in the same namespace (inode). */
static void
adopt_all(void)
{
	for (size_t i = 0; cfg->adopt && i < cfg->adopt->n; i++) {
		const struct adopted *a = &cfg->adopt->items[i];
		struct sb *sb = calloc(1, sizeof *sb);
		if (!sb) {
			log_error_errno(-ENOMEM, "Sandbox %s not adopted: %m", a->id);
			continue;
		}
		snprintf(sb->id, sizeof sb->id, "%s", a->id);
		sb->rootfs_fd = -1;
		sb->pid = a->pid;
		sb->slot = a->slot;
		sb->vm = a->vm;
		sb->memory_limit = a->memory;
		snprintf(sb->bundle, sizeof sb->bundle, "%s/bundles/%s", cfg->runtime_dir, a->id);
		/* fits: the same parent and id fitted when it was spawned */
		(void)cgroup_sandbox_path(cfg->cgroup_parent, a->id, sb->cgroup, sizeof sb->cgroup);
		sb->pidfd = (int)syscall(SYS_pidfd_open, a->pid, 0);
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/ns/net", (int)a->pid);
		sb->nsfd = open(path, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (sb->pidfd < 0 || sb->nsfd < 0 || fstat(sb->nsfd, &st) < 0 ||
		    st.st_ino != a->ns_ino || adopt_proc_start(a->pid) != a->start) {
			log_error("Sandbox %s: pid %d changed since netnsd checked it; not adopted",
				  a->id, (int)a->pid);
			safe_close(sb->pidfd);
			safe_close(sb->nsfd);
			free(sb);
			continue;
		}
		sb->next = sandboxes;
		sandboxes = sb;
		int r = console_new(sb, true);
		if (r < 0)
			log_warning_errno(
				r,
				"Sandbox %s: cannot open its console again (%m); its output "
				"is not kept",
				sb->id);
		sb->pidfd_ev = event_new(base, sb->pidfd, EV_READ, adopted_exited, sb);
		event_add(sb->pidfd_ev, NULL);
		log_info("Sandbox %s adopted (pid %d)", sb->id, (int)sb->pid);
	}
}

static bool netnsd_gone;

/* netnsd went away: once no command is under way (their records are then true), exit, and
 * the lock on the runtime directory goes with us, letting the next netnsd in. */
static void
spawner_maybe_done(void)
{
	if (!netnsd_gone)
		return;
	for (struct cmd *c = cmds; c; c = c->next)
		if (c->kind != CMD_EXEC && c->kind != CMD_KILL)
			return;
	log_info("Commands done; %s left running for the next netnsd",
		 sandboxes ? "the sandboxes are" : "nothing is");
	_exit(0);
}

/* The sandboxes outlive netnsd and this spawner (restart without loss): the next netnsd adopts
 * them. An exec can no longer be answered: its client is killed. */
static void
on_netnsd_gone(void *ud, uint64_t peer_serial)
{
	log_info("netnsd is gone: the sandboxes keep running; exiting once the commands under way "
		 "are done");
	netnsd_gone = true;
	for (struct cmd *c = cmds; c; c = c->next)
		if (c->kind == CMD_EXEC && c->pid > 0)
			kill(c->pid, SIGKILL);
	spawner_maybe_done();
}

static const struct ipc_handler spawner_table[] = {
	{WARREN__V1__REQUEST__BODY_SPAWN_SANDBOX, 1, 0, handle_spawn},
	{WARREN__V1__REQUEST__BODY_DESTROY_SANDBOX, 0, 0, handle_destroy},
	{WARREN__V1__REQUEST__BODY_EXEC, 0, 0, handle_exec},
	{WARREN__V1__REQUEST__BODY_CHECKPOINT_SANDBOX, 1, 0, handle_checkpoint},
	{WARREN__V1__REQUEST__BODY_RESTORE_SANDBOX, 2, 0, handle_restore},
	{WARREN__V1__REQUEST__BODY_CHECK_ROOTFS, 0, 0, handle_check_rootfs},
	{WARREN__V1__REQUEST__BODY_OPEN_LOGS, 0, 0, handle_open_logs},
	{WARREN__V1__REQUEST__BODY_SET_EGRESS, 0, 0, handle_set_egress},
};

/* warren-agent beside netnsd's binary (the spawner is netnsd's fork): a root-owned regular file
 * nobody else may write, or gVisor containers run their program directly, without the envd API
 * (logged). The mount point is an empty file of the spawner's runtime directory. */
static void
agent_open(void)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return;
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = 0;
	snprintf(path, sizeof path, "%s/warren-agent", exe);
	int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022)) {
		log_warning(
			"No usable %s (a root-owned file only root may write): gVisor sandboxes "
			"run without the agent and its envd API",
			path);
		safe_close(fd);
		return;
	}
	snprintf(agent_mnt, sizeof agent_mnt, "%s/agent", cfg->runtime_dir);
	int m = open(agent_mnt, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (m < 0) {
		log_warning_errno(-errno, "Agent mount point %s: %m", agent_mnt);
		safe_close(fd);
		return;
	}
	close(m);
	agent_fd = fd;
}

int
spawner_start(const struct spawner_config *config, pid_t *pid_out)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(sp[1]);
		*pid_out = pid;
		fcntl(sp[0], F_SETFL, O_NONBLOCK);
		return sp[0];
	}
	close(sp[0]);
	/* nothing inherited from netnsd but the link and the runtime directory's lock: not its
	 * listening socket (socket activation's fd 3), not what its launcher left open, so no
	 * runsc or VMM started from here can hold them (the lock is close-on-exec) */
	unsigned keep[2] = {(unsigned)sp[1],
			    config->lock_fd >= 0 ? (unsigned)config->lock_fd : (unsigned)sp[1]};
	if (keep[0] > keep[1]) {
		unsigned t = keep[0];
		keep[0] = keep[1];
		keep[1] = t;
	}
	if (keep[0] > 3)
		close_range(3, keep[0] - 1, 0);
	if (keep[1] > keep[0] + 1)
		close_range(keep[0] + 1, keep[1] - 1, 0);
	close_range(keep[1] + 1, ~0U, 0);
	cfg = config;
	log_set_ident("warren-netnsd[spawner]");
	prctl(PR_SET_NAME, "netnsd-spawner");
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* If netnsd is killed, the link closes and on_netnsd_gone cleans up. */
	if (getppid() != parent)
		_exit(1);
	snprintf(runsc_root, sizeof runsc_root, "--root=%s/runsc", cfg->runtime_dir);
	clean_slate();
	snprintf(rootfs_mnt, sizeof rootfs_mnt, "%s/rootfs", cfg->runtime_dir);
	mkdir_p(rootfs_mnt, 0700);
	if (cfg->gvisor_agent)
		agent_open();
	templates_fd = rootfs_open_templates(cfg->templates_dir);
	if (templates_fd < 0)
		log_error_errno(templates_fd,
				"Templates dir %s (root's, writable by root only?): %m; "
				"gVisor sandboxes are refused",
				cfg->templates_dir);
	if (spawner_lockdown_apply() < 0)
		_exit(1); /* netnsd sees the link close and exits: never run with more */
	base = event_base_new();
	struct ipc_server_config sc = {.name = "netnsd-spawner",
				       .table = spawner_table,
				       .n_table = ELEMENTSOF(spawner_table),
				       .drop_on_violation = true,
				       .on_peer_gone = on_netnsd_gone};
	server = ipc_server_new(base, -1, &sc);
	ipc_server_set_ready(server, true);
	fcntl(sp[1], F_SETFL, O_NONBLOCK);
	ipc_server_adopt(server, sp[1]);
	struct event *chld = evsignal_new(base, SIGCHLD, on_sigchld, NULL);
	event_add(chld, NULL);
	adopt_all();
	signal(SIGTERM, SIG_IGN); /* stops when netnsd does, after cleaning up */
	signal(SIGINT, SIG_IGN);
	event_base_dispatch(base);
	_exit(0);
}
