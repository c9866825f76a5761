/* warrenctl cp and exec -i/-t: the commands that go through a sandbox's agent (ctl-cp.c,
 * ctl-exec-tty.c); warrenctl.c finds the sandbox, its agent token and the gateway. */
#pragma once
#include "agent-client.h"

#include <stdbool.h>

/* cp SRC DST: exactly one side is ID:PATH (podman cp's syntax: a colon before any '/'). */
struct cp_spec {
	bool to_sandbox;
	char id[64];
	const char *inside; /* the path in the sandbox */
	const char *host;   /* the host path, "-" for stdin/stdout */
};

/* 0, or -EINVAL with a message printed. */
int ctl_cp_parse(const char *src, const char *dst, struct cp_spec *s);
/* warrenctl's exit status; messages printed. */
int ctl_cp_run(const struct agent_target *t, const struct cp_spec *s);

/* exec -i/-t: argv through Process/Start; returns the process's exit status (or 1/255 with a
 * message printed). */
int ctl_exec_agent(const struct agent_target *t, char **argv, bool interactive, bool tty);
