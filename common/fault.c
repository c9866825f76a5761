/* Test-only fault points (see fault.h); runs in whichever daemon calls fault_point(). */
#include "fault.h"

#include "log.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

void
fault_point(const char *step)
{
	/* read once: the environment is the daemon's start-up environment */
	static const char *want;
	static int read_env;
	if (!read_env) {
		want = getenv("WARREN_FAULT");
		read_env = 1;
	}
	if (!want || strcmp(want, step))
		return;
	log_error("fault point %s reached (WARREN_FAULT): killing myself with SIGKILL", step);
	raise(SIGKILL);
}
