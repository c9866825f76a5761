/* sd_notify and socket activation without linking libsystemd into the helpers. */
#pragma once
#include <stdint.h>

int notify_send(const char *state);
/* The first fd passed by socket activation (LISTEN_PID/LISTEN_FDS), or -1. */
int notify_listen_fd(void);
/* systemd's watchdog interval for this process (WATCHDOG_USEC, WATCHDOG_PID naming us or
 * unset), or 0 when none is asked for. */
uint64_t notify_watchdog_usec(void);
