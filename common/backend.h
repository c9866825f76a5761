/* The sandbox backends as one enum, in every process that names one. It travels in IPC as the
 * proto enum warren.v1.Backend (same values); names ("gvisor", "microvm") are only for the
 * D-Bus surface, records on disk, logs and metrics. The VMM that runs a microVM (QEMU or
 * Firecracker) is netnsd's choice (--vmm), not a backend. */
#pragma once

enum backend {
	BACKEND_GVISOR = 0,
	BACKEND_MICROVM = 1,
	_BACKEND_MAX,
};

/* "gvisor" or "microvm"; NULL for a value out of range (a peer's number, unchecked). */
const char *backend_to_string(int b);
/* The enum for a name, or -EINVAL (NULL, empty or unknown). */
int backend_from_string(const char *s);
/* Is a number from a peer one of the backends? Every receiver checks before it casts. */
static inline int
backend_valid(int b)
{
	return b >= 0 && b < _BACKEND_MAX;
}
