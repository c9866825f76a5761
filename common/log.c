/* stderr logger with syslog priority prefixes; used by every Warren process. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const char *log_ident = "warren";
static bool log_debug_on;
static log_sink_fn log_sink;

void
log_set_sink(log_sink_fn sink)
{
	log_sink = sink;
}

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
	char buf[1024], out[4 * sizeof buf];
	va_list ap;
	errno = e;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	/* One message, one line: messages carry peers' strings (a path read back from an fd a
	 * compromised supervisor sent, a guest's last output), and a newline in one would start a
	 * line of the peer's choosing -- under journald an entry with its own "<N>" priority. */
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)buf; *p; p++)
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			o += (size_t)snprintf(out + o, sizeof out - o, "\\x%02x", *p);
		else
			out[o++] = (char)*p;
	out[o] = 0;
	if (log_sink && log_sink(prio, log_ident, out) == 0)
		return -e;
	fprintf(stderr, "<%d>%s: %s\n", prio, log_ident, out);
	return -e;
}
