/* The sandbox backend enum's names (see backend.h); linked into every daemon via warren-common. */
#include <errno.h>
#include <string.h>

#include "backend.h"

static const char *const backend_names[_BACKEND_MAX] = {
	[BACKEND_GVISOR] = "gvisor",
	[BACKEND_MICROVM] = "microvm",
};

const char *
backend_to_string(int b)
{
	return backend_valid(b) ? backend_names[b] : NULL;
}

int
backend_from_string(const char *s)
{
	if (!s)
		return -EINVAL;
	for (int b = 0; b < _BACKEND_MAX; b++)
		if (!strcmp(s, backend_names[b]))
			return b;
	return -EINVAL;
}
