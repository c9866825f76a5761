/* The qemu VMM driver: `qemu-system-x86_64 -M microvm` driven over QMP (never HMP: its
 * migrate waits about a second). Measured on QEMU 7.2 under TCG (no KVM on the CI hosts):
 * PIT/PIC/RTC stay on and the guest gets tsc_early_khz= (the core's command line), or TSC
 * calibration fails now and then and the guest hangs; snapshots keep the RAM out of the
 * migration stream (x-ignore-shared) because the RAM is a file; 7.2 has no file: migration
 * URI, so the state goes through an fd (getfd over the QMP socket, or inherited on restore).
 * QEMU's answers are parsed as JSON (jansson), never searched for words: QEMU runs the guest,
 * and an event or an error text that merely contains "return" or "completed" is not one. */
#include "vmm.h"
#include "agent-protocol.h"
#include "clock.h"
#include "ipc.h"
#include "log.h"
#include "macro.h"

#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define QMP_TIMEOUT_MS 10000

static int
qemu_argv(const struct vmm_launch *l, char ***out)
{
	char **a = calloc(64, sizeof *a);
	if (!a)
		return -ENOMEM;
	size_t n = 0;
#define ARG(...)                                                                                   \
	do {                                                                                       \
		if (asprintf(&a[n++], __VA_ARGS__) < 0)                                            \
			return -ENOMEM;                                                            \
	} while (0)
	ARG("%s", l->binary);
	ARG("-M");
	ARG("microvm,x-option-roms=off,pit=on,pic=on,rtc=on,memory-backend=ram");
	ARG("-accel");
	ARG("tcg,thread=single"); /* KVM here is nested PVM: guest kernel mode is emulated */
	ARG("-cpu");
	ARG("max");
	ARG("-smp");
	ARG("1"); /* with thread=single every vCPU shares one host thread: a second adds no speed */
	ARG("-m");
	ARG("%llum", (unsigned long long)(l->ram_bytes >> 20));
	ARG("-object");
	ARG("memory-backend-file,id=ram,size=%llum,mem-path=%s,share=%s",
	    (unsigned long long)(l->ram_bytes >> 20), l->ram_path, l->ram_private ? "off" : "on");
	ARG("-nodefaults");
	ARG("-no-user-config");
	ARG("-nographic");
	ARG("-no-reboot"); /* the agent powers off when the program exits: the VMM exits too */
	ARG("-kernel");
	ARG("%s", l->kernel);
	ARG("-initrd");
	ARG("%s", l->initrd);
	ARG("-append");
	ARG("%s", l->cmdline);
	/* The slot's address:port reaches the guest: QEMU's user network forwards it to the
	 * fixed inner address. QEMU runs inside the slot's namespace, so this listens there. */
	if (l->root_disk) {
		ARG("-drive");
		ARG("file=%s,format=raw,if=none,id=root,readonly=on", l->root_disk);
		ARG("-device");
		ARG("virtio-blk-device,drive=root");
	}
	ARG("-netdev");
	if (l->tap) /* the slot's tap (made by the core, owned by the VM user; DNAT to the guest) */
		ARG("tap,id=n0,ifname=%s,script=no,downscript=no", VMM_TAP_NAME);
	else
		/* the template's port, and the agent's envd API (common/agent-protocol.h) */
		ARG("user,id=n0,net=10.0.2.0/24,host=" AGENT_PROTO_HOST_ADDR
		    ",restrict=off,hostfwd=tcp::%u-" AGENT_PROTO_GUEST_ADDR ":%u%s",
		    l->port, l->port,
		    l->port == AGENT_PROTO_ENVD_PORT ? ""
						     : ",hostfwd=tcp::" AGENT_PROTO_ENVD_PORT_S
						       "-" AGENT_PROTO_GUEST_ADDR
						       ":" AGENT_PROTO_ENVD_PORT_S);
	ARG("-device");
	ARG("virtio-net-device,netdev=n0");
	ARG("-device");
	ARG("virtio-serial-device");
	ARG("-chardev");
	ARG("socket,id=agent,path=%s/agent.sock,server=on,wait=off", l->vmm_dir);
	ARG("-device");
	ARG("virtserialport,chardev=agent,name=" AGENT_PROTO_PORT_NAME);
	ARG("-qmp");
	ARG("unix:%s/vmm.sock,server=on,wait=off", l->vmm_dir);
	ARG("-serial");
	if (l->console)
		ARG("file:%s", l->console);
	else
		ARG("none");
	/* QEMU's own seccomp filter; not elevateprivileges=deny, which would also refuse the
	 * setuid of -runas (the filter is loaded first). Once it runs as its user it has no
	 * capabilities and no_new_privs. */
	ARG("-sandbox");
	ARG("on,obsolete=deny,spawn=deny,resourcecontrol=deny");
	if (l->user) {
		ARG("-runas");
		ARG("%s", l->user);
	}
	if (l->incoming_fd >= 0) {
		ARG("-incoming");
		ARG("defer");
	}
#undef ARG
	a[n] = NULL;
	*out = a;
	return 0;
}

/* ---- QMP, blocking ---- */

struct qmp {
	int fd;
	char buf[16384];
	size_t have;
};

/* Next line from QEMU (NUL-terminated in q->buf, consumed by the next call), by deadline
 * (CLOCK_MONOTONIC usec): one deadline per command, so a QEMU that sends events without end
 * cannot keep a command waiting past it. */
static int
qmp_line(struct qmp *q, char **line, size_t *consumed, uint64_t deadline)
{
	if (*consumed) {
		memmove(q->buf, q->buf + *consumed, q->have - *consumed);
		q->have -= *consumed;
		*consumed = 0;
	}
	for (;;) {
		char *nl = memchr(q->buf, '\n', q->have);
		if (nl) {
			*nl = 0;
			*line = q->buf;
			*consumed = (size_t)(nl - q->buf) + 1;
			return 0;
		}
		if (q->have >= sizeof q->buf - 1)
			return -EMSGSIZE;
		uint64_t now = now_usec();
		long left = now < deadline ? (long)((deadline - now) / 1000) : 0;
		struct pollfd p = {q->fd, POLLIN, 0};
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		ssize_t k = read(q->fd, q->buf + q->have, sizeof q->buf - 1 - q->have);
		if (k <= 0)
			return k < 0 ? -errno : -ECONNRESET;
		q->have += (size_t)k;
	}
}

/* A line from QEMU as a JSON object (the caller's to json_decref), or NULL when it is not one. */
static json_t *
qmp_parse(const char *line)
{
	json_error_t e;
	json_t *j = json_loads(line, JSON_REJECT_DUPLICATES, &e);
	if (j && json_is_object(j))
		return j;
	log_error("QMP: not a JSON object from QEMU (%s): %.200s", j ? "not an object" : e.text,
		  line);
	json_decref(j);
	return NULL;
}

/* Send one command (passing fd with it when >= 0); wait for its return or error (events in
 * between are skipped). With result, the return's value is handed over (json_decref). */
static int
qmp_cmd(struct qmp *q, const char *json, int fd, json_t **result)
{
	struct iovec iov = {(void *)json, strlen(json)};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof u.buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (sendmsg(q->fd, &mh, MSG_NOSIGNAL) < 0)
		return -errno;
	size_t consumed = 0;
	uint64_t deadline = now_usec() + QMP_TIMEOUT_MS * 1000ull;
	for (;;) {
		char *line;
		int r = qmp_line(q, &line, &consumed, deadline);
		if (r < 0)
			return r;
		json_t *j = qmp_parse(line);
		if (!j)
			return -EPROTO;
		json_t *error = json_object_get(j, "error"), *ret = json_object_get(j, "return");
		if (!error && !ret) {
			json_decref(j); /* an event */
			continue;
		}
		if (error) {
			const char *desc = json_string_value(json_object_get(error, "desc"));
			log_error("QMP %.*s: %.300s", (int)strcspn(json, "\n"), json,
				  desc ? desc : "an error without a description");
			r = -EIO;
		} else if (result)
			*result = json_incref(ret);
		json_decref(j);
		memmove(q->buf, q->buf + consumed, q->have - consumed);
		q->have -= consumed;
		return r;
	}
}

static int
qmp_open(const char *vmm_dir, struct qmp *q)
{
	char path[400];
	snprintf(path, sizeof path, "%s/vmm.sock", vmm_dir);
	q->have = 0;
	/* QEMU creates the socket while it starts: wait for it, briefly */
	q->fd = unix_connect(path, SOCK_STREAM, QMP_TIMEOUT_MS);
	if (q->fd < 0)
		return q->fd;
	char *greeting;
	size_t consumed = 0;
	int r = qmp_line(q, &greeting, &consumed, now_usec() + QMP_TIMEOUT_MS * 1000ull);
	if (r == 0) {
		json_t *g = qmp_parse(greeting);
		if (!g || !json_is_object(json_object_get(g, "QMP")))
			r = -EPROTO; /* not QEMU's greeting */
		json_decref(g);
	}
	if (r == 0) {
		memmove(q->buf, q->buf + consumed, q->have - consumed);
		q->have -= consumed;
		r = qmp_cmd(q, "{\"execute\":\"qmp_capabilities\"}\n", -1, NULL);
	}
	if (r < 0)
		close(q->fd);
	return r;
}

static int
qmp_simple(const char *vmm_dir, const char *json, int fd)
{
	struct qmp q;
	int r = qmp_open(vmm_dir, &q);
	if (r < 0)
		return r;
	r = qmp_cmd(&q, json, fd, NULL);
	close(q.fd);
	return r;
}

static const char ignore_shared[] =
	"{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":"
	"[{\"capability\":\"x-ignore-shared\",\"state\":true}]}}\n";

/* Poll query-migrate until its status is completed, failed or cancelled. */
static int
migrate_wait(struct qmp *q)
{
	uint64_t t0 = now_usec();
	for (;;) {
		json_t *res = NULL;
		int r = qmp_cmd(q, "{\"execute\":\"query-migrate\"}\n", -1, &res);
		if (r < 0)
			return r;
		const char *status = json_string_value(json_object_get(res, "status"));
		bool completed = status && !strcmp(status, "completed");
		bool ended = status && (!strcmp(status, "failed") || !strcmp(status, "cancelled"));
		if (ended) {
			const char *why = json_string_value(json_object_get(res, "error-desc"));
			log_error("QMP migration %s: %.300s", status,
				  why ? why : "no reason given");
		}
		json_decref(res);
		if (completed)
			return 0;
		if (ended)
			return -EIO;
		if (now_usec() - t0 > 60000000)
			return -ETIMEDOUT;
		usleep(1000);
	}
}

static int
qemu_restore(const struct vmm_restore *rs)
{
	struct qmp q;
	int r = qmp_open(rs->vmm_dir, &q);
	if (r < 0)
		return r;
	char cmd[200];
	/* The state fd is inherited by QEMU at the same number (fd: takes a number); the RAM
	 * file is on its command line. */
	snprintf(cmd, sizeof cmd,
		 "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"fd:%d\"}}\n",
		 rs->state_fd);
	if ((r = qmp_cmd(&q, ignore_shared, -1, NULL)) == 0 &&
	    (r = qmp_cmd(&q, cmd, -1, NULL)) == 0 && (r = migrate_wait(&q)) == 0)
		r = qmp_cmd(&q, "{\"execute\":\"cont\"}\n", -1, NULL);
	close(q.fd);
	return r;
}

static int
qemu_pause(const char *vmm_dir)
{
	return qmp_simple(vmm_dir, "{\"execute\":\"stop\"}\n", -1);
}

static int
qemu_resume(const char *vmm_dir)
{
	return qmp_simple(vmm_dir, "{\"execute\":\"cont\"}\n", -1);
}

/* The RAM is a file the core copies: only the device state goes through the migration. */
static int
qemu_save(const char *vmm_dir, int fd, const char *mem_path, bool diff)
{
	(void)mem_path;
	(void)diff;
	struct qmp q;
	int r = qmp_open(vmm_dir, &q);
	if (r < 0)
		return r;
	if ((r = qmp_cmd(&q, ignore_shared, -1, NULL)) == 0 &&
	    (r = qmp_cmd(&q,
			 "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"warren-state\"}}\n",
			 fd, NULL)) == 0 &&
	    (r = qmp_cmd(&q,
			 "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"fd:warren-state\"}}\n",
			 -1, NULL)) == 0)
		r = migrate_wait(&q);
	close(q.fd);
	return r;
}

const struct vmm_driver vmm_qemu = {
	.name = "qemu",
	.needs_tap = false,
	.agent_vsock = false,
	.own_ram = false,
	.drops_itself = true,
	.serial_stdout = false,
	.boot_args = "",
	.argv = qemu_argv,
	.restore = qemu_restore,
	.pause = qemu_pause,
	.save = qemu_save,
	.resume = qemu_resume,
};
