/* The template program's "UID:GID" as the agent reads it (see agent-user.h). sscanf's %u took
 * a sign and leading blanks and wrapped on overflow ("4294967296" became 0, root; "-1"
 * 4294967295): a number is checked digit by digit before strtoul reads it, then against the
 * cap and the types. */
#include "agent-user.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* 1 to 10 digits at s, at most max; *end after them. 0 or -EINVAL. */
static int
parse_id(const char *s, unsigned long max, unsigned long *v, const char **end)
{
	size_t n = strspn(s, "0123456789");
	if (n < 1 || n > 10)
		return -EINVAL;
	errno = 0;
	char *e;
	unsigned long x = strtoul(s, &e, 10);
	if (errno || e != s + n || x > max)
		return -EINVAL;
	*v = x;
	*end = e;
	return 0;
}

int
agent_user_parse(const char *s, bool exact, uid_t *uid, gid_t *gid)
{
	unsigned long u, g;
	const char *end;
	if (parse_id(s, AGENT_USER_ID_MAX, &u, &end) < 0 || *end != ':' ||
	    parse_id(end + 1, AGENT_USER_ID_MAX, &g, &end) < 0)
		return -EINVAL;
	if (*end && (exact || (*end != ' ' && *end != '\n')))
		return -EINVAL;
	/* the types' own bounds, whatever the cap above becomes: a value that does not fit, or
	 * is (uid_t)-1 / (gid_t)-1 (what setresuid() and chown() read as "leave it"), is not an
	 * id */
	if ((uid_t)u != u || (gid_t)g != g || (uid_t)u == (uid_t)-1 || (gid_t)g == (gid_t)-1)
		return -EINVAL;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}
