/* Hooks into the supervisor's metrics (metrics.c): what the state machine reports as it goes. */
#pragma once
#include <stdint.h>

struct sandbox;

/* A scrape waits at the gateway (MetricsNeeded event): push our part for seq. */
void metrics_on_needed(uint64_t seq);
/* The sandbox answers: a create, a restore or a snapshotted parent back (sandbox_ready). */
void metrics_sandbox_ready(const struct sandbox *sb);
/* A fork job answered with at least one child, started at t0 (monotonic usec). */
void metrics_fork_done(uint64_t t0);
/* An image sealed, its checkpoint begun at t0. */
void metrics_snapshot_done(const char *backend, uint64_t t0);
/* A reclaim after a freeze took this much out. */
void metrics_reclaimed(uint64_t bytes);
