/* Host conntrack scrub for a released slot (ctnetlink, no conntrack(8) process). */
#pragma once
#include <stdint.h>
/* Delete every IPv4 conntrack entry whose original source or destination is addr (network
 * order). Returns how many were deleted. */
int conntrack_flush_addr(uint32_t addr);
