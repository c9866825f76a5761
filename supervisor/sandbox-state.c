/* The sandbox state x event table of warren-supervisor (sandbox-state.h). Derived from what
 * sandbox.c and readopt.c did before the table existed (issue 14), then cut: the transitions
 * only a late or racing event reached (an end after the first end, a restore of a sandbox that
 * had ended or been re-adopted during its snapshot, an end before the claim) are no longer made;
 * sandbox.c ignores those events before asking the table. Anything not here is refused by
 * sandbox_transition and logged. */
#include "sandbox-state.h"
#include "macro.h"

#include <errno.h>
#include <string.h>

static const char *const state_names[] = {
	[SANDBOX_CREATING] = "creating",     [SANDBOX_STARTING] = "starting",
	[SANDBOX_RUNNING] = "running",	     [SANDBOX_FROZEN] = "frozen",
	[SANDBOX_EXITED] = "exited",	     [SANDBOX_FAILED] = "failed",
	[SANDBOX_DESTROYING] = "destroying", [SANDBOX_SNAPSHOTTING] = "snapshotting",
};

static const char *const event_names[] = {
	[SANDBOX_EVENT_CLAIMED] = "claimed",
	[SANDBOX_EVENT_READY] = "ready",
	[SANDBOX_EVENT_FAILED] = "failed",
	[SANDBOX_EVENT_EXITED] = "exited",
	[SANDBOX_EVENT_DESTROY] = "destroy",
	[SANDBOX_EVENT_FROZEN] = "frozen",
	[SANDBOX_EVENT_THAWED] = "thawed",
	[SANDBOX_EVENT_SNAPSHOT_BEGIN] = "snapshot-begin",
	[SANDBOX_EVENT_SNAPSHOT_ABORTED] = "snapshot-aborted",
	[SANDBOX_EVENT_RESTORE] = "restore",
	[SANDBOX_EVENT_READOPT_FROZEN] = "readopt-frozen",
	[SANDBOX_EVENT_READOPT_ALIVE] = "readopt-alive",
};

/* next[state][event]: the new state + 1; 0 is "refused" (so unlisted pairs are refused). */
#define TO(s) ((unsigned char)((s) + 1))
static const unsigned char next[_SANDBOX_STATE_MAX][_SANDBOX_EVENT_MAX] = {
	[SANDBOX_CREATING] =
		{
			[SANDBOX_EVENT_CLAIMED] = TO(SANDBOX_STARTING),
			/* no FAILED, EXITED: nothing runs before the claim (sandbox_fail ignores
			   it) */
			/* RemoveTemplate, a warm create given up: forgotten at once */
			[SANDBOX_EVENT_DESTROY] = TO(SANDBOX_DESTROYING),
		},
	[SANDBOX_STARTING] =
		{
			[SANDBOX_EVENT_READY] = TO(SANDBOX_RUNNING),
			[SANDBOX_EVENT_FAILED] = TO(SANDBOX_FAILED),
			[SANDBOX_EVENT_EXITED] = TO(SANDBOX_EXITED),
			[SANDBOX_EVENT_DESTROY] = TO(SANDBOX_DESTROYING),
			[SANDBOX_EVENT_READOPT_FROZEN] = TO(SANDBOX_FROZEN),
			[SANDBOX_EVENT_READOPT_ALIVE] = TO(SANDBOX_STARTING),
		},
	[SANDBOX_RUNNING] =
		{
			[SANDBOX_EVENT_FAILED] = TO(SANDBOX_FAILED),
			[SANDBOX_EVENT_EXITED] = TO(SANDBOX_EXITED),
			[SANDBOX_EVENT_DESTROY] = TO(SANDBOX_DESTROYING),
			[SANDBOX_EVENT_FROZEN] = TO(SANDBOX_FROZEN),
			/* a Thaw answered while it runs: no change */
			[SANDBOX_EVENT_THAWED] = TO(SANDBOX_RUNNING),
			[SANDBOX_EVENT_SNAPSHOT_BEGIN] = TO(SANDBOX_SNAPSHOTTING),
			[SANDBOX_EVENT_READOPT_FROZEN] = TO(SANDBOX_FROZEN),
			/* READOPT_ALIVE: readopt.c leaves a running sandbox as it is */
		},
	[SANDBOX_FROZEN] =
		{
			[SANDBOX_EVENT_FAILED] = TO(SANDBOX_FAILED),
			[SANDBOX_EVENT_EXITED] = TO(SANDBOX_EXITED),
			[SANDBOX_EVENT_DESTROY] = TO(SANDBOX_DESTROYING),
			[SANDBOX_EVENT_FROZEN] = TO(SANDBOX_FROZEN),
			[SANDBOX_EVENT_THAWED] = TO(SANDBOX_RUNNING),
			[SANDBOX_EVENT_READOPT_FROZEN] = TO(SANDBOX_FROZEN),
			/* netnsd runs it thawed: the gateway probes it again */
			[SANDBOX_EVENT_READOPT_ALIVE] = TO(SANDBOX_STARTING),
		},
	/* EXITED and FAILED: the first end stands (sandbox_fail ignores later ones), and nothing
	 * restores into the slot they gave back (sandbox_restore acts in SNAPSHOTTING only) */
	[SANDBOX_EXITED] =
		{
			[SANDBOX_EVENT_DESTROY] = TO(SANDBOX_DESTROYING),
			/* a runtime that came up while its answer was lost (readopt.c) */
			[SANDBOX_EVENT_READOPT_FROZEN] = TO(SANDBOX_FROZEN),
			[SANDBOX_EVENT_READOPT_ALIVE] = TO(SANDBOX_STARTING),
		},
	[SANDBOX_FAILED] =
		{
			[SANDBOX_EVENT_DESTROY] = TO(SANDBOX_DESTROYING),
			[SANDBOX_EVENT_READOPT_FROZEN] = TO(SANDBOX_FROZEN),
			[SANDBOX_EVENT_READOPT_ALIVE] = TO(SANDBOX_STARTING),
		},
	/* DESTROYING accepts nothing: sandbox_destroy ignores a second Destroy before asking */
	[SANDBOX_DESTROYING] = {},
	[SANDBOX_SNAPSHOTTING] =
		{
			[SANDBOX_EVENT_FAILED] = TO(SANDBOX_FAILED),
			[SANDBOX_EVENT_EXITED] = TO(SANDBOX_EXITED),
			[SANDBOX_EVENT_DESTROY] = TO(SANDBOX_DESTROYING),
			[SANDBOX_EVENT_SNAPSHOT_ABORTED] = TO(SANDBOX_RUNNING),
			[SANDBOX_EVENT_RESTORE] = TO(SANDBOX_STARTING),
			[SANDBOX_EVENT_READOPT_FROZEN] = TO(SANDBOX_FROZEN),
			[SANDBOX_EVENT_READOPT_ALIVE] = TO(SANDBOX_STARTING),
		},
};

const char *
sandbox_state_to_string(enum sandbox_state s)
{
	return (unsigned)s < ELEMENTSOF(state_names) ? state_names[s] : "unknown";
}

int
sandbox_state_from_string(const char *s)
{
	for (size_t i = 0; i < ELEMENTSOF(state_names); i++)
		if (!strcmp(state_names[i], s))
			return (int)i;
	return -EINVAL;
}

const char *
sandbox_event_to_string(enum sandbox_event e)
{
	return (unsigned)e < ELEMENTSOF(event_names) ? event_names[e] : "unknown";
}

int
sandbox_event_from_string(const char *s)
{
	for (size_t i = 0; i < ELEMENTSOF(event_names); i++)
		if (!strcmp(event_names[i], s))
			return (int)i;
	return -EINVAL;
}

int
sandbox_state_next(enum sandbox_state s, enum sandbox_event e)
{
	if ((unsigned)s >= _SANDBOX_STATE_MAX || (unsigned)e >= _SANDBOX_EVENT_MAX || !next[s][e])
		return -EINVAL;
	return next[s][e] - 1;
}
