/* warren-importd: imports OCI images as template root filesystems. It alone writes the
 * templates directory. Each import runs in a forked job: an unprivileged stage (user
 * warren-import: skopeo, umoci unpack --rootless, the image config parsed) in a root-owned
 * staging directory, then importd's copy of the unpacked tree into the templates directory
 * (import-copy.c). See docs/ARCHITECTURE.md, "Templates from OCI images". */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon.h"
#include "ipc-server.h"
#include "warren/v1/importd.pb-c.h"

#define IMPORTD_MAX_BYTES_DEFAULT (4ull << 30) /* a source archive and an unpacked tree */
#define IMPORT_REF_MAX 128
/* a root-owned regular file an import leaves in its tree: RemoveTemplate removes only those */
#define IMPORT_MARKER "imported"

struct importd {
	struct daemon_common dc;
	const char *templates_dir;
	const char *staging_dir;
	const char *import_user;
	const char *skopeo, *umoci, *vm_image, *agent;
	uint64_t max_bytes;
	uid_t import_uid;
	gid_t import_gid;
	int templates_fd; /* O_PATH, root's, checked at start */
	int staging_fd;
	struct ipc_server *server;
	struct ipc_call *job_call; /* the import in progress (one at a time) */
	pid_t job_pid;
	char job_name[40];
	int job_pipe;
	struct event *job_ev;
	uint8_t *job_buf;
	size_t job_len;
};

extern const char importd_user[];
extern const int importd_caps[];
extern const unsigned importd_n_caps;

/* What the unprivileged stage hands back, and the copy's counts. */
struct import_counts {
	uint64_t bytes, max_bytes;
	uint32_t files, dropped, modes_fixed;
	unsigned entries;
	void (*progress)(uint64_t done, void *ud);
	void *ud;
};

/* import-copy.c: copy the tree at srcfd (the stage's, every entry owned by owner) into the
 * empty directory dstfd as root's, read-only for others, no device node, no set-id bit,
 * symlinks copied as symlinks and never followed. why names the refused entry. */
int import_copy_tree(int srcfd, int dstfd, uid_t owner, struct import_counts *c, char *why,
		     size_t why_size);
/* The mode an entry gets in a template: permission bits without set-id, sticky or group and
 * others' write. */
unsigned import_copy_mode(unsigned mode);

/* import-stage.c: runs in the child that became the import user. Reads the source fd, runs
 * skopeo and umoci in workdir, parses the runtime config. Writes progress and the result as
 * framed messages to out_fd. Returns the exit status for the child. */
int import_stage_run(const struct importd *d, const char *workdir, const char *store, int source_fd,
		     const char *format, const char *reference, const char *name, int out_fd);

/* A framed message on the job pipe: 1 byte kind, 4 bytes length (little endian), a packed
 * protobuf (progress event or import response) or a reason string. */
enum { JOB_MSG_PROGRESS = 1, JOB_MSG_CONFIG = 2, JOB_MSG_RESULT = 3, JOB_MSG_ERROR = 4 };
#define JOB_MSG_MAX (256 * 1024)
int job_msg_send(int fd, int kind, const void *data, size_t len);
int job_progress(int fd, const char *name, const char *phase, uint64_t done, uint64_t total);
int job_error(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* importd-dispatch.c: the request table importd serves */
extern const struct ipc_handler importd_handlers[];
extern const size_t importd_n_handlers;

/* import-job.c: the forked job of one import (root); its exit status. Progress and the result
 * go to out as framed messages. */
int job_main(const struct importd *d, const Warren__V1__ImportTemplateRequest *q, int source_fd,
	     int out);
/* openat2 beneath dirfd: no symlink, no magic link, no mount crossing; an fd or -errno */
int open_beneath(int dirfd, const char *path, int flags);
