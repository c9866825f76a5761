/* sd-bus on libevent (bus-event.h), linked by warren-supervisor and warren-clusterd.
 *
 * sd-bus says what it waits for with sd_bus_get_events() and sd_bus_get_timeout(); both change
 * whenever anyone uses the connection, not only when the bus fd wakes us: a reply sent from a
 * helper's IPC callback may stay queued (socket buffer full: POLLOUT needed), an async call adds a
 * reply deadline, a synchronous call may read other messages into the queue without the fd
 * becoming readable again (sd_bus_get_timeout() is then 0). So both are re-evaluated after every
 * dispatch and in the loop's prologue, before each sleep (daemon_run), instead of by polling. The
 * prologue costs two field reads unless something changed. */
#include "bus-event.h"
#include "log.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

struct bus_event {
	sd_bus *bus;
	struct event_base *base;
	struct event *io, *timer;
	short io_what;	   /* what io is armed for, 0: not armed */
	bool timer_armed;  /* timer pending, for deadline */
	uint64_t deadline; /* CLOCK_MONOTONIC usec, as sd_bus_get_timeout() gives it */
};

static void bus_event_wake(evutil_socket_t fd, short what, void *arg);

static void
bus_event_rearm(struct bus_event *w)
{
	int events = sd_bus_get_events(w->bus);
	short what = 0;
	if (events > 0)
		what = (short)(((events & POLLIN) ? EV_READ : 0) |
			       ((events & POLLOUT) ? EV_WRITE : 0));
	if (what != w->io_what) {
		event_del(w->io);
		w->io_what = 0;
		if (what &&
		    event_assign(w->io, w->base, sd_bus_get_fd(w->bus), what | EV_PERSIST,
				 bus_event_wake, w) == 0 &&
		    event_add(w->io, NULL) == 0)
			w->io_what = what;
	}

	uint64_t usec = UINT64_MAX;
	if (sd_bus_get_timeout(w->bus, &usec) <= 0)
		usec = UINT64_MAX;
	if (w->timer_armed && usec == w->deadline)
		return;
	evtimer_del(w->timer);
	w->timer_armed = false;
	if (usec == UINT64_MAX)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
	uint64_t d = usec > now ? usec - now : 0;
	struct timeval tv = {(time_t)(d / 1000000), (suseconds_t)(d % 1000000)};
	if (evtimer_add(w->timer, &tv) == 0) {
		w->timer_armed = true;
		w->deadline = usec;
	}
}

static void
bus_event_wake(evutil_socket_t fd, short what, void *arg)
{
	struct bus_event *w = arg;
	if (fd < 0)
		w->timer_armed = false; /* the timer fired: no longer pending */
	for (;;) {
		int r = sd_bus_process(w->bus, NULL);
		if (r < 0) {
			log_error_errno(r, "Lost the system bus: %m");
			event_base_loopbreak(w->base);
			return;
		}
		if (r == 0)
			break;
	}
	bus_event_rearm(w);
}

static void
bus_event_prologue(void *arg)
{
	bus_event_rearm(arg);
}

int
bus_event_attach(sd_bus *bus, struct daemon_common *dc, struct bus_event **ret)
{
	struct bus_event *w = calloc(1, sizeof *w);
	if (!w)
		return -ENOMEM;
	w->bus = bus;
	w->base = dc->base;
	w->io = event_new(dc->base, -1, 0, bus_event_wake, w);
	w->timer = evtimer_new(dc->base, bus_event_wake, w);
	if (!w->io || !w->timer) {
		bus_event_free(w);
		return -ENOMEM;
	}
	dc->loop_prologue = bus_event_prologue;
	dc->loop_prologue_data = w;
	bus_event_rearm(w);
	if (ret)
		*ret = w;
	return 0;
}

void
bus_event_free(struct bus_event *w)
{
	if (!w)
		return;
	if (w->io)
		event_free(w->io);
	if (w->timer)
		event_free(w->timer);
	free(w);
}
