/* sd_notify and socket activation without linking libsystemd into the helpers. */
#pragma once
int notify_send(const char *state);
/* The first fd passed by socket activation (LISTEN_PID/LISTEN_FDS), or -1. */
int notify_listen_fd(void);
