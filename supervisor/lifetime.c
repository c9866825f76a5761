/* Sandbox lifetimes in the supervisor: SetTimeout gives a sandbox an end (realtime µs) and an
 * action; when it comes the sandbox is destroyed ("kill") or frozen ("pause", the freeze that
 * Freeze() and E2B's pause use, reclaim included). A feature above sandbox.c: it calls
 * sandbox_destroy and freeze_request, and learns that a sandbox is gone only through the
 * forgotten hook main.c registers (sandbox_hooks), never from sandbox.c directly.
 *
 * One libevent timer per sandbox with a lifetime, not one for the nearest deadline: libevent
 * keeps its timers in a min-heap already, so this costs O(log n) per change and no rescan of
 * every lifetime when one is set, cleared or fires; and a lifetime that must wait (its sandbox
 * is starting or being snapshotted, netnsd is not re-adopted yet) re-arms only itself.
 *
 * Each lifetime is also <state-dir>/lifetimes/<id>, one line "<end-usec> <action>", replaced
 * atomically, so a supervisor restarted with kill -9 re-arms it after re-adoption; one whose end
 * passed while it was down fires at once. What is read back is checked as if it came from a
 * stranger (owner, mode, size, exact format, bounds): a record that fails is removed, and its
 * sandbox has no lifetime. */
#include "lifetime.h"
#include "lifetime-record.h"
#include "clock.h"
#include "exec.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "names.h"
#include "state-file.h"
#include "supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIFETIME_DIR "lifetimes"
#define RETRY_USEC (1000ull * 1000) /* a lifetime that cannot act yet looks again then */

struct lifetime {
	char id[SANDBOX_ID_LEN + 1];
	uint64_t end_usec; /* realtime */
	enum lifetime_action action;
	struct event *timer;
	struct lifetime *next;
};

static struct lifetime *lifetimes;

static struct lifetime *
lifetime_find(const char *id)
{
	for (struct lifetime *l = lifetimes; l; l = l->next)
		if (!strcmp(l->id, id))
			return l;
	return NULL;
}

static void
record_path(const char *id, char *path, size_t size)
{
	snprintf(path, size, "%s/" LIFETIME_DIR "/%s", sup->state_dir, id);
}

static void
emit_changed(const char *id)
{
	struct sandbox *sb = sandbox_find(sup, id);
	if (sb && sandbox_visible(sb))
		sd_bus_emit_properties_changed(sup->bus, sb->path, SANDBOX_IFACE, "EndUSec",
					       "TimeoutAction", NULL);
}

/* Timer and record gone; announced when emit (the sandbox itself stays). */
static void
lifetime_drop(struct lifetime *l, bool emit)
{
	char path[512], id[SANDBOX_ID_LEN + 1];
	snprintf(id, sizeof id, "%s", l->id);
	record_path(id, path, sizeof path);
	if (unlink(path) < 0 && errno != ENOENT)
		log_warning_errno(-errno, "Sandbox %s: cannot remove its lifetime record: %m", id);
	for (struct lifetime **pp = &lifetimes; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	event_free(l->timer);
	free(l);
	if (emit)
		emit_changed(id);
}

static void
arm_in(struct lifetime *l, uint64_t usec)
{
	struct timeval tv = {(time_t)(usec / 1000000), (suseconds_t)(usec % 1000000)};
	evtimer_add(l->timer, &tv);
}

static void
arm(struct lifetime *l)
{
	uint64_t now = realtime_usec();
	arm_in(l, l->end_usec > now ? l->end_usec - now : 0);
}

static void
lifetime_fire(evutil_socket_t fd, short what, void *arg)
{
	struct lifetime *l = arg;
	/* libevent counts on the monotonic clock, the end is realtime: if the wall clock went back
	 * meanwhile, wait for the rest */
	if (realtime_usec() + 1000 < l->end_usec) {
		arm(l);
		return;
	}
	struct sandbox *sb = sandbox_find(sup, l->id);
	if (!sb) {
		lifetime_drop(l, false);
		return;
	}
	/* before netnsd's sandboxes are re-adopted, a loaded record's runtime is not known */
	if (!sup->readopted) {
		arm_in(l, RETRY_USEC);
		return;
	}
	if (sb->state == SANDBOX_DESTROYING)
		return; /* its forgotten hook drops the lifetime */
	if (l->action == LIFETIME_KILL) {
		/* the record stays until the sandbox is forgotten: a restart before that finds
		 * the sandbox's record and this one, and kills it again */
		log_info("Sandbox %s: its lifetime ended: destroying it", sb->id);
		sandbox_destroy(sb);
		return;
	}
	switch (sb->state) {
	case SANDBOX_RUNNING:
		/* Freeze() refuses while an exec runs (its answer would wait on a frozen
		 * sandbox); the lifetime waits for the exec's end, bounded by its time limit */
		if (exec_running(sb)) {
			arm_in(l, RETRY_USEC);
			return;
		}
		log_info("Sandbox %s: its lifetime ended: pausing it", sb->id);
		freeze_request(sb, true, NULL);
		break;
	case SANDBOX_FROZEN:
		log_info("Sandbox %s: its lifetime ended; it is paused already", sb->id);
		break;
	case SANDBOX_CREATING:
	case SANDBOX_STARTING:
	case SANDBOX_SNAPSHOTTING:
		arm_in(l, RETRY_USEC); /* pausing it now would race its start or restore */
		return;
	default: /* exited, failed: nothing left to pause */
		break;
	}
	/* a paused sandbox has no lifetime: a new one is set when it is resumed */
	lifetime_drop(l, true);
}

static struct lifetime *
lifetime_new(const char *id, uint64_t end_usec, enum lifetime_action action)
{
	struct lifetime *l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	l->timer = evtimer_new(sup->dc.base, lifetime_fire, l);
	if (!l->timer) {
		free(l);
		return NULL;
	}
	snprintf(l->id, sizeof l->id, "%s", id);
	l->end_usec = end_usec;
	l->action = action;
	l->next = lifetimes;
	lifetimes = l;
	return l;
}

static int
record_write(const char *id, uint64_t end_usec, enum lifetime_action action)
{
	char path[512], buf[LIFETIME_RECORD_MAX];
	snprintf(path, sizeof path, "%s/" LIFETIME_DIR, sup->state_dir);
	int r = mkdir_p(path, 0700);
	if (r < 0)
		return r;
	record_path(id, path, sizeof path);
	int n = lifetime_record_format(buf, sizeof buf, end_usec, action);
	/* not fsynced, as the sandbox records (state-file.c): after a power loss no sandbox is
	 * left to expire */
	return file_write_atomic(path, buf, (size_t)n, 0600, false);
}

int
lifetime_set(struct sandbox *sb, uint64_t seconds, const char *action, sd_bus_error *err)
{
	if (seconds > LIFETIME_MAX_SECONDS)
		return sd_bus_error_setf(
			err, ERR("InvalidArgument"),
			"A lifetime is at most %llu seconds (30 days); 0 clears it",
			LIFETIME_MAX_SECONDS);
	int a = lifetime_action_from_string(action);
	if (a < 0 && !(seconds == 0 && !action[0]))
		return sd_bus_error_setf(
			err, ERR("InvalidArgument"),
			"The action at the end of a lifetime is 'kill' or 'pause'");
	if (sb->state == SANDBOX_DESTROYING)
		return sd_bus_error_setf(err, ERR("BadState"), "Sandbox %s is being destroyed",
					 sb->id);
	struct lifetime *l = lifetime_find(sb->id);
	if (seconds == 0) {
		if (l) {
			log_info("Sandbox %s: lifetime cleared", sb->id);
			lifetime_drop(l, true);
		}
		return 0;
	}
	uint64_t end = realtime_usec() + seconds * 1000000ull;
	/* on disk first: a lifetime that would not survive a restart is not given */
	int r = record_write(sb->id, end, (enum lifetime_action)a);
	if (r < 0) {
		log_error_errno(r, "Sandbox %s: cannot record its lifetime: %m", sb->id);
		return sd_bus_error_set_errnof(err, -r, "Cannot record the lifetime of %s: %s",
					       sb->id, strerror(-r));
	}
	if (!l && !(l = lifetime_new(sb->id, end, (enum lifetime_action)a))) {
		char path[512];
		record_path(sb->id, path, sizeof path);
		unlink(path);
		return sd_bus_error_set_errno(err, ENOMEM);
	}
	l->end_usec = end;
	l->action = (enum lifetime_action)a;
	arm(l);
	log_info("Sandbox %s: lifetime %llu s, then %s", sb->id, (unsigned long long)seconds,
		 lifetime_action_to_string(l->action));
	emit_changed(sb->id);
	return 0;
}

uint64_t
lifetime_end_usec(const char *id)
{
	struct lifetime *l = lifetime_find(id);
	return l ? l->end_usec : 0;
}

const char *
lifetime_action_of(const char *id)
{
	struct lifetime *l = lifetime_find(id);
	return l ? lifetime_action_to_string(l->action) : "";
}

void
lifetime_forget(const struct sandbox *sb)
{
	struct lifetime *l = lifetime_find(sb->id);
	if (l)
		lifetime_drop(l, false);
}

static int
record_read(int dfd, const char *name, uint64_t now, uint64_t *end, int *action)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	/* only a file this supervisor wrote: its own, regular, not writable by others, small */
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0022) ||
	    st.st_size <= 0 || st.st_size >= LIFETIME_RECORD_MAX)
		return -EPERM;
	char buf[LIFETIME_RECORD_MAX];
	ssize_t k = read(fd, buf, sizeof buf - 1);
	if (k < 0)
		return -errno;
	if (k != st.st_size || memchr(buf, 0, (size_t)k))
		return -EBADMSG;
	buf[k] = 0;
	return lifetime_record_parse(buf, (size_t)k, now, end, action);
}

struct lifetime_load {
	struct supervisor *s;
	uint64_t now;
};

static void
lifetime_record_load(int dfd, const char *name, const char *path, void *ctx)
{
	struct lifetime_load *ll = ctx;
	uint64_t now = ll->now;
	struct sandbox *sb = sandbox_id_valid(name) ? sandbox_find(ll->s, name) : NULL;
	if (!sb) {
		log_info("Removing lifetime record %s: no such sandbox", path);
		unlinkat(dfd, name, 0);
		return;
	}
	uint64_t end = 0;
	int action = 0;
	int r = record_read(dfd, name, now, &end, &action);
	if (r < 0) {
		log_warning_errno(r,
				  "Sandbox %s: lifetime record not valid (%m): removed, "
				  "the sandbox has no lifetime",
				  sb->id);
		unlinkat(dfd, name, 0);
		return;
	}
	struct lifetime *l = lifetime_new(sb->id, end, (enum lifetime_action)action);
	if (!l) {
		log_error_errno(-ENOMEM, "Sandbox %s: lifetime not re-armed: %m", sb->id);
		return;
	}
	arm(l);
	log_info("Sandbox %s: lifetime re-armed, %s in %lld s", sb->id,
		 lifetime_action_to_string(l->action),
		 end > now ? (long long)((end - now) / 1000000) : 0LL);
}

void
lifetime_load(struct supervisor *s)
{
	struct lifetime_load ll = {s, realtime_usec()};
	state_file_each_record(s->state_dir, LIFETIME_DIR, lifetime_record_load, &ll);
}
