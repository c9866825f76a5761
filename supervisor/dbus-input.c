/* The first thing every D-Bus method of the supervisor does: check every string it was sent.
 * A newline in an AddTemplate argument once wrote keys of its own into the saved template; no
 * string from D-Bus may hold a control character (C0, DEL, C1) or be longer than
 * DBUS_STRING_MAX, whatever the method does with it, so a later use (a record, a log line, a
 * helper request) cannot be surprised. Names, tags and ids get their own stricter checks where
 * they are read. */
#include "dbus-input.h"
#include "bus-errors.h"
#include "names.h"

#include <errno.h>
#include <string.h>

struct walk {
	unsigned arg;	  /* top-level argument, from 1 */
	unsigned strings; /* strings seen */
};

static int
walk_fail(sd_bus_error *err, const struct walk *w, int r, size_t at)
{
	if (r == -E2BIG)
		return sd_bus_error_setf(err, ERR("InvalidArgument"),
					 "Argument %u holds a string longer than %d bytes; Warren "
					 "refuses longer strings",
					 w->arg, DBUS_STRING_MAX);
	if (r == -EMLINK)
		return sd_bus_error_setf(err, ERR("InvalidArgument"),
					 "Argument %u holds more than %d strings", w->arg,
					 DBUS_STRINGS_MAX);
	return sd_bus_error_setf(err, ERR("InvalidArgument"),
				 "Argument %u holds a string with a control character at byte %zu "
				 "(newline, tab, escape... are refused in every string sent to "
				 "Warren; a multi-line script can use ';')",
				 w->arg, at);
}

static int
walk(sd_bus_message *m, struct walk *w, unsigned depth, sd_bus_error *err)
{
	for (;;) {
		char type;
		const char *contents;
		int r = sd_bus_message_peek_type(m, &type, &contents);
		if (r < 0)
			return r;
		if (r == 0)
			return 0; /* end of this container */
		if (depth == 0)
			w->arg++;
		if (type == SD_BUS_TYPE_ARRAY || type == SD_BUS_TYPE_VARIANT ||
		    type == SD_BUS_TYPE_STRUCT || type == SD_BUS_TYPE_DICT_ENTRY) {
			if (depth >= 32)
				return sd_bus_error_setf(err, ERR("InvalidArgument"),
							 "Argument %u is nested too deeply",
							 w->arg);
			r = sd_bus_message_enter_container(m, type, contents);
			if (r < 0)
				return r;
			r = walk(m, w, depth + 1, err);
			if (r < 0)
				return r;
			r = sd_bus_message_exit_container(m);
			if (r < 0)
				return r;
			continue;
		}
		union {
			const char *s;
			uint64_t u64;
			double d;
			int fd;
		} v;
		r = sd_bus_message_read_basic(m, type, &v);
		if (r < 0)
			return r;
		if (type == SD_BUS_TYPE_STRING || type == SD_BUS_TYPE_OBJECT_PATH ||
		    type == SD_BUS_TYPE_SIGNATURE) {
			if (++w->strings > DBUS_STRINGS_MAX)
				return walk_fail(err, w, -EMLINK, 0);
			size_t at = 0;
			r = string_check(v.s, DBUS_STRING_MAX, &at);
			if (r < 0)
				return walk_fail(err, w, r, at);
		}
	}
}

int
dbus_input_check(sd_bus_message *m, sd_bus_error *err)
{
	struct walk w = {0};
	int r = walk(m, &w, 0, err);
	int k = sd_bus_message_rewind(m, true);
	if (r < 0)
		return sd_bus_error_is_set(err)
			       ? r
			       : sd_bus_error_setf(err, ERR("InvalidArgument"),
						   "Argument %u cannot be read: %s", w.arg,
						   strerror(-r));
	return k < 0 ? k : 0;
}

int
dbus_input_user_tag(const char *tag, sd_bus_error *err)
{
	if (!tag_name_valid(tag))
		return sd_bus_error_setf(
			err, ERR("InvalidArgument"),
			"Tag '%s' must be 1-32 of [a-z0-9_-], starting with a letter "
			"or digit",
			tag);
	if (tag_reserved(tag))
		return sd_bus_error_setf(
			err, ERR("InvalidArgument"),
			"Tag '%s': tags starting with '" TAG_WARM_PREFIX
			"' are the images of warm templates, kept by Warren itself; "
			"choose another name",
			tag);
	return 0;
}
