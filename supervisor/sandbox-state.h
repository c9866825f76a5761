/* The sandbox state machine of warren-supervisor as data (sandbox-state.c): the states, the
 * events that move a sandbox between them, and the one table that says which state accepts
 * which event. Pure: no D-Bus, no helpers; sandbox.c applies a transition, the unit test walks
 * every pair. */
#pragma once

enum sandbox_state {
	SANDBOX_CREATING,
	SANDBOX_STARTING,
	SANDBOX_RUNNING,
	SANDBOX_FROZEN,
	SANDBOX_EXITED,
	SANDBOX_FAILED,
	SANDBOX_DESTROYING,
	SANDBOX_SNAPSHOTTING,
	_SANDBOX_STATE_MAX,
};

/* What happens to a sandbox; each names the code path that raises it (all in sandbox.c unless
 * said otherwise). */
enum sandbox_event {
	SANDBOX_EVENT_CLAIMED,		/* claim_done: netnsd gave a slot, the sandbox is visible */
	SANDBOX_EVENT_READY,		/* sandbox_ready: the gateway's probe answered, or a
					 * restored microVM's agent did */
	SANDBOX_EVENT_FAILED,		/* sandbox_fail: could not start, killed, runtime lost */
	SANDBOX_EVENT_EXITED,		/* sandbox_fail: its program ended with status 0 */
	SANDBOX_EVENT_DESTROY,		/* sandbox_destroy */
	SANDBOX_EVENT_FROZEN,		/* freeze_done: netnsd froze it */
	SANDBOX_EVENT_THAWED,		/* freeze_done: netnsd thawed it */
	SANDBOX_EVENT_SNAPSHOT_BEGIN,	/* sandbox_snapshot_begin (snapshot.c's snapshot_start) */
	SANDBOX_EVENT_SNAPSHOT_ABORTED, /* sandbox_snapshot_aborted: over without a restore */
	SANDBOX_EVENT_RESTORE,		/* sandbox_restore: restored from its image, starting */
	SANDBOX_EVENT_READOPT_FROZEN,	/* readopt.c: after a restart, netnsd runs it frozen */
	SANDBOX_EVENT_READOPT_ALIVE,	/* readopt.c: after a restart, netnsd runs it */
	_SANDBOX_EVENT_MAX,
};

const char *sandbox_state_to_string(enum sandbox_state s);
int sandbox_state_from_string(const char *s);
const char *sandbox_event_to_string(enum sandbox_event e);
int sandbox_event_from_string(const char *s);
/* The state a sandbox in state s moves to on event e, or -EINVAL: s does not accept e. */
int sandbox_state_next(enum sandbox_state s, enum sandbox_event e);
