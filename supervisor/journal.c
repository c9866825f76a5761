/* The supervisor's log lines to journald with structured fields, where journald runs: a line
 * about a sandbox ("Sandbox <id>: ...", the form every such message has) carries SANDBOX_ID=,
 * TEMPLATE= and BACKEND= (`journalctl SANDBOX_ID=<id>`, `journalctl TEMPLATE=web`). Used only
 * when stderr is the journal (systemd sets JOURNAL_STREAM to its device:inode); otherwise, and
 * whenever a send fails, the line goes to stderr as before (warren-launch keeps those in
 * 0640 files). Runs in warren-supervisor. */
#include "log.h"
#include "names.h"
#include "supervisor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

/* The sandbox a message is about: "Sandbox <12 hex>" at its start. */
static const struct sandbox *
message_sandbox(const char *msg, char id[SANDBOX_ID_LEN + 1])
{
	id[0] = 0;
	if (strncmp(msg, "Sandbox ", 8))
		return NULL;
	memcpy(id, msg + 8, SANDBOX_ID_LEN);
	id[SANDBOX_ID_LEN] = 0;
	if (strlen(msg + 8) < SANDBOX_ID_LEN || !sandbox_id_valid(id))
		return NULL;
	return sup ? sandbox_find(sup, id) : NULL;
}

static int
journal_sink(int prio, const char *ident, const char *msg)
{
	char id[SANDBOX_ID_LEN + 1];
	const struct sandbox *sb = message_sandbox(msg, id);
	int r;
	if (id[0] && sandbox_id_valid(id))
		r = sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", prio,
				    "SYSLOG_IDENTIFIER=warren-%s", ident, "SANDBOX_ID=%s", id,
				    "TEMPLATE=%s", sb ? sb->template_name : "", "BACKEND=%s",
				    sb ? backend_to_string(sb->backend) : "", NULL);
	else
		r = sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", prio,
				    "SYSLOG_IDENTIFIER=warren-%s", ident, NULL);
	return r < 0 ? r : 0;
}

/* stderr is the journal's stream when JOURNAL_STREAM names its device and inode. */
static bool
stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st) < 0)
		return false;
	return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

void
journal_init(bool force)
{
	if (force || stderr_is_journal())
		log_set_sink(journal_sink);
}
