/* Persistent sandbox records under <state-dir>/sandboxes/<id>: key=value lines, replaced
 * atomically, so a supervisor restarted with kill -9 finds what it was running; and the walk of
 * a record directory that every loader at start-up makes (sandboxes, templates, lifetimes,
 * egress policies). */
#include "fileio.h"
#include "agent-token.h"
#include "logs.h"
#include "macro.h"
#include "state-file.h"
#include "supervisor.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

int
state_write_sandbox(struct supervisor *s, struct sandbox *sb)
{
	char path[512], buf[1024];
	snprintf(path, sizeof path, "%s/sandboxes/%s", s->state_dir, sb->id);
	int n = snprintf(buf, sizeof buf,
			 "id=%s\ntemplate=%s\nbackend=%s\nslot=%d\naddress=%s\ncreated=%llu\n"
			 "state=%s\nstandby=%d\n",
			 sb->id, sb->template_name, backend_to_string(sb->backend), sb->slot,
			 sb->address, (unsigned long long)sb->created_usec,
			 sandbox_state_to_string(sb->state), sb->standby);
	/* Not fsynced: a record must survive the supervisor's crash (the page cache does), and
	 * after a power loss no sandbox is left to re-adopt. An fsync per state change cost ~10 ms
	 * on this disk and serialised side-by-side creates. */
	return file_write_atomic(path, buf, (size_t)n, 0600, false);
}

void
state_remove_sandbox(struct supervisor *s, const char *id)
{
	char path[512];
	snprintf(path, sizeof path, "%s/sandboxes/%s", s->state_dir, id);
	unlink(path);
	logs_owner_remove(id);
	agent_token_remove(id);
}

int
state_file_each_record(const char *state_dir, const char *subdir,
		       void (*each)(int dfd, const char *name, const char *path, void *ctx),
		       void *ctx)
{
	char dir[512], path[800];
	if (snprintf(dir, sizeof dir, "%s/%s", state_dir, subdir) >= (int)sizeof dir)
		return -ENAMETOOLONG;
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		/* a name is at most 255 bytes: path holds it after any dir that fits */
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		each(dirfd(d), de->d_name, path, ctx);
	}
	closedir(d);
	return 0;
}
