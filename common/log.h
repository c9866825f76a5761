/* Logging to stderr with syslog priority prefixes ("<3>"), which journald reads. The *_errno
 * variants set errno for %m and return the negative error, so "return log_error_errno(r, ...)"
 * logs once at the edge and hands the value on. */
#pragma once
#include <stdbool.h>
#include <syslog.h>

void log_set_ident(const char *ident);
void log_set_debug(bool on);
/* Another destination for messages (the supervisor's journald sink): called with the priority,
 * the ident and the one-line message; returning <0 falls back to the stderr line. */
typedef int (*log_sink_fn)(int prio, const char *ident, const char *msg);
void log_set_sink(log_sink_fn sink);
int log_internal(int prio, int error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_debug(...) log_internal(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_internal(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_internal(LOG_ERR, 0, __VA_ARGS__)
#define log_error_errno(e, ...) log_internal(LOG_ERR, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal(LOG_WARNING, (e), __VA_ARGS__)
#define log_debug_errno(e, ...) log_internal(LOG_DEBUG, (e), __VA_ARGS__)
