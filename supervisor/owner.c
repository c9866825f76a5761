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

/* <state-dir>/<dir>/<name>: the uid, one line, 0600 in the supervisor's own directory; the
 * caller checked name (a sandbox id or a user tag), so it is a plain file name */
int
owner_record_set(const char *dir, const char *name, sd_bus_message *m)
{
	uid_t uid;
	int r = logs_sender_uid(m, &uid);
	if (r < 0)
		return r;
	char path[512], buf[32];
	snprintf(path, sizeof path, "%s/%s", sup->state_dir, dir);
	mkdir_p(path, 0700);
	snprintf(path, sizeof path, "%s/%s/%s", sup->state_dir, dir, name);
	int n = snprintf(buf, sizeof buf, "%u\n", (unsigned)uid);
	return file_write_atomic(path, buf, (size_t)n, 0600, false);
}

uid_t
owner_record_get(const char *dir, const char *name)
{
	char path[512], buf[32];
	snprintf(path, sizeof path, "%s/%s/%s", sup->state_dir, dir, name);
	if (file_read_line(path, buf, sizeof buf) < 0)
		return 0;
	char *end;
	unsigned long v = strtoul(buf, &end, 10);
	return *end || v > 0xfffffffeUL ? 0 : (uid_t)v;
}

void
owner_record_remove(const char *dir, const char *name)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s/%s", sup->state_dir, dir, name);
	unlink(path);
}

void
tag_owner_set(const char *tag, sd_bus_message *m)
{
	if (!m || !template_name_valid(tag))
		return;
	int r = owner_record_set("tag-owners", tag, m);
	if (r < 0)
		log_warning_errno(r, "Tag %s: cannot record who made it (%m): it is root's alone",
				  tag);
}

void
tag_owner_remove(const char *tag)
{
	if (template_name_valid(tag))
		owner_record_remove("tag-owners", tag);
}

int
tag_owner_check(sd_bus_message *m, const char *tag, const char *what, sd_bus_error *err)
{
	uid_t uid;
	if (logs_sender_uid(m, &uid) < 0)
		return sd_bus_error_setf(err, SD_BUS_ERROR_ACCESS_DENIED, "Cannot tell who asks");
	/* a tag with no record reads as 0: root's alone */
	if (uid == 0 || (template_name_valid(tag) && owner_record_get("tag-owners", tag) == uid))
		return 0;
	return sd_bus_error_setf(err, SD_BUS_ERROR_ACCESS_DENIED,
				 "Tag %s is not yours: only who snapshotted it and root may %s it",
				 tag, what);
}
