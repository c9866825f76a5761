/* Who owns a sandbox, for its console logs and more. OpenLogs(options) (sandbox-dbus.c) answers
 * an fd: netnsd's spawner keeps each sandbox's console (its program's stdout and
 * stderr) in a bounded ring and hands out a sealed memfd of it, or with follow a pipe fed as
 * output comes (netnsd/spawner/log-ring.c). Only the sandbox's owner (the uid that called
 * CreateSandbox, ForkTag or BranchSandbox) and root may read them: the D-Bus policy lets every
 * member of group warren call methods, and one user's program output is not another's to
 * read. Owners are kept in <state-dir>/owners/<id> (a restarted supervisor still knows them);
 * a sandbox with no record (internal, or re-adopted from an older version) is root's alone.
 * The records are written at create (sandbox.c) and removed with the sandbox (state-file.c).
 * Runs in warren-supervisor. */
#include "logs.h"
#include "fileio.h"
#include "log.h"
#include "owner.h"
#include "supervisor.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
logs_sender_uid(sd_bus_message *m, uid_t *uid)
{
	sd_bus_creds *creds = NULL;
	int r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID, &creds);
	if (r < 0)
		return r;
	r = sd_bus_creds_get_euid(creds, uid);
	sd_bus_creds_unref(creds);
	return r;
}

void
logs_owner_set(const char *id, sd_bus_message *m)
{
	if (!m || !sandbox_id_valid(id))
		return;
	int r = owner_record_set("owners", id, m);
	if (r < 0)
		log_warning_errno(
			r, "Sandbox %s: cannot record who created it (%m): it is root's alone", id);
}

void
logs_owner_remove(const char *id)
{
	if (sandbox_id_valid(id))
		owner_record_remove("owners", id);
}

uid_t
logs_owner_get(const char *id)
{
	return sandbox_id_valid(id) ? owner_record_get("owners", id) : 0;
}
