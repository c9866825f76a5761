/* Exec in a sandbox, for the D-Bus edge (the methods are sandbox-dbus.c's, which parses and
 * checks them and calls exec_start): Exec(argv) and ExecWithOptions(argv, options), whose
 * timeout_ms is the caller's (1 ms - 10 min; 60 s by default). An exec never ends with a wrong
 * or silent status: the command's real status, or a named error --
 *   ExecTimedOut     it ran past its time limit and was killed (its output is lost with it);
 *   ExecInterrupted  the sandbox stopped or was destroyed while it ran;
 *   ExecFailed       it could not be run.
 * Output is bounded per stream at 16 MiB (the rest read and dropped by the spawner, said on
 * stderr) and the two together at EXEC_REPLY_MAX, under the bus's 32 MiB message limit: a
 * reply over it would be refused by dbus-daemon and the caller would get no answer at all.
 * While an exec runs, its sandbox is not frozen when idle (the freeze waits for the last exec
 * to end), and Freeze, Snapshot and BranchSandbox are refused with BadState: a checkpoint or a
 * freeze would end or stall the command. Runs in warren-supervisor. */
#include "exec.h"
#include "log.h"
#include "operation.h"
#include "netnsd-client.h"
#include "macro.h"
#include "supervisor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXEC_STREAM_MAX (16u << 20)
#define EXEC_REPLY_MAX (24u << 20)

struct exec_run {
	char id[SANDBOX_ID_LEN + 1];
	unsigned n;
	bool freeze_wanted; /* the gateway found it idle during an exec */
	struct exec_run *next;
};
static struct exec_run *runs;

static struct exec_run *
run_find(const char *id)
{
	for (struct exec_run *r = runs; r; r = r->next)
		if (!strcmp(r->id, id))
			return r;
	return NULL;
}

bool
exec_running(const struct sandbox *sb)
{
	struct exec_run *r = run_find(sb->id);
	return r && r->n > 0;
}

bool
exec_defer_idle_freeze(struct sandbox *sb)
{
	struct exec_run *r = run_find(sb->id);
	if (!r || !r->n)
		return false;
	r->freeze_wanted = true;
	log_info("Sandbox %s is idle but runs an exec: frozen when it ends", sb->id);
	return true;
}

static void
run_begin(const char *id)
{
	struct exec_run *r = run_find(id);
	if (!r) {
		r = calloc(1, sizeof *r);
		if (!r)
			return;
		snprintf(r->id, sizeof r->id, "%s", id);
		r->next = runs;
		runs = r;
	}
	r->n++;
}

static void
run_end(const char *id)
{
	struct exec_run *r = run_find(id);
	if (!r || --r->n > 0)
		return;
	bool freeze = r->freeze_wanted;
	for (struct exec_run **pp = &runs; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	free(r);
	struct sandbox *sb = sandbox_find(sup, id);
	if (freeze && sb && sb->state == SANDBOX_RUNNING) {
		log_info("Sandbox %s: its exec ended; freezing it (it was idle)", sb->id);
		freeze_request(sb, true, NULL);
	}
}

static int
read_memfd(int fd, size_t max, void **data, size_t *len)
{
	struct stat st;
	*data = NULL;
	*len = 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	size_t n = (size_t)st.st_size < max ? (size_t)st.st_size : max;
	*data = malloc(n + 1);
	if (!*data)
		return -ENOMEM;
	ssize_t k = pread(fd, *data, n, 0);
	*len = k > 0 ? (size_t)k : 0;
	return (size_t)st.st_size > max;
}

struct exec_ctx {
	struct operation *op;
	char id[SANDBOX_ID_LEN + 1];
	uint32_t timeout_ms;
};

static void
exec_reply_error(struct exec_ctx *c, const char *name, const char *fmt, const char *detail)
{
	operation_error(&c->op, name, fmt, c->id, detail);
}

static void
exec_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	struct exec_ctx *c = ud;
	int e = resp && resp->error ? resp->error : r;
	const char *msg = helper_message(resp, strerror(-e));
	if (e == -ETIMEDOUT && resp && resp->error) {
		char why[160];
		snprintf(why, sizeof why, "%u ms", c->timeout_ms);
		exec_reply_error(c, ERR("ExecTimedOut"),
				 "Exec in sandbox %s ran past its time limit of %s and was killed "
				 "(ExecWithOptions timeout_ms sets the limit)",
				 why);
	} else if (e == -ECONNABORTED)
		exec_reply_error(c, ERR("ExecInterrupted"),
				 "Exec in sandbox %s was interrupted: %s", msg);
	else if (e < 0 || !resp || resp->body_case != WARREN__V1__RESPONSE__BODY_EXEC || n_fds != 2)
		exec_reply_error(c, ERR("ExecFailed"), "Exec in sandbox %s failed: %s",
				 e < 0 ? msg : "no answer from netnsd");
	else {
		void *out = NULL, *err = NULL;
		size_t out_len = 0, err_len = 0;
		read_memfd(fds[0], EXEC_STREAM_MAX, &out, &out_len);
		/* the two streams together stay under the bus's message limit */
		size_t err_max = EXEC_REPLY_MAX - out_len < EXEC_STREAM_MAX
					 ? EXEC_REPLY_MAX - out_len
					 : EXEC_STREAM_MAX;
		int cut = read_memfd(fds[1], err_max, &err, &err_len);
		static const char note[] = "\nwarren: exec stderr cut: both streams together are "
					   "limited to 24 MiB\n";
		if (cut > 0 && err && err_len >= sizeof note - 1) /* err_max is 8 MiB at least */
			memcpy((char *)err + err_len - (sizeof note - 1), note, sizeof note - 1);
		sd_bus_message *reply = NULL;
		if (operation_new_return(c->op, &reply) >= 0 &&
		    sd_bus_message_append(reply, "i", resp->exec->status) >= 0 &&
		    sd_bus_message_append_array(reply, 'y', out ? out : "", out_len) >= 0 &&
		    sd_bus_message_append_array(reply, 'y', err ? err : "", err_len) >= 0)
			r = operation_send(&c->op, reply);
		else
			r = -ENOMEM;
		if (r < 0)
			exec_reply_error(c, ERR("ExecFailed"),
					 "Exec in sandbox %s: the answer could "
					 "not be sent: %s",
					 strerror(-r));
		sd_bus_message_unref(reply);
		free(out);
		free(err);
	}
	ipc_close_fds(fds, n_fds);
	run_end(c->id);
	operation_cancel(&c->op); /* answered above: only a lost answer is left */
	free(c);
}

int
exec_start(struct sandbox *sb, sd_bus_message *m, char **argv, uint32_t timeout_ms)
{
	struct exec_ctx *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->op = operation_new(m);
	if (!c->op) {
		free(c);
		return -ENOMEM;
	}
	snprintf(c->id, sizeof c->id, "%s", sb->id);
	c->timeout_ms = timeout_ms;
	Warren__V1__ExecRequest q = WARREN__V1__EXEC_REQUEST__INIT;
	q.id = sb->id;
	for (q.n_argv = 0; argv[q.n_argv]; q.n_argv++)
		;
	q.argv = argv;
	q.timeout_ms = timeout_ms;
	/* netnsd and the spawner answer a timed-out exec themselves; this bound is for a lost link
	 */
	int r = netnsd_client_exec(&q, timeout_ms + 30000, exec_done, c);
	if (r < 0) {
		operation_cancel(&c->op);
		free(c);
		return r;
	}
	run_begin(sb->id);
	return 0;
}
