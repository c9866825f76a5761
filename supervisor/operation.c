/* Pending D-Bus calls answered exactly once (operation.h): every answer frees the operation and
 * clears the caller's pointer, so a second answer or a leak shows as a NULL, not a double reply.
 * Runs in warren-supervisor, below every feature. */
#include "operation.h"

#include <errno.h>
#include <stdlib.h>

struct operation {
	sd_bus_message *m;
};

struct operation *
operation_new(sd_bus_message *m)
{
	if (!m)
		return NULL;
	struct operation *op = calloc(1, sizeof *op);
	if (!op)
		return NULL;
	op->m = sd_bus_message_ref(m);
	return op;
}

sd_bus_message *
operation_message(const struct operation *op)
{
	return op ? op->m : NULL;
}

void
operation_cancel(struct operation **op)
{
	if (!*op)
		return;
	sd_bus_message_unref((*op)->m);
	free(*op);
	*op = NULL;
}

int
operation_return(struct operation **op, const char *types, ...)
{
	if (!*op)
		return 0;
	va_list ap;
	va_start(ap, types);
	int r = sd_bus_reply_method_returnv((*op)->m, types, ap);
	va_end(ap);
	operation_cancel(op);
	return r;
}

int
operation_error_bus(struct operation **op, const sd_bus_error *e)
{
	if (!*op)
		return 0;
	int r = sd_bus_reply_method_error((*op)->m, e);
	operation_cancel(op);
	return r;
}

int
operation_error(struct operation **op, const char *name, const char *fmt, ...)
{
	if (!*op)
		return 0;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	va_list ap;
	va_start(ap, fmt);
	sd_bus_error_setfv(&e, name, fmt, ap);
	va_end(ap);
	int r = operation_error_bus(op, &e);
	sd_bus_error_free(&e);
	return r;
}

int
operation_new_return(const struct operation *op, sd_bus_message **reply)
{
	if (!op)
		return -ENOENT;
	return sd_bus_message_new_method_return(op->m, reply);
}

int
operation_send(struct operation **op, sd_bus_message *reply)
{
	if (!*op)
		return 0;
	int r = sd_bus_send(NULL, reply, NULL);
	if (r >= 0)
		operation_cancel(op);
	return r;
}
