/* A pending D-Bus call of the supervisor (warren-supervisor), answered exactly once: the one
 * type that holds a method call whose answer comes later (after a helper's reply), in place of a
 * bare sd_bus_message reference in each feature's own context struct. */
#pragma once
#include <stdarg.h>
#include <systemd/sd-bus.h>

struct operation;

/* A pending answer to m (referenced). NULL when m is NULL (nobody to answer: every function
 * below takes a NULL operation and does nothing) or on allocation failure. */
struct operation *operation_new(sd_bus_message *m);
/* The call, for reading its sender; NULL for a NULL operation. */
sd_bus_message *operation_message(const struct operation *op);

/* Each of these answers *op, frees it and sets *op to NULL; with *op NULL they do nothing. */
int operation_return(struct operation **op, const char *types, ...);
int operation_error(struct operation **op, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int operation_error_bus(struct operation **op, const sd_bus_error *e);
/* A method return to fill (for arrays); send it with operation_send. */
int operation_new_return(const struct operation *op, sd_bus_message **reply);
/* Sends reply. When the send fails *op stays pending so the caller can answer with an error. */
int operation_send(struct operation **op, sd_bus_message *reply);
/* Frees *op without answering: only when the method itself returns an error to sd-bus (the
 * call was never taken). */
void operation_cancel(struct operation **op);
