/* sd-bus on the libevent loop, for the daemons that hold a bus connection (warren-supervisor,
 * warren-clusterd): the bus fd is watched for what sd-bus asks for and its timeout honoured. */
#pragma once
#include <systemd/sd-bus.h>

#include "daemon.h"

struct bus_event;

/* Attaches bus to dc->base and sets dc's loop prologue, so that what a callback of any kind sent
 * or queued (a reply, a signal, an async call's timeout, messages read by a synchronous call) is
 * taken into account before the loop sleeps again. 0 or -ENOMEM. */
int bus_event_attach(sd_bus *bus, struct daemon_common *dc, struct bus_event **ret);
void bus_event_free(struct bus_event *w);
