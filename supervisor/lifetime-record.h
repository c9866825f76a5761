/* The lifetime record (supervisor/lifetime-record.c): <state-dir>/lifetimes/<id>, written and
 * read back by the supervisor; pure, so the unit tests link it alone. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define LIFETIME_MAX_SECONDS (30ull * 24 * 3600) /* SetTimeout refuses longer */
#define LIFETIME_RECORD_MAX 64			 /* "<20 digits> pause\n" and then some */
/* a record read back may end this much past now + LIFETIME_MAX_SECONDS (the clock moved) */
#define LIFETIME_CLOCK_SLACK_USEC (3600ull * 1000000)

enum lifetime_action {
	LIFETIME_KILL,
	LIFETIME_PAUSE,
};
const char *lifetime_action_to_string(enum lifetime_action a);
int lifetime_action_from_string(const char *s);

/* "<end-usec> <action>\n" into buf; its length */
int lifetime_record_format(char *buf, size_t size, uint64_t end_usec, enum lifetime_action a);
/* Exactly that form and nothing else (buf NUL-terminated, len bytes before the NUL), the end
 * after 0 and at most LIFETIME_MAX_SECONDS (+ slack) past now: 0, -EBADMSG (form) or -ERANGE. */
int lifetime_record_parse(const char *buf, size_t len, uint64_t now, uint64_t *end_usec,
			  int *action);
