/* The record of one sandbox lifetime (supervisor): one line "<end-usec> <action>\n" in
 * <state-dir>/lifetimes/<id>. The parser accepts that exact form only, with the end in bounds:
 * the directory is the supervisor's own, but what it reads back decides when a sandbox is
 * destroyed, so it is checked as if a stranger wrote it. */
#include "lifetime-record.h"
#include "macro.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const action_names[] = {
	[LIFETIME_KILL] = "kill",
	[LIFETIME_PAUSE] = "pause",
};

const char *
lifetime_action_to_string(enum lifetime_action a)
{
	return (unsigned)a < ELEMENTSOF(action_names) ? action_names[a] : "unknown";
}

int
lifetime_action_from_string(const char *s)
{
	for (size_t i = 0; i < ELEMENTSOF(action_names); i++)
		if (!strcmp(action_names[i], s))
			return (int)i;
	return -EINVAL;
}

int
lifetime_record_format(char *buf, size_t size, uint64_t end_usec, enum lifetime_action a)
{
	return snprintf(buf, size, "%llu %s\n", (unsigned long long)end_usec,
			lifetime_action_to_string(a));
}

int
lifetime_record_parse(const char *buf, size_t len, uint64_t now, uint64_t *end_usec, int *action)
{
	size_t digits = strspn(buf, "0123456789");
	if (len != strlen(buf) || len == 0 || buf[len - 1] != '\n' || digits == 0 || digits > 20 ||
	    buf[digits] != ' ')
		return -EBADMSG;
	/* buf[digits] is ' ' and buf[len - 1] '\n': the word between is len - digits - 2 long */
	char word[8];
	size_t wlen = len - digits - 2;
	if (wlen == 0 || wlen >= sizeof word)
		return -EBADMSG;
	memcpy(word, buf + digits + 1, wlen);
	word[wlen] = 0;
	int a = lifetime_action_from_string(word);
	if (a < 0)
		return -EBADMSG;
	errno = 0;
	unsigned long long v = strtoull(buf, NULL, 10);
	if (errno || v == 0 ||
	    v > now + LIFETIME_MAX_SECONDS * 1000000ull + LIFETIME_CLOCK_SLACK_USEC)
		return -ERANGE;
	*end_usec = v;
	*action = a;
	return 0;
}
