/* libFuzzer harness: snapshotd's dispatch table and request validation (snapshotd-dispatch.c)
 * over the real image store code (image.c, image-header.c, store.c, compress.c) in a temporary
 * directory. The input is up to eight packed Request envelopes separated by "|||", sent as the
 * supervisor would over a SOCK_SEQPACKET pair; this side plays netnsd too, writing a file into
 * every image directory it is handed. The privileged actions (swap and zswap set-up, cgroup
 * reclaim) are stubbed at their boundary below. What must hold: no crash or sanitizer report,
 * and nothing appears beside the store and cache in the temporary root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fileio.h"
#include "image-layout.h"
#include "snapshotd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- the boundary: reclaim.c's privileged actions (swapon, /sys writes, cgroups) ---- */
int
reclaim_setup(struct snapshotd *s, const Warren__V1__SetupReclaimRequest *q,
	      Warren__V1__SetupReclaimResponse *out, char *err, size_t errlen)
{
	snprintf(err, errlen, "stubbed");
	return -EPERM;
}

int
reclaim_start(struct snapshotd *s, struct ipc_call *call)
{
	return ipc_call_error(call, -EPERM, "stubbed");
}

/* image_prepare's random suffix (4 bytes) is zero here, so a commit in the same input can name
 * the directory a prepare made (.tmp.<tag>.00000000) and reach the sealing path. */
ssize_t __real_getrandom(void *buf, size_t len, unsigned flags);
ssize_t __wrap_getrandom(void *buf, size_t len, unsigned flags);
ssize_t
__wrap_getrandom(void *buf, size_t len, unsigned flags)
{
	if (len == 4) {
		memset(buf, 0, len);
		return (ssize_t)len;
	}
	return __real_getrandom(buf, len, flags);
}

static struct snapshotd sd;
static struct event_base *base;
static char root[64];
static unsigned iterations;

static void
remove_root(void)
{
	rm_rf(root);
}

static void
setup(void)
{
	snprintf(root, sizeof root, "/tmp/fuzz-snapshotd.XXXXXX");
	if (!mkdtemp(root))
		abort();
	static char store[128], cache[128];
	snprintf(store, sizeof store, "%s/store", root);
	snprintf(cache, sizeof cache, "%s/cache", root);
	mkdir_p(cache, 0700);
	sd.store_dir = store;
	sd.cache_dir = cache;
	sd.store_fd = store_open(store);
	sd.compress_below = 0; /* never measure the disk */
	sd.zstd_level = 1;
	sd.cgroup_parent = "/warren-fuzz";
	sd.reclaim_dir = root;
	base = event_base_new();
	if (sd.store_fd < 0 || !base)
		abort();
	atexit(remove_root);
}

/* The temporary root holds the store and the cache and nothing else. */
static void
check_root(void)
{
	DIR *d = opendir(root);
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, "store") && strcmp(de->d_name, "cache"))
			__builtin_trap();
	closedir(d);
}

/* Every so often the store starts empty again, so runs stay bounded on disk. */
static void
reset_store(void)
{
	DIR *d = fdopendir(dup(sd.store_fd));
	rewinddir(d);
	struct dirent *de;
	char path[512];
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(path, sizeof path, "%s/%s", sd.store_dir, de->d_name);
			rm_rf(path);
		}
	closedir(d);
}

/* The supervisor's side: read replies; any directory fd handed out gets a file, as a
 * checkpoint would write. */
static void
drain(int fd)
{
	for (;;) {
		IpcResponse *resp = NULL;
		int fds[IPC_MAX_FDS];
		size_t n = 0;
		int r = ipc_recv_response(fd, &resp, fds, &n);
		if (r == -EAGAIN || r == -ECONNRESET)
			return;
		if (r < 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			int f = openat(fds[i], IMAGE_LAYOUT_GVISOR_CHECKPOINT,
				       O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
			if (f >= 0) {
				(void)!write(f, "image", 5);
				close(f);
			}
			close(fds[i]);
		}
		protobuf_c_message_free_unpacked(&resp->base, NULL);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base)
		setup();
	if (size > IPC_MAX_MESSAGE)
		return 0;
	if (++iterations % 512 == 0)
		reset_store();
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return 0;
	struct ipc_server_config cfg = {.name = "snapshotd",
					.table = snapshotd_handlers,
					.n_table = snapshotd_n_handlers,
					.drop_on_violation = true,
					.userdata = &sd};
	struct ipc_server *s = ipc_server_new(base, -1, &cfg);
	ipc_server_set_ready(s, true);
	ipc_server_adopt(s, sv[0]);
	const uint8_t *p = data, *end = data + size;
	for (int k = 0; k < 8 && p <= end; k++) {
		const uint8_t *sep = (const uint8_t *)memmem(p, (size_t)(end - p), "|||", 3);
		const uint8_t *stop = sep ? sep : end;
		send(sv[1], p, (size_t)(stop - p), MSG_NOSIGNAL | MSG_DONTWAIT);
		event_base_loop(base, EVLOOP_NONBLOCK);
		drain(sv[1]);
		if (!sep)
			break;
		p = sep + 3;
	}
	close(sv[1]);
	event_base_loop(base, EVLOOP_NONBLOCK);
	ipc_server_free(s);
	check_root();
	return 0;
}
