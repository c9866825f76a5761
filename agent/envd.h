/* The envd API server inside warren-agent (envd.c): E2B's in-sandbox agent API on port 49983.
 * It owns an epoll fd the agent's main loop polls with its own fds. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Listen on port (0.0.0.0) and make the epoll fd; base_env: the environment processes started
 * through the API begin with (the template's). Returns the epoll fd to poll, or -errno. */
int envd_init(uint16_t port, char **base_env);
/* Handle what is ready (the epoll fd polled readable), then timers. */
void envd_run(void);
/* The envd listening socket, for the main loop's poll() (it is not in envd's epoll set). */
int envd_listen_fd(void);
/* How long the main loop may sleep before envd_run must run for timers: -1 when nothing waits. */
int envd_timeout_ms(void);
/* A child was reaped: true when it was a process of the API (its stream ends now). */
bool envd_child_exited(pid_t pid, int status);
