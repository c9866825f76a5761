/* libFuzzer harness: netnsd's request path as a (compromised) supervisor reaches it. Each input
 * is one datagram with up to three fds sent over a SOCK_SEQPACKET socketpair to netnsd's real
 * IPC server (common/ipc-server.c: receive, envelope decode, version and fd-count checks, the
 * dispatch table with its flags) running netnsd's real handlers (netnsd-dispatch.c) and their
 * validation (netnsd-validate.c), then, for what netnsd forwards, the spawner's real image
 * proof (spawner/image-proof.c, on a real store, cache and hostile directories made at
 * start-up) and its sealing of a written member. Stubbed at the boundary: the rest of the
 * spawner (ipc_client_call: what netnsd forwards is checked against what the spawner relies on,
 * the image fd is proven as the spawner does it, what the proof accepts is checked against what
 * runsc and the VMMs rely on, then answered), the namespace pool (four fake slots), cgroup
 * freezing and the microVM backend's presence.
 *
 * Input: byte 0 = flags (bits 0-1: fds sent, bit 2: the spawner answers an error, bit 3: netnsd
 * not ready yet, bit 4: microVM backend available); byte 1 = fds 0 and 1 (a nibble each, an
 * index into the fd palette below); byte 2 = fd 2; the rest is the datagram. Scene: slot 1 is
 * claimed and free, 0123456789ab runs on gVisor, 0123456789ac is a microVM; the palette is the
 * four slots' namespaces (0-3), the store's new image .tmp.t1.0000abcd (4), a new one holding
 * a symlink (5), its sealed image good (6), a "sealed" one of symlinks (7), the cache's good.123
 * (8), a directory of symlinks outside (9), the store (10), the cache (11), the rootfs (12), a
 * file (13), /dev/null (14), the store as O_PATH (15); all under /tmp/warren-fuzz-netnsd. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "cgroup.h"
#include "egress-policy.h"
#include "fileio.h"
#include "image-layout.h"
#include "image-proof.h"
#include "netnsd-validate.h"
#include "netnsd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define N_SLOTS 4
#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "invariant broken at %s:%d: %s\n", __FILE__, __LINE__,     \
				#c);                                                               \
			__builtin_trap();                                                          \
		}                                                                                  \
	} while (0)

static struct netnsd n;
static char root[64], store[PATH_MAX], cache[PATH_MAX];
static int palette[16];
/* the spawner's config: snapshotd's store and cache */
static struct image_proof_roots roots;
static bool vm_ok;

/* ---- the boundary ---- */

struct pool {
	struct slot slots[N_SLOTS];
};
static struct pool fake_pool;

int
pool_claim(struct pool *p, bool allow_outbound, struct slot **out)
{
	(void)allow_outbound;
	for (unsigned i = 0; i < N_SLOTS; i++)
		if (!p->slots[i].claimed) {
			p->slots[i].claimed = true;
			*out = &p->slots[i];
			return 0;
		}
	return -EAGAIN;
}

int
pool_release(struct pool *p, unsigned index)
{
	CHECK(index < N_SLOTS && p->slots[index].claimed);
	p->slots[index].claimed = false;
	return 0;
}

/* SetEgress and a claim's allow-list: only a claimed slot's group is ever set */
int
pool_slot_outbound(struct pool *p, unsigned index, bool outbound)
{
	(void)outbound;
	CHECK(index < N_SLOTS && p->slots[index].claimed);
	return 0;
}

int
pool_slot_refresh(struct pool *p, unsigned index)
{
	CHECK(index < N_SLOTS && p->slots[index].claimed);
	return 0;
}

struct slot *
pool_slot(struct pool *p, unsigned index)
{
	return index < N_SLOTS ? &p->slots[index] : NULL;
}

/* a fixed pool is all built: a reservation is bounded by its size and builds nothing */
unsigned
pool_reserve(struct pool *p, uint32_t count, uint64_t mem_available, unsigned *target)
{
	(void)p;
	(void)mem_available;
	*target = N_SLOTS;
	return count < N_SLOTS ? count : N_SLOTS;
}

unsigned
pool_size(struct pool *p)
{
	(void)p;
	return N_SLOTS;
}

/* a fixed pool: admission is by its size, as the real pool_policy_fixed makes it */
const struct pool_policy *
pool_policy(struct pool *p)
{
	static const struct pool_policy fixed = {.min = N_SLOTS, .max = N_SLOTS};
	(void)p;
	return &fixed;
}

int
pool_policy_admit(const struct pool_policy *pp, uint64_t mem_available)
{
	(void)pp;
	(void)mem_available;
	return 0;
}

unsigned
pool_free_count(struct pool *p)
{
	unsigned k = 0;
	for (unsigned i = 0; i < N_SLOTS; i++)
		k += !p->slots[i].claimed;
	return k;
}

bool
microvm_available(const struct microvm_config *c, char *why, size_t size)
{
	(void)c;
	if (!vm_ok)
		snprintf(why, size, "not in this harness");
	return vm_ok;
}

int
cgroup_freeze(const char *rel, bool freeze)
{
	(void)freeze;
	CHECK(!strncmp(rel, "/warren-fuzz/", 13) && sandbox_id_valid(rel + 13));
	return 0;
}

int
cgroup_frozen(const char *rel)
{
	(void)rel;
	return 0;
}

/* The spawner's side of the link: what it may take for granted about netnsd's orders. */
struct pending {
	ipc_reply_fn cb;
	void *ud;
	int kind;
	bool refused; /* the spawner's image proof said no */
};
static struct pending pending[8];
static size_t n_pending;

static bool
fd_path_under(int fd, const char *dir, char *name, size_t size)
{
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t k = readlink(link, path, sizeof path - 1);
	if (k < 0)
		return false;
	path[k] = 0;
	size_t dl = strlen(dir);
	if (strncmp(path, dir, dl) || path[dl] != '/' || strchr(path + dl + 1, '/'))
		return false;
	snprintf(name, size, "%s", path + dl + 1);
	return true;
}

static bool
is_slot_ns(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return false;
	for (unsigned i = 0; i < N_SLOTS; i++)
		if (fake_pool.slots[i].claimed && fake_pool.slots[i].ns_ino == st.st_ino)
			return true;
	return false;
}

static bool
is_dir(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool
member_is_file(int dfd, const char *name)
{
	struct stat st;
	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

static bool
dir_is_empty(int fd)
{
	DIR *d = fdopendir(dup(fd));
	CHECK(d);
	rewinddir(d);
	struct dirent *de;
	bool empty = true;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	closedir(d);
	return empty;
}

int
ipc_client_call(struct ipc_client *c, IpcRequest *req, const int *fds, size_t n_fds,
		unsigned timeout_ms, ipc_reply_fn cb, void *ud)
{
	(void)c;
	(void)timeout_ms;
	char name[PATH_MAX], why[400] = "";
	struct image_proof img = {.fd = -1};
	bool refused = false;
	int r;
	switch (req->body_case) {
	case WARREN__V1__REQUEST__BODY_SPAWN_SANDBOX:
		CHECK(n_fds == 1 && is_slot_ns(fds[0]));
		CHECK(sandbox_id_valid(req->spawn_sandbox->id));
		CHECK(path_is_inside(req->spawn_sandbox->rootfs, n.templates_dir));
		CHECK(backend_valid(
			req->spawn_sandbox->backend)); /* an enum number from the peer */
		break;
	case WARREN__V1__REQUEST__BODY_RESTORE_SANDBOX: {
		/* netnsd forwards the supervisor's fd if it is a directory; the spawner proves it
		 */
		CHECK(n_fds == 2 && is_slot_ns(fds[0]) && is_dir(fds[1]));
		const Warren__V1__SpawnSandboxRequest *q = req->restore_sandbox->spawn;
		CHECK(sandbox_id_valid(q->id));
		CHECK(path_is_inside(q->rootfs, n.templates_dir));
		CHECK(backend_valid(q->backend));
		bool vm = q->backend == (int)BACKEND_MICROVM;
		r = image_proof_open(&roots, fds[1], IMAGE_PROOF_RESTORE, vm, &img, why,
				     sizeof why);
		if (r < 0) {
			CHECK(img.fd < 0 && why[0]);
			refused = true;
			break;
		}
		/* runsc or the VMM reads it as root: a sealed image of the store, or of the cache,
		 * whose members are files */
		CHECK(fd_path_under(img.fd, store, name, sizeof name) ||
		      fd_path_under(img.fd, cache, name, sizeof name));
		CHECK(name[0] != '.');
		CHECK(vm ? member_is_file(img.fd, IMAGE_LAYOUT_VM_STATE) &&
				      member_is_file(img.fd, IMAGE_LAYOUT_VM_RAM)
			 : member_is_file(img.fd, IMAGE_LAYOUT_GVISOR_CHECKPOINT));
		CHECK(img.owner == geteuid());
		close(img.fd);
		break;
	}
	case WARREN__V1__REQUEST__BODY_CHECKPOINT_SANDBOX:
		CHECK(n_fds == 1 && is_dir(fds[0]));
		CHECK(sandbox_id_valid(req->checkpoint_sandbox->id));
		r = image_proof_open(&roots, fds[0], IMAGE_PROOF_CHECKPOINT, false, &img, why,
				     sizeof why);
		if (r < 0) {
			CHECK(img.fd < 0 && why[0]);
			refused = true;
			break;
		}
		/* the spawner creates files in it as root: an empty new image of the store only */
		CHECK(fd_path_under(img.fd, store, name, sizeof name));
		CHECK(!strncmp(name, ".tmp.", 5) && dir_is_empty(img.fd));
		/* what runsc writes there is sealed through the proven fd: 0600, the store owner's
		 */
		{
			int f = openat(img.fd, IMAGE_LAYOUT_GVISOR_CHECKPOINT,
				       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
			CHECK(f >= 0);
			close(f);
			CHECK(image_proof_seal(&img, IMAGE_LAYOUT_GVISOR_CHECKPOINT) == 0);
			struct stat st;
			CHECK(fstatat(img.fd, IMAGE_LAYOUT_GVISOR_CHECKPOINT, &st,
				      AT_SYMLINK_NOFOLLOW) == 0);
			CHECK((st.st_mode & 07777) == 0600 && st.st_uid == img.owner);
			CHECK(unlinkat(img.fd, IMAGE_LAYOUT_GVISOR_CHECKPOINT, 0) == 0);
		}
		close(img.fd);
		break;
	case WARREN__V1__REQUEST__BODY_DESTROY_SANDBOX:
		CHECK(n_fds == 0 && sandbox_id_valid(req->destroy_sandbox->id));
		break;
	case WARREN__V1__REQUEST__BODY_CHECK_ROOTFS:
		/* the spawner opens it beneath the templates dir: netnsd sends only a canonical
		 * directory inside it */
		CHECK(n_fds == 0 && req->check_rootfs->rootfs[0] == '/' &&
		      path_is_inside(req->check_rootfs->rootfs, n.templates_dir));
		break;
	case WARREN__V1__REQUEST__BODY_SET_EGRESS: {
		/* nft runs as root on what this carries: a claimed slot, a policy that parses */
		struct egress_policy ep;
		CHECK(n_fds == 0 && req->set_egress->slot < N_SLOTS &&
		      fake_pool.slots[req->set_egress->slot].claimed);
		CHECK(egress_policy_parse(req->set_egress->policy, &ep, NULL, 0) == 0);
		break;
	}
	case WARREN__V1__REQUEST__BODY_EXEC:
		CHECK(n_fds == 0 && sandbox_id_valid(req->exec->id) && req->exec->n_argv > 0 &&
		      req->exec->n_argv <= NETNSD_MAX_ARGS);
		break;
	default:
		CHECK(!"a request the spawner does not serve");
	}
	if (n_pending == sizeof pending / sizeof pending[0])
		return -EAGAIN;
	pending[n_pending++] = (struct pending){cb, ud, (int)req->body_case, refused};
	return 0;
}

/* The spawner answers: success with what each order returns, or an error. */
static void
spawner_answer(const struct pending *p, bool fail)
{
	IpcResponse resp = WARREN__V1__RESPONSE__INIT;
	Warren__V1__SpawnSandboxResponse sr = WARREN__V1__SPAWN_SANDBOX_RESPONSE__INIT;
	Warren__V1__CheckpointSandboxResponse cr = WARREN__V1__CHECKPOINT_SANDBOX_RESPONSE__INIT;
	Warren__V1__ExecResponse er = WARREN__V1__EXEC_RESPONSE__INIT;
	int fds[2] = {-1, -1};
	size_t n_fds = 0;
	sr.pid = 4242;
	if (fail) {
		resp.error = -EIO;
		resp.message = "spawner failed";
		p->cb(&resp, resp.error, NULL, 0, p->ud);
		return;
	}
	switch (p->kind) {
	case WARREN__V1__REQUEST__BODY_SPAWN_SANDBOX:
		resp.body_case = WARREN__V1__RESPONSE__BODY_SPAWN_SANDBOX;
		resp.spawn_sandbox = &sr;
		break;
	case WARREN__V1__REQUEST__BODY_RESTORE_SANDBOX:
		resp.body_case = WARREN__V1__RESPONSE__BODY_RESTORE_SANDBOX;
		resp.restore_sandbox = &sr;
		break;
	case WARREN__V1__REQUEST__BODY_CHECKPOINT_SANDBOX:
		resp.body_case = WARREN__V1__RESPONSE__BODY_CHECKPOINT_SANDBOX;
		resp.checkpoint_sandbox = &cr;
		break;
	case WARREN__V1__REQUEST__BODY_EXEC:
		resp.body_case = WARREN__V1__RESPONSE__BODY_EXEC;
		resp.exec = &er;
		fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		fds[1] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		n_fds = 2;
		break;
	default:
		break;
	}
	p->cb(&resp, 0, n_fds ? fds : NULL, n_fds, p->ud);
}

/* ---- the scene: templates, a store and a cache as snapshotd keeps them, hostile dirs ---- */

static void
mk(const char *fmt, const char *what)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", root, fmt);
	int r;
	if (!strcmp(what, "dir"))
		r = mkdir(path, 0700);
	else if (!strcmp(what, "file"))
		r = close(open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
	else
		r = symlink(what, path);
	CHECK(r == 0);
}

static int
po(const char *rel, int flags)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	int fd = open(path, flags | O_CLOEXEC);
	CHECK(fd >= 0);
	return fd;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* a fixed place, so the seeds' rootfs paths name it */
	snprintf(root, sizeof root, "/tmp/warren-fuzz-netnsd");
	CHECK(rm_rf(root) == 0 && mkdir(root, 0700) == 0);
	static const char *const tree[][2] = {
		{"templates", "dir"},
		{"templates/web", "dir"},
		{"templates/web/rootfs", "dir"},
		{"templates/web/" IMAGE_LAYOUT_VM_INITRAMFS, "file"},
		{"store", "dir"},
		{"store/.tmp.t1.0000abcd", "dir"},
		{"store/.tmp.t2.0000abce", "dir"},
		{"store/.tmp.t2.0000abce/" IMAGE_LAYOUT_VM_STATE, "/etc/passwd"},
		{"store/good", "dir"},
		{"store/good/" IMAGE_LAYOUT_GVISOR_CHECKPOINT, "file"},
		{"store/good/" IMAGE_LAYOUT_VM_STATE, "file"},
		{"store/good/" IMAGE_LAYOUT_VM_RAM, "file"},
		{"store/evil", "dir"},
		{"store/evil/" IMAGE_LAYOUT_GVISOR_CHECKPOINT, "/etc/passwd"},
		{"store/evil/" IMAGE_LAYOUT_VM_STATE, "/etc/passwd"},
		{"store/evil/" IMAGE_LAYOUT_VM_RAM, "/etc/passwd"},
		{"cache", "dir"},
		{"cache/good.123", "dir"},
		{"cache/good.123/" IMAGE_LAYOUT_GVISOR_CHECKPOINT, "file"},
		{"cache/good.123/" IMAGE_LAYOUT_VM_STATE, "file"},
		{"cache/good.123/" IMAGE_LAYOUT_VM_RAM, "file"},
		{"outside", "dir"},
		{"outside/" IMAGE_LAYOUT_GVISOR_CHECKPOINT, "/etc/passwd"},
		{"outside/" IMAGE_LAYOUT_VM_STATE, "/etc/passwd"},
		{"outside/" IMAGE_LAYOUT_VM_RAM, "/etc/passwd"},
		{"slot0", "file"},
		{"slot1", "file"},
		{"slot2", "file"},
		{"slot3", "file"},
	};
	for (size_t i = 0; i < sizeof tree / sizeof tree[0]; i++)
		mk(tree[i][0], tree[i][1]);
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/store", root);
	CHECK(realpath(path, store));
	snprintf(path, sizeof path, "%s/cache", root);
	CHECK(realpath(path, cache));
	snprintf(path, sizeof path, "%s/templates", root);
	n.templates_dir = realpath(path, NULL);
	for (unsigned i = 0; i < N_SLOTS; i++) {
		char rel[16];
		snprintf(rel, sizeof rel, "slot%u", i);
		struct stat st;
		fake_pool.slots[i] =
			(struct slot){.index = i, .nsfd = po(rel, O_RDONLY), .built = true};
		CHECK(fstat(fake_pool.slots[i].nsfd, &st) == 0);
		fake_pool.slots[i].ns_ino = st.st_ino;
	}
	static const char *const dirs[] = {"store/.tmp.t1.0000abcd",
					   "store/.tmp.t2.0000abce",
					   "store/good",
					   "store/evil",
					   "cache/good.123",
					   "outside",
					   "store",
					   "cache",
					   "templates/web/rootfs"};
	size_t k = 0;
	for (unsigned i = 0; i < N_SLOTS; i++)
		palette[k++] = fake_pool.slots[i].nsfd;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		palette[k++] = po(dirs[i], O_RDONLY | O_DIRECTORY);
	palette[k++] = po("templates/web/" IMAGE_LAYOUT_VM_INITRAMFS, O_RDONLY);
	palette[k++] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	palette[k++] = po("store", O_PATH | O_DIRECTORY);
	CHECK(k == 16);

	n.dc.base = event_base_new();
	n.pool = &fake_pool;
	n.spawner = (struct ipc_client *)&fake_pool; /* never dereferenced: ipc_client_call above */
	n.cgroup_parent = "/warren-fuzz";
	n.runsc = "/nonexistent/runsc";
	roots = (struct image_proof_roots){.store = store, .cache = cache};
	struct ipc_server_config cfg = {.name = "netnsd",
					.table = netnsd_handlers,
					.n_table = netnsd_n_handlers,
					.drop_on_violation = true,
					.userdata = &n};
	n.server = ipc_server_new(n.dc.base, -1, &cfg);
	return 0;
}

/* Two running sandboxes for the handlers that need one: 0123456789ab on gVisor in slot 3,
 * 0123456789ac a microVM in slot 2. */
static void
scene_reset(void)
{
	while (n.sandboxes) {
		struct netnsd_sandbox *s = n.sandboxes;
		n.sandboxes = s->next;
		free(s);
	}
	for (unsigned i = 0; i < N_SLOTS; i++)
		fake_pool.slots[i].claimed = i >= 1; /* slot 1 claimed and free */
	for (unsigned i = 0; i < 2; i++) {
		struct netnsd_sandbox *s = calloc(1, sizeof *s);
		CHECK(s);
		snprintf(s->id, sizeof s->id, "0123456789a%c", i ? 'c' : 'b');
		s->slot = 3 - i;
		s->pid = 4000 + (int)i;
		s->vm = i;
		s->next = n.sandboxes;
		n.sandboxes = s;
	}
}

static void
run_loop(void)
{
	for (int i = 0; i < 4; i++)
		event_base_loop(n.dc.base, EVLOOP_NONBLOCK);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	uint8_t flags = data[0];
	size_t n_fds = flags & 3;
	int fds[3] = {palette[data[1] & 15], palette[data[1] >> 4], palette[data[2] & 15]};
	vm_ok = flags & 16;
	ipc_server_set_ready(n.server, !(flags & 8));
	scene_reset();

	int sp[2];
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0);
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	ipc_server_adopt(n.server, sp[0]);
	struct iovec iov = {(void *)(data + 3), size - 3};
	union {
		char raw[CMSG_SPACE(sizeof(int) * 3)];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n_fds) {
		mh.msg_control = ctl.raw;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	fcntl(sp[1], F_SETFL, O_NONBLOCK);
	if (sendmsg(sp[1], &mh, MSG_DONTWAIT) >= 0) {
		run_loop();
		/* the spawner answers what netnsd forwarded */
		while (n_pending) {
			struct pending p = pending[--n_pending];
			spawner_answer(&p, (flags & 4) || p.refused);
			run_loop();
		}
	}
	/* netnsd's answers (and any fds with them) are read and dropped */
	for (;;) {
		IpcResponse *resp = NULL;
		int rfds[IPC_MAX_FDS];
		size_t rn = 0;
		int r = ipc_recv_response(sp[1], &resp, rfds, &rn);
		if (r < 0)
			break;
		ipc_close_fds(rfds, rn);
		protobuf_c_message_free_unpacked(&resp->base, NULL);
	}
	close(sp[1]);
	run_loop();
	CHECK(!n.waiters);
	return 0;
}
