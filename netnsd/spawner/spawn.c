/* The spawner (see spawn.h). Every runsc command runs in the sandbox's slot namespace: runsc's
 * control socket is abstract, so exec/delete from another namespace would not find it. `run`
 * also gets a private mount namespace with a tmpfs over /proc/sys/net, because this runsc
 * takes /proc/sys/net/core/rmem_default as proof of the root namespace and refuses to start. */
#include "spawn.h"
#include "cgroup.h"
#include "microvm.h"
#include "fileio.h"
#include "ipc-server.h"
#include "log.h"
#include "macro.h"
#include "names.h"
#include "oci-spec.h"
#include "rootfs.h"
#include "spawner-sandbox.h"

#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

struct sb {
	char id[SANDBOX_ID_LEN + 1];
	int nsfd;
	int rootfs_fd; /* gVisor: the checked template rootfs, mounted for runsc (rootfs.h) */
	pid_t pid;
	char bundle[300];
	char cgroup[300];
	bool checkpointing; /* its exit is the checkpoint's doing, not news */
	bool vm;            /* microVM backend: pid is the VMM's */
	uint64_t memory_limit;
	struct sb *next;
};

enum cmd_kind { CMD_RUN, CMD_DELETE, CMD_EXEC, CMD_CHECKPOINT, CMD_VM_RESTORE };

struct cmd {
	pid_t pid;
	enum cmd_kind kind;
	struct sb *sb;
	struct ipc_call *call;
	int out_fd, err_fd;
	int image_fd; /* checkpoint/restore: the image directory, kept open until runsc is done */
	struct event *timer;
	char *error; /* a failed run being cleaned up: the error to answer with */
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
	rm_rf(sb->bundle);
	if (sb->vm) {
		char ram[400];
		microvm_ram_path(cfg->vm, sb->id, ram, sizeof ram);
		unlink(ram);
	}
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
	if (setns(sb->nsfd, CLONE_NEWNET) < 0 || (for_run && tree < 0))
		_exit(120);
	if (for_run && (unshare(CLONE_NEWNS) < 0 ||
			mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
			mount("tmpfs", "/proc/sys/net", "tmpfs", MS_NOSUID | MS_NODEV, NULL) < 0))
		_exit(121);
	if (for_run && rootfs_attach(tree, rootfs_mnt) < 0)
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

static int
cmd_start(enum cmd_kind kind, struct sb *sb, struct ipc_call *call, char **argv, int out_fd,
	  int err_fd)
{
	pid_t pid = argv ? run_in_slot(sb, argv, out_fd, err_fd, kind == CMD_RUN) : 0;
	if (pid < 0)
		return (int)pid;
	struct cmd *c = calloc(1, sizeof *c);
	c->pid = pid;
	c->kind = kind;
	c->sb = sb;
	c->call = call;
	c->out_fd = out_fd;
	c->err_fd = err_fd;
	c->image_fd = -1;
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
	safe_close(c->image_fd);
	ipc_call_free(c->call);
	free(c->error);
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

static void
cmd_done(struct cmd *c, int status)
{
	struct sb *sb = c->sb;
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	switch (c->kind) {
	case CMD_RUN: {
		char path[400], pidbuf[32];
		snprintf(path, sizeof path, "%s/pid", sb->bundle);
		if (ok && file_read_line(path, pidbuf, sizeof pidbuf) == 0 && atoi(pidbuf) > 0) {
			sb->pid = atoi(pidbuf);
			Warren__V1__SpawnSandboxResponse sr = WARREN__V1__SPAWN_SANDBOX_RESPONSE__INIT;
			sr.pid = sb->pid;
			resp.body_case = WARREN__V1__RESPONSE__BODY_SPAWN_SANDBOX;
			resp.spawn_sandbox = &sr;
			if (c->image_fd >= 0) {
				resp.body_case = WARREN__V1__RESPONSE__BODY_RESTORE_SANDBOX;
				resp.restore_sandbox = &sr;
			}
			ipc_call_reply(c->call, &resp, NULL, 0);
			break;
		}
		char tail[400], *msg = NULL;
		log_tail(sb, tail, sizeof tail);
		if (asprintf(&msg, "runsc %s failed (status 0x%x): %s",
			     c->image_fd >= 0 ? "restore" : "run", status, tail) < 0)
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
			Warren__V1__SpawnSandboxResponse sr = WARREN__V1__SPAWN_SANDBOX_RESPONSE__INIT;
			sr.pid = sb->pid;
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
	case CMD_EXEC: {
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
	cmd_free(c);
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
			/* The sandbox went away by itself: tell netnsd, which tells the supervisor. */
			sb->pid = 0;
			if (sb->checkpointing)
				continue;
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
	char initrd[PATH_MAX];
	snprintf(initrd, sizeof initrd, "%s", q->rootfs);
	char *slash = strrchr(initrd, '/');
	if (!slash) {
		sb_forget(sb);
		return -EINVAL;
	}
	snprintf(slash, sizeof initrd - (size_t)(slash - initrd), "/vm-initramfs.cpio");
	/* a template too big for an initramfs has a read-only root disk next to it */
	char disk[PATH_MAX];
	snprintf(disk, sizeof disk, "%.*s/vm-rootfs.ext4", (int)(slash - initrd), initrd);
	bool has_disk = access(disk, R_OK) == 0;
	int r = mkdir_p(sb->bundle, 0700);
	if (r < 0) {
		sb_forget(sb);
		return r;
	}
	struct microvm_start ms = {.id = sb->id,
				   .bundle = sb->bundle,
				   .cgroup = sb->cgroup,
				   .initrd = initrd,
				   .root_disk = has_disk ? disk : NULL,
				   .argv = q->argv,
				   .argc = q->n_argv,
				   .env = q->env,
				   .envc = q->n_env,
				   .port = q->port,
				   .memory_limit = q->memory_limit,
				   .nsfd = sb->nsfd,
				   .image_fd = image_fd};
	int incoming[2]; /* fd numbers in the VMM, for the forked finishing step */
	pid_t pid = microvm_launch(cfg->vm, &ms, incoming);
	if (pid < 0) {
		sb_forget(sb);
		return (int)pid;
	}
	sb->pid = pid;
	if (image_fd < 0) {
		Warren__V1__SpawnSandboxResponse sr = WARREN__V1__SPAWN_SANDBOX_RESPONSE__INIT;
		sr.pid = pid;
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
	cmds->image_fd = image_fd; /* QEMU maps the RAM file through it: kept until it runs */
	return IPC_DEFER;
}

static int
start_sandbox(struct ipc_call *call, const Warren__V1__SpawnSandboxRequest *q, int image_fd)
{
	if (!sandbox_id_valid(q->id) || sb_find(q->id) || q->n_argv == 0)
		return -EINVAL;
	struct sb *sb = calloc(1, sizeof *sb);
	snprintf(sb->id, sizeof sb->id, "%s", q->id);
	sb->nsfd = TAKE_FD(call->fds[0]);
	sb->rootfs_fd = -1;
	snprintf(sb->bundle, sizeof sb->bundle, "%s/bundles/%s", cfg->runtime_dir, q->id);
	snprintf(sb->cgroup, sizeof sb->cgroup, "%s/%s", cfg->cgroup_parent, q->id);
	sb->next = sandboxes;
	sandboxes = sb;
	if (!strcmp(q->backend, "microvm"))
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
	char netns[64];
	snprintf(netns, sizeof netns, "/proc/%d/fd/%d", (int)getpid(), sb->nsfd);
	struct oci_spec spec = {.id = q->id,
				.rootfs = rootfs_mnt,
				.argv = q->argv,
				.argc = q->n_argv,
				.env = q->env,
				.envc = q->n_env,
				.memory_limit = q->memory_limit,
				.netns_path = netns,
				.cgroups_path = sb->cgroup};
	int r = mkdir_p(sb->bundle, 0700);
	if (r == 0)
		r = oci_spec_write(sb->bundle, &spec);
	if (r < 0) {
		sb_forget(sb);
		return r;
	}
	char log[400], pidfile[400];
	snprintf(log, sizeof log, "%s/runsc.log", sb->bundle);
	snprintf(pidfile, sizeof pidfile, "%s/pid", sb->bundle);
	int logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	/* run --detach hands its stdout/stderr to the sandbox: a file, never a pipe we wait on. */
	char image[80];
	snprintf(image, sizeof image, "--image-path=/proc/%d/fd/%d", (int)getpid(), image_fd);
	char *run[] = {(char *)cfg->runsc, runsc_root, "--platform=ptrace", "--network=sandbox",
		       "--overlay2=root:memory", "run", "--bundle", sb->bundle, "--detach",
		       "--pid-file", pidfile, sb->id, NULL};
	/* one image restores into many containers; the restore lands on this slot's address */
	char *restore[] = {(char *)cfg->runsc, runsc_root, "--platform=ptrace", "--network=sandbox",
			   "--overlay2=root:memory", "restore", image, "--bundle", sb->bundle,
			   "--detach", "--pid-file", pidfile, sb->id, NULL};
	struct ipc_call *deferred = ipc_call_defer(call);
	r = cmd_start(CMD_RUN, sb, deferred, image_fd >= 0 ? restore : run, logfd, dup(logfd));
	if (r < 0) {
		safe_close(logfd);
		ipc_call_free(deferred);
		sb_forget(sb);
		return r;
	}
	cmds->image_fd = image_fd;
	return IPC_DEFER;
}

static int
handle_spawn(struct ipc_call *call, void *ud)
{
	return start_sandbox(call, call->req->spawn_sandbox, -1);
}

static int
handle_restore(struct ipc_call *call, void *ud)
{
	const Warren__V1__RestoreSandboxRequest *q = call->req->restore_sandbox;
	if (!q->spawn)
		return -EINVAL;
	int image_fd = TAKE_FD(call->fds[1]);
	int r = start_sandbox(call, q->spawn, image_fd);
	if (r < 0)
		safe_close(image_fd);
	return r;
}

static int
vm_snapshot(struct sb *sb, void *arg, int out_fd, int err_fd)
{
	return microvm_snapshot(cfg->vm, sb->bundle, sb->id, sb->pid, sb->memory_limit,
				*(int *)arg) < 0
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
		if (c->sb == sb && c->kind != CMD_EXEC)
			return -EBUSY;
	if (sb->vm) {
		struct ipc_call *d = ipc_call_defer(call);
		int r = cmd_start_fn(CMD_CHECKPOINT, sb, d, vm_snapshot, &d->fds[0], -1, -1);
		if (r < 0) {
			ipc_call_free(d);
			return r;
		}
		cmds->image_fd = TAKE_FD(d->fds[0]);
		return IPC_DEFER;
	}
	char image[80], log[400];
	snprintf(image, sizeof image, "--image-path=/proc/%d/fd/%d", (int)getpid(), call->fds[0]);
	snprintf(log, sizeof log, "%s/runsc.log", sb->bundle);
	int logfd = open(log, O_WRONLY | O_APPEND | O_CLOEXEC);
	char *argv[] = {(char *)cfg->runsc, runsc_root, "checkpoint", image, sb->id, NULL};
	struct ipc_call *d = ipc_call_defer(call);
	sb->checkpointing = true;
	int r = cmd_start(CMD_CHECKPOINT, sb, d, argv, logfd, logfd >= 0 ? dup(logfd) : -1);
	if (r < 0) {
		sb->checkpointing = false;
		safe_close(logfd);
		ipc_call_free(d);
		return r;
	}
	cmds->image_fd = TAKE_FD(d->fds[0]);
	return IPC_DEFER;
}

static int
handle_destroy(struct ipc_call *call, void *ud)
{
	struct sb *sb = sb_find(call->req->destroy_sandbox->id);
	if (!sb)
		return -ENOENT;
	for (struct cmd *c = cmds; c; c = c->next)
		if (c->sb == sb && c->kind != CMD_EXEC)
			return -EBUSY;
	if (sb->vm) {
		vm_kill(sb);
		sb_forget(sb);
		IpcResponse resp = WARREN__V1__RESPONSE__INIT;
		return ipc_call_reply(call, &resp, NULL, 0);
	}
	struct ipc_call *d = ipc_call_defer(call);
	int r = start_delete(sb, d, NULL);
	if (r < 0) {
		ipc_call_free(d);
		return r;
	}
	return IPC_DEFER;
}

static void
exec_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct cmd *c = arg;
	kill(c->pid, SIGKILL);
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
		int r = spawner_sandbox_drop_step(cfg->vm->vm_user);
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

static void exec_timeout(evutil_socket_t fd, short what, void *arg);

/* Exec in a microVM goes through its agent; the request stays alive in the forked child. */
static int
vm_exec_start(struct ipc_call *call, struct sb *sb, const Warren__V1__ExecRequest *q)
{
	int out = memfd_create("exec-stdout", MFD_CLOEXEC), err = memfd_create("exec-stderr", MFD_CLOEXEC);
	struct ipc_call *d = ipc_call_defer(call);
	int r = cmd_start_fn(CMD_EXEC, sb, d, vm_exec, (void *)q, out, err);
	if (r < 0) {
		safe_close(out);
		safe_close(err);
		ipc_call_free(d);
		return r;
	}
	unsigned ms = (q->timeout_ms ? q->timeout_ms : 30000) + 15000; /* the agent's own limit first */
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
	char **argv = calloc(q->n_argv + 6, sizeof *argv);
	size_t n = 0;
	argv[n++] = (char *)cfg->runsc;
	argv[n++] = runsc_root;
	argv[n++] = "exec";
	argv[n++] = sb->id;
	for (size_t i = 0; i < q->n_argv; i++)
		argv[n++] = q->argv[i];
	int out = memfd_create("exec-stdout", MFD_CLOEXEC), err = memfd_create("exec-stderr", MFD_CLOEXEC);
	struct ipc_call *d = ipc_call_defer(call);
	int r = cmd_start(CMD_EXEC, sb, d, argv, out, err);
	free(argv);
	if (r < 0) {
		safe_close(out);
		safe_close(err);
		ipc_call_free(d);
		return r;
	}
	unsigned ms = q->timeout_ms ? q->timeout_ms : 30000;
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	cmds->timer = evtimer_new(base, exec_timeout, cmds);
	evtimer_add(cmds->timer, &tv);
	return IPC_DEFER;
}

/* Nothing of an earlier netnsd's sandboxes may survive: their namespaces are gone with it. */
static void
clean_slate(void)
{
	cgroup_clear_children(cfg->cgroup_parent);
	char path[400];
	rm_rf(runsc_root + strlen("--root="));
	snprintf(path, sizeof path, "%s/bundles", cfg->runtime_dir);
	rm_rf(path);
	mkdir_p(runsc_root + strlen("--root="), 0700);
	if (cfg->vm && cfg->vm->ram_dir)
		rm_rf(cfg->vm->ram_dir);
}

static void
on_netnsd_gone(void *ud)
{
	log_info("netnsd is gone: removing every sandbox");
	for (struct sb *sb = sandboxes; sb; sb = sb->next)
		cgroup_kill_all(sb->cgroup);
	while (sandboxes)
		sb_forget(sandboxes);
	clean_slate();
	isolation_remove(cfg->isolation);
	exit(0);
}

static const struct ipc_handler spawner_table[] = {
	{WARREN__V1__REQUEST__BODY_SPAWN_SANDBOX, 1, 0, handle_spawn},
	{WARREN__V1__REQUEST__BODY_DESTROY_SANDBOX, 0, 0, handle_destroy},
	{WARREN__V1__REQUEST__BODY_EXEC, 0, 0, handle_exec},
	{WARREN__V1__REQUEST__BODY_CHECKPOINT_SANDBOX, 1, 0, handle_checkpoint},
	{WARREN__V1__REQUEST__BODY_RESTORE_SANDBOX, 2, 0, handle_restore},
};

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
	/* nothing inherited from netnsd but the link: not its listening socket (socket
	 * activation's fd 3), not what its launcher left open, so no runsc or VMM started from
	 * here can hold them */
	if (sp[1] > 3)
		close_range(3, (unsigned)sp[1] - 1, 0);
	close_range((unsigned)sp[1] + 1, ~0U, 0);
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
	templates_fd = rootfs_open_templates(cfg->templates_dir);
	if (templates_fd < 0)
		log_error_errno(templates_fd, "Templates dir %s (root's, writable by root only?): %m; "
				"gVisor sandboxes are refused", cfg->templates_dir);
	if (spawner_sandbox_apply() < 0)
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
	signal(SIGTERM, SIG_IGN); /* stops when netnsd does, after cleaning up */
	signal(SIGINT, SIG_IGN);
	event_base_dispatch(base);
	_exit(0);
}
