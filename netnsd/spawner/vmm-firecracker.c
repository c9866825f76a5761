/* The firecracker VMM driver: Firecracker's REST API (HTTP/1.1 + JSON over its Unix socket,
 * src/firecracker/swagger/firecracker.yaml upstream), for KVM hosts. A cold boot needs no
 * request at all: the whole VM goes into --config-file. A restore is a fresh process that gets
 * one PUT /snapshot/load. Differences from QEMU the core must know (flags below): no user-mode
 * network (a tap in the slot), no virtio-serial (the agent listens on vsock; the host side is a
 * Unix socket that takes "CONNECT <port>\n"), a cold VM's RAM is Firecracker's own memory (so
 * Firecracker writes guest memory into snapshots itself), and it never drops privileges (the
 * launcher starts it as the VM user, which must be able to open what it is given).
 * Firecracker takes paths, not fds: a restore's image files are inherited fds named
 * /proc/self/fd/N, which Firecracker opens as its own user; what it writes (a snapshot's state
 * and memory) goes into its own directory and is read back without following symlinks. */
#include "vmm.h"
#include "clock.h"
#include "ipc.h"
#include "log.h"
#include "macro.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define FC_TIMEOUT_MS 10000

/* A JSON string literal for s (quotes, backslashes and control characters escaped). */
static char *
json_str(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(n * 6 + 3), *p = out;
	if (!out)
		return NULL;
	*p++ = '"';
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\') {
			*p++ = '\\';
			*p++ = (char)*c;
		} else if (*c < 0x20)
			p += sprintf(p, "\\u%04x", *c);
		else
			*p++ = (char)*c;
	}
	*p++ = '"';
	*p = 0;
	return out;
}

/* The whole VM for --config-file (FullVmConfiguration). Cold boots only: the guest's RAM is
 * Firecracker's own, a snapshot of it is a Full one. */
static int
write_config(const struct vmm_launch *l, const char *path)
{
	_cleanup_free_ char *kernel = json_str(l->kernel), *initrd = json_str(l->initrd),
			    *args = json_str(l->cmdline),
			    *disk = l->root_disk ? json_str(l->root_disk) : NULL;
	char uds[400];
	snprintf(uds, sizeof uds, "%s/agent.sock", l->vmm_dir);
	_cleanup_free_ char *vsock = json_str(uds);
	if (!kernel || !initrd || !args || !vsock || (l->root_disk && !disk))
		return -ENOMEM;
	/* vmm_dir is the VM user's: the file is made here, never opened through a name another
	 * process of that user could have placed (a symlink would have root write elsewhere) */
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "we");
	if (!f) {
		int r = -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	fprintf(f,
		"{\n"
		" \"boot-source\": {\"kernel_image_path\": %s, \"initrd_path\": %s,"
		" \"boot_args\": %s},\n"
		" \"machine-config\": {\"vcpu_count\": 1, \"mem_size_mib\": %llu, \"smt\": "
		"false},\n"
		" \"network-interfaces\": [{\"iface_id\": \"eth0\", \"host_dev_name\": \"%s\","
		" \"guest_mac\": \"06:00:0a:00:02:0f\"}],\n"
		" \"vsock\": {\"guest_cid\": 3, \"uds_path\": %s},\n"
		" \"drives\": [",
		kernel, initrd, args, (unsigned long long)(l->ram_bytes >> 20), VMM_TAP_NAME,
		vsock);
	/* the agent mounts the disk itself (under its tmpfs overlay): not Firecracker's root */
	if (disk)
		fprintf(f,
			"{\"drive_id\": \"root\", \"path_on_host\": %s, \"is_root_device\": false,"
			" \"is_read_only\": true}",
			disk);
	fprintf(f, "]\n}\n");
	return fclose(f) == 0 ? 0 : -errno;
}

static int
fc_argv(const struct vmm_launch *l, char ***out)
{
	char config[400];
	snprintf(config, sizeof config, "%s/config.json", l->vmm_dir);
	/* a restore starts a bare process: /snapshot/load is only accepted before any config */
	if (l->incoming_fd < 0) {
		int r = write_config(l, config);
		if (r < 0)
			return r;
	}
	char **a = calloc(8, sizeof *a);
	size_t n = 0;
	if (!a)
		return -ENOMEM;
	a[n++] = strdup(l->binary);
	a[n++] = strdup("--api-sock");
	if (asprintf(&a[n++], "%s/vmm.sock", l->vmm_dir) < 0)
		return -ENOMEM;
	if (l->incoming_fd < 0) {
		a[n++] = strdup("--config-file");
		a[n++] = strdup(config);
	}
	/* its logger writes to stdout unless told otherwise: stdout is the guest's serial port */
	if (l->own_log) {
		a[n++] = strdup("--log-path");
		a[n++] = strdup(l->own_log);
	}
	a[n] = NULL;
	*out = a;
	return 0;
}

/* ---- the API: one request per connection, blocking ---- */

/* The fault_message of an Error body, for the log. */
static void
fault_message(const char *body, char *out, size_t size)
{
	const char *m = strstr(body, "\"fault_message\"");
	const char *q = m ? strchr(m + 15, '"') : NULL;
	if (!q) {
		snprintf(out, size, "%.200s", body);
		return;
	}
	size_t n = 0;
	for (const char *c = q + 1; *c && *c != '"' && n + 1 < size; c++) {
		if (*c == '\\' && c[1])
			c++;
		out[n++] = *c;
	}
	out[n] = 0;
}

/* Send method path body; 0 on a 2xx answer, -EIO (the fault message logged) otherwise. */
static int
fc_request(const char *vmm_dir, const char *method, const char *path, const char *body)
{
	char sock[400];
	snprintf(sock, sizeof sock, "%s/vmm.sock", vmm_dir);
	/* Firecracker binds its socket as it starts: wait for it, briefly */
	int fd = unix_connect(sock, SOCK_STREAM, FC_TIMEOUT_MS);
	if (fd < 0)
		return fd;
	size_t blen = body ? strlen(body) : 0;
	char *req = NULL;
	int len = asprintf(&req,
			   "%s %s HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
			   "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
			   method, path, blen, body ? body : "");
	if (len < 0) {
		close(fd);
		return -ENOMEM;
	}
	int r = 0;
	for (ssize_t off = 0; off < len && r == 0;) {
		ssize_t k = send(fd, req + off, (size_t)(len - off), MSG_NOSIGNAL);
		if (k < 0 && errno != EINTR)
			r = -errno;
		off += k > 0 ? k : 0;
	}
	free(req);
	/* the answer: status line, headers, Content-Length bytes of body */
	char buf[8192];
	size_t have = 0;
	long want = -1;
	uint64_t t0 = now_usec();
	while (r == 0) {
		buf[have] = 0;
		char *end = strstr(buf, "\r\n\r\n");
		if (end && want < 0) {
			const char *cl = strcasestr(buf, "\r\nContent-Length:");
			want = (long)(end + 4 - buf) + (cl && cl < end ? atol(cl + 17) : 0);
		}
		if (want >= 0 && (long)have >= want)
			break;
		if (have >= sizeof buf - 1) {
			r = -EMSGSIZE;
			break;
		}
		long left = FC_TIMEOUT_MS - (long)((now_usec() - t0) / 1000);
		struct pollfd p = {fd, POLLIN, 0};
		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		ssize_t k = read(fd, buf + have, sizeof buf - 1 - have);
		if (k <= 0)
			r = k < 0 ? -errno : -ECONNRESET;
		else
			have += (size_t)k;
	}
	close(fd);
	if (r < 0) {
		log_error("Firecracker %s %s: %s", method, path, strerror(-r));
		return r;
	}
	int status = 0;
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		return -EPROTO;
	if (status >= 200 && status < 300)
		return 0;
	char msg[300];
	char *b = strstr(buf, "\r\n\r\n");
	fault_message(b ? b + 4 : "", msg, sizeof msg);
	log_error("Firecracker %s %s: %d %s", method, path, status, msg);
	return -EIO;
}

static int
fc_restore(const struct vmm_restore *r)
{
	char body[800], uds[400];
	snprintf(uds, sizeof uds, "%s/agent.sock", r->vmm_dir);
	_cleanup_free_ char *vsock = json_str(uds);
	if (!vsock)
		return -ENOMEM;
	/* The RAM file is mapped private (clones share its page cache); dirty pages are tracked
	 * so a snapshot of this VM writes only what it changed (Diff); the vsock socket is this
	 * VM's, not the one recorded in the snapshot. */
	snprintf(body, sizeof body,
		 "{\"snapshot_path\": \"/proc/self/fd/%d\", \"mem_backend\": {\"backend_type\":"
		 " \"File\", \"backend_path\": \"/proc/self/fd/%d\"}, \"track_dirty_pages\": true,"
		 " \"resume_vm\": true, \"vsock_override\": {\"uds_path\": %s}}",
		 r->state_fd, r->ram_fd, vsock);
	return fc_request(r->vmm_dir, "PUT", "/snapshot/load", body);
}

static int
fc_pause(const char *vmm_dir)
{
	return fc_request(vmm_dir, "PATCH", "/vm", "{\"state\": \"Paused\"}");
}

static int
fc_resume(const char *vmm_dir)
{
	return fc_request(vmm_dir, "PATCH", "/vm", "{\"state\": \"Resumed\"}");
}

/* Copy a file Firecracker wrote into its directory (as the VM user) to the image: opened
 * without following a symlink, and only a plain file with one link owned by the directory's
 * owner, so the VMM cannot have root copy another file into an image. */
static int
copy_file_to_fd(const char *dir, const char *path, int to)
{
	_cleanup_close_ int from = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (from < 0)
		return -errno;
	struct stat dst, st;
	if (stat(dir, &dst) < 0 || fstat(from, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != dst.st_uid)
		return -EACCES;
	char buf[65536];
	for (;;) {
		ssize_t k = read(from, buf, sizeof buf);
		if (k == 0)
			return 0;
		if (k < 0)
			return -errno;
		for (ssize_t off = 0; off < k;) {
			ssize_t w = write(to, buf + off, (size_t)(k - off));
			if (w < 0)
				return -errno;
			off += w;
		}
	}
}

static int
fc_save(const char *vmm_dir, int state_fd, const char *mem_path, bool diff)
{
	char state[400], body[1200];
	snprintf(state, sizeof state, "%s/state", vmm_dir);
	_cleanup_free_ char *s = json_str(state), *m = json_str(mem_path);
	if (!s || !m)
		return -ENOMEM;
	snprintf(body, sizeof body,
		 "{\"snapshot_type\": \"%s\", \"snapshot_path\": %s, \"mem_file_path\": %s}",
		 diff ? "Diff" : "Full", s, m);
	int r = fc_request(vmm_dir, "PUT", "/snapshot/create", body);
	if (r == 0)
		r = copy_file_to_fd(vmm_dir, state, state_fd);
	unlink(state);
	return r;
}

const struct vmm_driver vmm_firecracker = {
	.name = "firecracker",
	.needs_tap = true,
	.agent_vsock = true,
	.own_ram = true,
	.drops_itself = false,
	.serial_stdout = true,
	/* no ACPI power-off or PCI on older Firecracker: the agent ends the VM with a reboot,
	 * which Firecracker (reboot=k: the keyboard controller) turns into its exit */
	.boot_args = "reboot=k pci=off warren.halt=reboot",
	.argv = fc_argv,
	.restore = fc_restore,
	.pause = fc_pause,
	.save = fc_save,
	.resume = fc_resume,
};
