/* Small helpers every Warren process uses: cleanup attributes, fd ownership, array sizes. */
#pragma once
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define _unused_ __attribute__((unused))

static inline void
freep(void *p)
{
	free(*(void **)p);
}
static inline void
closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
#define _cleanup_free_ __attribute__((cleanup(freep)))
#define _cleanup_close_ __attribute__((cleanup(closep)))

/* Hand over an fd (or pointer) owned by a cleanup variable. */
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd = (fd);                                                                    \
		(fd) = -1;                                                                         \
		_fd;                                                                               \
	})
#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p = (p);                                                            \
		(p) = NULL;                                                                        \
		_p;                                                                                \
	})

static inline int
safe_close(int fd)
{
	if (fd >= 0)
		close(fd);
	return -1;
}
