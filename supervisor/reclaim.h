/* Reclaim (reclaim.c, supervisor, a feature): the swap/zswap set-up through snapshotd and the
 * host's current figures, and a frozen sandbox's pages pushed out. */
#pragma once
#include "supervisor.h"

int reclaim_setup_call(struct supervisor *s, sd_bus_message *m, uint64_t swap_bytes, bool zswap,
		       const char *compressor, uint32_t max_pool_percent, bool undo);
void reclaim_after_freeze(struct sandbox *sb);
