/* Snapshots, forks and tags (snapshot.c, supervisor, a feature). */
#pragma once
#include "supervisor.h"

int image_open_call(const char *tag, unsigned timeout_ms, ipc_reply_fn cb, void *ud);
int image_remove_call(const char *tag, ipc_reply_fn cb, void *ud);
void fork_job_child_done(struct fork_job *j, const char *id, bool ok, const char *error);
/* ForkTag and BranchSandbox: count children of tag's image; *op is taken, or left to the caller
 * to answer when the fork cannot start (<0). */
int fork_start(struct operation **op, const char *tag, unsigned count);
/* RemoveTag: 0, or TagBusy in err while a fork or a restore holds the tag's image. */
int tag_busy_check(const char *tag, sd_bus_error *err);
/* discard_parent: a warm template's image (warm.c): the parent is not restored and the image
 * is committed with COMPRESSION_NONE */
int snapshot_start(struct sandbox *sb, sd_bus_message *m, const char *tag, unsigned fork_count,
		   bool discard_parent, sd_bus_error *err);
