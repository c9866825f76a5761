/* The supervisor's D-Bus error names (org.warren.Warren1.Error.*) in one table, each mapped to
 * the errno a D-Bus client sees from sd_bus_error_get_errno(). Runs in warren-supervisor. */
#pragma once
#include <systemd/sd-bus.h>

#define ERR(x) "org.warren.Warren1.Error." x

extern const sd_bus_error_map warren_bus_errors[];

/* Registers the table with sd-bus (once per process); 0 or -errno. */
int bus_errors_init(void);
