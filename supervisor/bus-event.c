/* sd-bus on libevent (supervisor): watch the bus fd for the events sd-bus asks for and honour
 * its timeout; after every wake-up process until sd-bus has nothing left, then re-arm. */
#include "log.h"
#include "supervisor.h"

#include <poll.h>
#include <stdlib.h>

struct bus_watch {
	sd_bus *bus;
	struct event_base *base;
	struct event *io, *timer;
};

static void bus_rearm(struct bus_watch *w);

static void
bus_wake(evutil_socket_t fd, short what, void *arg)
{
	struct bus_watch *w = arg;
	for (;;) {
		int r = sd_bus_process(w->bus, NULL);
		if (r < 0) {
			log_error_errno(r, "D-Bus connection failed: %m");
			event_base_loopbreak(w->base);
			return;
		}
		if (r == 0)
			break;
	}
	bus_rearm(w);
}

static void
bus_rearm(struct bus_watch *w)
{
	int events = sd_bus_get_events(w->bus);
	short what =
		(short)(((events & POLLIN) ? EV_READ : 0) | ((events & POLLOUT) ? EV_WRITE : 0));
	if (w->io)
		event_free(w->io);
	w->io = event_new(w->base, sd_bus_get_fd(w->bus), what, bus_wake, w);
	event_add(w->io, NULL);
	uint64_t usec;
	evtimer_del(w->timer);
	if (sd_bus_get_timeout(w->bus, &usec) > 0 && usec != UINT64_MAX) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t now = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
		uint64_t d = usec > now ? usec - now : 0;
		struct timeval tv = {(time_t)(d / 1000000), (suseconds_t)(d % 1000000)};
		evtimer_add(w->timer, &tv);
	}
}

/* Called by the main loop before it sleeps: sd-bus may have queued output meanwhile. */
static void
bus_prepare(evutil_socket_t fd, short what, void *arg)
{
	bus_wake(-1, 0, arg);
}

int
bus_attach_event(sd_bus *bus, struct event_base *base)
{
	struct bus_watch *w = calloc(1, sizeof *w);
	w->bus = bus;
	w->base = base;
	w->timer = evtimer_new(base, bus_wake, w);
	/* Messages sent from IPC callbacks are flushed by this short persistent tick as well as by
	 * the fd becoming writable. */
	struct event *tick = event_new(base, -1, EV_PERSIST, bus_prepare, w);
	struct timeval tv = {0, 20000};
	event_add(tick, &tv);
	bus_rearm(w);
	return 0;
}
