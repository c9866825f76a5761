/* The supervisor's record directories under its state dir (state-file.c). */
#pragma once

struct supervisor;
struct sandbox;

/* <state_dir>/sandboxes/<id>: the record a restarted supervisor re-adopts sb from (written
 * atomically at each state change); removed when the sandbox is forgotten. */
int state_write_sandbox(struct supervisor *s, struct sandbox *sb);
void state_remove_sandbox(struct supervisor *s, const char *id);

/* Walk the record directory <state_dir>/<subdir>: each(dfd, name, path, ctx) for every entry
 * but "." and "..", in readdir's order. dfd is the directory's, for openat/unlinkat on name (a
 * single path component: it stays in this directory); path is "<dir>/<name>", to read by path
 * and to name in logs. Which names are records, what to read, log and remove is each's.
 * 0, or -errno when the directory cannot be opened (the loaders read none: absent is none). */
int state_file_each_record(const char *state_dir, const char *subdir,
			   void (*each)(int dfd, const char *name, const char *path, void *ctx),
			   void *ctx);
