/* The IPv4 subnets of the host's own interfaces: its LAN and bridges, which a sandbox whose
 * egress is "on" may not reach (netnsd adds them to its deny set when it starts), and which an
 * E2B client's allow-list may therefore not name either (e2b-api reads them when it starts). */
#pragma once
#include <stddef.h>

#include "egress-policy.h"

/* Up to max subnets (address with host bits cleared, prefix) of the interfaces whose name does
 * not start with skip_prefix ("" skips none), into out; their count (0 if none can be read). */
size_t host_subnets4(const char *skip_prefix, struct egress_entry *out, size_t max);
