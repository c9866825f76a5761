/* Who may act on a sandbox over D-Bus: its owner (the uid that created, forked or branched it;
 * logs.c keeps it in the state directory, so a restarted supervisor still knows) and root. The
 * bus policy lets every member of group warren call the API: without this check any of them
 * could destroy another's sandbox, run commands in it, freeze it, snapshot its memory into a
 * tag of their own or read its logs and agent token. Each method that acts on one sandbox calls
 * it first, before it changes anything. A sandbox with no owner on record (internal standbys,
 * or one re-adopted from a version that kept none) is root's alone. */
#include "owner.h"
#include "logs.h"
#include "supervisor.h"

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
