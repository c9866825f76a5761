/* Sandbox console logs at the D-Bus edge, and who owns a sandbox. OpenLogs(options) answers
 * an fd: netnsd's spawner keeps each gVisor sandbox's console (its program's stdout and
 * stderr) in a bounded ring and hands out a sealed memfd of it, or with follow a pipe fed as
 * output comes (netnsd/spawner/log-ring.c). Only the sandbox's owner (the uid that called
 * CreateSandbox, ForkTag or BranchSandbox) and root may read them: the D-Bus policy lets every
 * member of group warren call methods, and one user's program output is not another's to
 * read. Owners are kept in <state-dir>/owners/<id> (a restarted supervisor still knows them);
 * a sandbox with no record (internal, or re-adopted from an older version) is root's alone.
 * Runs in warren-supervisor. */
#include "logs.h"
#include "dbus-input.h"
#include "fileio.h"
#include "log.h"
#include "operation.h"
#include "netnsd-client.h"
#include "macro.h"
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

struct open_logs_ctx {
	struct operation *op;
	char id[SANDBOX_ID_LEN + 1];
};

static void
open_logs_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct open_logs_ctx *c = ud;
	if (r == 0 && resp && resp->body_case == WARREN__V1__RESPONSE__BODY_OPEN_LOGS &&
	    n_fds == 1) {
		if (resp->open_logs->dropped)
			log_debug("Sandbox %s: console log dropped %llu bytes so far", c->id,
				  (unsigned long long)resp->open_logs->dropped);
		operation_return(&c->op, "h", fds[0]);
	} else {
		if (r == -EOPNOTSUPP || (resp && resp->error == -EOPNOTSUPP))
			operation_error(&c->op, ERR("NotSupported"),
					"Sandbox %s runs in a microVM, whose console is not kept",
					c->id);
		else
			operation_error(&c->op, ERR("LogsUnavailable"), "Logs of sandbox %s: %s",
					c->id, helper_message(resp, strerror(-r)));
	}
	ipc_close_fds(fds, n_fds);
	free(c);
}

int
method_open_logs(sd_bus_message *m, void *ud, sd_bus_error *err)
{
	int r = dbus_input_check(m, err);
	if (r < 0)
		return r;
	struct sandbox *sb = ud;
	bool follow = false;
	r = sd_bus_message_enter_container(m, 'a', "{sv}");
	if (r < 0)
		return r;
	while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
		const char *key;
		if ((r = sd_bus_message_read(m, "s", &key)) < 0)
			return r;
		if (!strcmp(key, "follow")) {
			int b;
			if ((r = sd_bus_message_read(m, "v", "b", &b)) < 0)
				return sd_bus_error_setf(err, ERR("InvalidArgument"),
							 "follow must be a boolean");
			follow = b;
		} else
			return sd_bus_error_setf(err, ERR("InvalidArgument"),
						 "Unknown option '%s' (follow)", key);
		if ((r = sd_bus_message_exit_container(m)) < 0)
			return r;
	}
	if (r < 0 || (r = sd_bus_message_exit_container(m)) < 0)
		return r;
	if ((r = owner_check(m, sb, "read the logs of", err)) < 0)
		return r;
	/* an exited or failed sandbox's log is kept by the spawner after its runtime is gone */
	if (sb->state == SANDBOX_CREATING || sb->state == SANDBOX_DESTROYING ||
	    (!sb->runtime_alive && sb->state != SANDBOX_EXITED && sb->state != SANDBOX_FAILED))
		return sd_bus_error_setf(err, ERR("BadState"),
					 "Sandbox %s has no runtime (%s): no logs to read", sb->id,
					 sandbox_state_to_string(sb->state));
	struct open_logs_ctx *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->op = operation_new(m);
	if (!c->op) {
		free(c);
		return -ENOMEM;
	}
	snprintf(c->id, sizeof c->id, "%s", sb->id);
	Warren__V1__OpenLogsRequest q = WARREN__V1__OPEN_LOGS_REQUEST__INIT;
	q.id = sb->id;
	q.follow = follow;
	r = netnsd_client_open_logs(&q, 10000, open_logs_done, c);
	if (r < 0) {
		operation_cancel(&c->op);
		free(c);
		return sd_bus_error_setf(err, ERR("HelperUnavailable"), "netnsd: %s", strerror(-r));
	}
	return 1;
}
