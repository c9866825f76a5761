/* stderr logger with syslog priority prefixes; used by every Warren process. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const char *log_ident = "warren";
static bool log_debug_on;

void
log_set_ident(const char *ident)
{
	log_ident = ident;
}

void
log_set_debug(bool on)
{
	log_debug_on = on;
}

int
log_internal(int prio, int error, const char *fmt, ...)
{
	int e = error < 0 ? -error : error;
	if (prio == LOG_DEBUG && !log_debug_on)
		return -e;
	char buf[1024];
	va_list ap;
	errno = e;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "<%d>%s: %s\n", prio, log_ident, buf);
	return -e;
}
