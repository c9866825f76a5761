#include "cgroup-path.h"
#include "names.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

bool
cgroup_path_valid(const char *p)
{
	size_t len = strnlen(p, CGROUP_PATH_MAX);
	if (len == 0 || len >= CGROUP_PATH_MAX || p[0] != '/')
		return false;
	for (const char *c = p + 1;; c++) {
		const char *end = strchrnul(c, '/');
		size_t n = (size_t)(end - c);
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		for (const char *x = c; x < end; x++)
			if (!((*x >= 'a' && *x <= 'z') || (*x >= 'A' && *x <= 'Z') ||
			      (*x >= '0' && *x <= '9') || *x == '.' || *x == '_' || *x == '-' ||
			      *x == '@'))
				return false;
		if (!*end)
			return true;
		c = end;
	}
}

int
cgroup_sandbox_path(const char *parent, const char *id, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s", parent, id);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

bool
cgroup_parent_valid(const char *p)
{
	return cgroup_path_valid(p) && strlen(p) + 1 + SANDBOX_ID_LEN < CGROUP_PATH_MAX;
}
