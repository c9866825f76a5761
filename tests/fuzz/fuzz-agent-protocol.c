/* libFuzzer harness: the microVM agent protocol (common/agent-protocol.h) in both directions.
 *
 * Byte 0, bit 0 clear: the host side. The rest of the input is what a hostile guest's agent
 * sends back, read by the spawner's real code (netnsd/spawner/microvm.c: microvm_agent_open with
 * Firecracker's "CONNECT"/"OK" when bit 1 is set, then microvm_exec's exit line and output
 * copy, or with bit 2 microvm_finish_restore's two "ok" answers). Stubbed at the boundary: the
 * connection (unix_connect, wrapped: one end of a socketpair holding the guest's bytes, its
 * writing side shut so the end of the input is the end of the stream) and the VMM drivers (no
 * VMM runs; restore succeeds). Checked against a model of the protocol written here: what exec
 * returns and copies to the caller's stdout and stderr (only the guest's bytes, in order, never
 * more than it announced and MICROVM_EXEC_OUTPUT_MAX), and that a restore is told success only
 * after exactly "ok" twice.
 *
 * Bit 0 set: the agent side. The rest is what the host sends, fed in chunks of ((byte 0 >> 1)
 * & 31) + 1 bytes into the agent's buffer (its real size, or 200 bytes with bit 6, so a request
 * too large is dropped) and parsed by agent_proto_drain as warren-agent's serve loop does; every
 * request is checked (within the bytes received, exec's argv within its bytes and
 * NULL-terminated), and what stays in the buffer is exactly the tail of the stream. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent-protocol.h"
#include "microvm-net.h"
#include "microvm.h"
#include "vmm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "invariant broken at %s:%d: %s\n", __FILE__, __LINE__,     \
				#c);                                                               \
			__builtin_trap();                                                          \
		}                                                                                  \
	} while (0)

#define ROOT "/tmp/warren-fuzz-agent"
#define BUNDLE ROOT "/bundle"

/* ---- the boundary ---- */

static const uint8_t *guest;
static size_t guest_len;
static int connects;

int __real_unix_connect(const char *path, int type, unsigned wait_ms);
int __wrap_unix_connect(const char *path, int type, unsigned wait_ms);

/* The VMM's agent socket: the guest's bytes are already there, and then its end. */
int
__wrap_unix_connect(const char *path, int type, unsigned wait_ms)
{
	(void)wait_ms;
	CHECK(!strcmp(path, BUNDLE "/vmm/agent.sock") && type == SOCK_STREAM);
	connects++;
	int sp[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0);
	/* room for the whole input and the host's request */
	int sz = 1 << 20;
	setsockopt(sp[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
	setsockopt(sp[0], SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
	CHECK(write(sp[1], guest, guest_len) == (ssize_t)guest_len);
	shutdown(sp[1], SHUT_WR);
	/* the host's request is written into sp[1]'s receive queue, never read: it stays open
	 * until the host's end closes (at most one connection per input) */
	static int held = -1;
	if (held >= 0)
		close(held);
	held = sp[1];
	return sp[0];
}

static int
stub_restore(const struct vmm_restore *r)
{
	CHECK(r->state_fd >= 0);
	return 0;
}

static int
stub_argv(const struct vmm_launch *l, char ***argv)
{
	(void)l;
	(void)argv;
	CHECK(!"no VMM is launched here");
	return -ENOSYS;
}

static int
stub_dir(const char *dir)
{
	(void)dir;
	CHECK(!"no VMM is paused here");
	return -ENOSYS;
}

const struct vmm_driver vmm_qemu = {.name = "qemu",
				    .argv = stub_argv,
				    .restore = stub_restore,
				    .pause = stub_dir,
				    .resume = stub_dir};
const struct vmm_driver vmm_firecracker = {.name = "firecracker",
					   .agent_vsock = true,
					   .own_ram = true,
					   .argv = stub_argv,
					   .restore = stub_restore,
					   .pause = stub_dir,
					   .resume = stub_dir};

int
microvm_net_setup(uid_t uid, unsigned port)
{
	(void)uid;
	(void)port;
	CHECK(!"no VMM is launched here");
	return -ENOSYS;
}

/* ---- the host side ---- */

/* The model's line reader: a line of at most max - 1 bytes before its newline, NUL-terminated
 * at its first NUL as C strings are; advances *p past it. */
static bool
model_line(const uint8_t **p, const uint8_t *end, char *line, size_t max)
{
	const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
	if (!nl || (size_t)(nl - *p) > max - 2)
		return false;
	memcpy(line, *p, (size_t)(nl - *p));
	line[nl - *p] = 0;
	*p = nl + 1;
	return true;
}

static size_t
memfd_size(int fd)
{
	struct stat st;
	CHECK(fstat(fd, &st) == 0);
	return (size_t)st.st_size;
}

static bool
memfd_equals(int fd, const uint8_t *want, size_t n)
{
	if (memfd_size(fd) != n)
		return false;
	if (n == 0)
		return true;
	uint8_t *got = malloc(n);
	CHECK(got && pread(fd, got, n, 0) == (ssize_t)n);
	bool eq = !memcmp(got, want, n);
	free(got);
	return eq;
}

static void
host_side(uint8_t flags)
{
	bool vsock = flags & 2;
	static struct microvm_config c = {.vmm = "qemu"};
	c.vmm = vsock ? "firecracker" : "qemu";
	CHECK(microvm_configure(&c) == 0);
	const uint8_t *p = guest, *end = guest + guest_len;
	char line[256];
	/* Firecracker's socket answers CONNECT with "OK <port>" */
	bool connected = !vsock || (model_line(&p, end, line, 64) && !strncmp(line, "OK ", 3));
	connects = 0;
	if (flags & 4) {
		int incoming[2] = {0, -1};
		int r = microvm_finish_restore(BUNDLE, "0123456789ab", incoming);
		bool ok = connected && model_line(&p, end, line, 128) && !strcmp(line, "ok") &&
			  model_line(&p, end, line, 128) && !strcmp(line, "ok");
		CHECK(connects == 1);
		CHECK((r == 0) == ok);
		CHECK(r <= 0);
		return;
	}
	int out = memfd_create("out", MFD_CLOEXEC), err = memfd_create("err", MFD_CLOEXEC);
	CHECK(out >= 0 && err >= 0);
	char *argv[] = {"/bin/echo", "", "hi", NULL};
	/* the spawner connects, then reads the answer (as warren-vm: not here) */
	int fd = microvm_agent_open(BUNDLE);
	int r = fd < 0 ? fd : microvm_exec(fd, argv, 3, 1000, out, err);
	size_t no = memfd_size(out), ne = memfd_size(err);
	CHECK(connects == 1);
	/* never more than the guest sent (inputs are far below MICROVM_EXEC_OUTPUT_MAX) */
	CHECK(no + ne <= guest_len && no <= MICROVM_EXEC_OUTPUT_MAX);
	int status;
	long long ol, el;
	bool parsed = connected && model_line(&p, end, line, 128) &&
		      agent_proto_parse_exit(line, &status, &ol, &el);
	if (!parsed) {
		CHECK(r < 0 && no == 0 && ne == 0);
	} else {
		/* a negative size is nothing to copy */
		size_t left = (size_t)(end - p);
		unsigned long long wo = ol > 0 ? (unsigned long long)ol : 0,
				   we = el > 0 ? (unsigned long long)el : 0;
		if (wo <= left && we <= left - wo) {
			CHECK(r == status);
			CHECK(memfd_equals(out, p, wo) && memfd_equals(err, p + wo, we));
		} else {
			/* the guest announced more than it sent: an error, and what was copied
			 * is a prefix of what it did send */
			CHECK(r < 0);
			if (wo <= left)
				CHECK(memfd_equals(out, p, wo) && ne <= left - wo &&
				      memfd_equals(err, p + wo, ne));
			else
				CHECK(no <= left && memfd_equals(out, p, no) && ne == 0);
		}
	}
	close(out);
	close(err);
}

/* ---- the agent side ---- */

struct agent_run {
	char *buf;
	size_t have; /* before the drain */
	unsigned requests;
};

static void
agent_handle(const struct agent_proto_request *q, void *ud)
{
	struct agent_run *a = ud;
	const char *lo = a->buf, *hi = a->buf + a->have;
	a->requests++;
	switch (q->kind) {
	case AGENT_PROTO_PING:
	case AGENT_PROTO_CLOCK:
	case AGENT_PROTO_BAD_EXEC:
	case AGENT_PROTO_UNKNOWN:
		break;
	case AGENT_PROTO_ID:
		CHECK(q->id >= lo && q->id + strlen(q->id) < hi);
		break;
	case AGENT_PROTO_EXEC: {
		CHECK(q->len <= AGENT_PROTO_MAX_EXEC);
		CHECK(q->args > lo && q->args[-1] == 0 && q->args + q->len <= hi);
		size_t argc = 0;
		char **argv = agent_proto_exec_argv(q->args, q->len, &argc);
		CHECK(argv && argc <= q->len && !argv[argc]);
		for (size_t i = 0; i < argc; i++) {
			CHECK(argv[i] >= q->args && argv[i] < q->args + q->len);
			/* its NUL is within the exec's bytes */
			CHECK(memchr(argv[i], 0, (size_t)(q->args + q->len - argv[i])));
		}
		free(argv);
		break;
	}
	default:
		CHECK(!"unknown kind");
	}
}

static void
agent_side(uint8_t flags, const uint8_t *data, size_t size)
{
	static char big[AGENT_PROTO_MAX_EXEC + 4096];
	size_t bufsize = flags & 64 ? 200 : sizeof big;
	size_t chunk = ((flags >> 1) & 31) + 1;
	struct agent_run a = {.buf = big};
	size_t have = 0, fed = 0;
	while (fed < size) {
		/* serve(): read(port, buf + have, sizeof buf - have - 1) */
		size_t k = bufsize - have - 1;
		if (k > chunk)
			k = chunk;
		if (k > size - fed)
			k = size - fed;
		CHECK(k > 0);
		memcpy(big + have, data + fed, k);
		have += k;
		fed += k;
		a.have = have;
		agent_proto_drain(big, &have, bufsize, agent_handle, &a);
		CHECK(have < bufsize - 1);
		/* what is left is the stream's tail, as it came (a newline put back) */
		CHECK(have <= fed && !memcmp(big, data + fed - have, have));
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* the bundle's vmm.log (microvm.c logs there) is /dev/null: millions of runs append */
	if (mkdir(ROOT, 0700) < 0 && errno != EEXIST)
		CHECK(!"mkdir " ROOT);
	mkdir(BUNDLE, 0700);
	mkdir(BUNDLE "/vmm", 0700);
	unlink(BUNDLE "/vmm.log");
	CHECK(symlink("/dev/null", BUNDLE "/vmm.log") == 0);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	guest = data + 1;
	guest_len = size - 1;
	if (flags & 1)
		agent_side(flags, data + 1, size - 1);
	else
		host_side(flags);
	return 0;
}
