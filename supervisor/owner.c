/* Who may act on a sandbox over D-Bus: its owner (the uid that created, forked or branched it;
 * logs.c keeps it in the state directory, so a restarted supervisor still knows) and root. The
 * bus policy lets every member of group warren call the API: without this check any of them
 * could destroy another's sandbox, run commands in it, freeze it, snapshot its memory into a
 * tag of their own or read its logs and agent token. Each method that acts on one sandbox calls
 * it first, before it changes anything. A sandbox with no owner on record (internal standbys,
 * or one re-adopted from a version that kept none) is root's alone. */
#include "owner.h"
#include "fileio.h"
#include "log.h"
#include "logs.h"
#include "names.h"
#include "supervisor.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
owner_check(sd_bus_message *m, const struct sandbox *sb, const char *what, sd_bus_error *err)
{
	uid_t uid;
	if (logs_sender_uid(m, &uid) < 0)
		return sd_bus_error_setf(err, SD_BUS_ERROR_ACCESS_DENIED, "Cannot tell who asks");
	if (uid == 0 || uid == logs_owner_get(sb->id))
		return 0;
	return sd_bus_error_setf(err, SD_BUS_ERROR_ACCESS_DENIED,
				 "Sandbox %s is not yours: only its creator and root may %s it",
				 sb->id, what);
}

/* <state-dir>/tag-owners/<tag>: the tag is a user tag ([a-z0-9_-], checked before any call
 * here), so it is a plain file name */
static void
tag_owner_path(const char *tag, char *path, size_t size)
{
	snprintf(path, size, "%s/tag-owners/%s", sup->state_dir, tag);
}

void
tag_owner_set(const char *tag, sd_bus_message *m)
{
	uid_t uid;
	if (!m || !template_name_valid(tag))
		return;
	int r = logs_sender_uid(m, &uid);
	if (r < 0) {
		log_warning_errno(r, "Tag %s: cannot tell who made it (%m): it is root's alone",
				  tag);
		return;
	}
	char path[512], buf[32];
	snprintf(path, sizeof path, "%s/tag-owners", sup->state_dir);
	mkdir_p(path, 0700);
	tag_owner_path(tag, path, sizeof path);
	int n = snprintf(buf, sizeof buf, "%u\n", (unsigned)uid);
	r = file_write_atomic(path, buf, (size_t)n, 0600, false);
	if (r < 0)
		log_warning_errno(r, "Tag %s: cannot record its owner: %m", tag);
}

void
tag_owner_remove(const char *tag)
{
	char path[512];
	if (!template_name_valid(tag))
		return;
	tag_owner_path(tag, path, sizeof path);
	unlink(path);
}

int
tag_owner_check(sd_bus_message *m, const char *tag, const char *what, sd_bus_error *err)
{
	uid_t uid;
	if (logs_sender_uid(m, &uid) < 0)
		return sd_bus_error_setf(err, SD_BUS_ERROR_ACCESS_DENIED, "Cannot tell who asks");
	if (uid == 0)
		return 0;
	char path[512], buf[32];
	tag_owner_path(tag, path, sizeof path);
	if (template_name_valid(tag) && file_read_line(path, buf, sizeof buf) == 0) {
		char *end;
		unsigned long v = strtoul(buf, &end, 10);
		if (!*end && v == uid)
			return 0;
	}
	return sd_bus_error_setf(err, SD_BUS_ERROR_ACCESS_DENIED,
				 "Tag %s is not yours: only who snapshotted it and root may %s it",
				 tag, what);
}
