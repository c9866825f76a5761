/* A VMM driver: the part of the microVM backend that speaks one VMM's API. The core
 * (microvm.c) decides what to boot and what a snapshot holds; a driver only turns that into
 * the VMM's command line and requests. Driver calls block (they run in forked children). */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct vmm_launch {
	const char *binary;
	const char *kernel, *initrd, *cmdline;
	const char *root_disk; /* read-only root filesystem image, or NULL */
	const char *ram_path; /* RAM file: shared (cold boot) or mapped private (restore) */
	int ram_private;      /* restore: MAP_PRIVATE, so clones share the page cache */
	uint64_t ram_bytes;
	unsigned port;         /* the guest's port, forwarded from the slot's address */
	const char *bundle;    /* sockets (vmm.sock, agent.sock) live here */
	const char *console;   /* console log file, or NULL for none */
	const char *user;      /* drop to this user once the files are open, or NULL */
	int incoming_fd;       /* restore: the device state to read (inherited), or -1 */
};

struct vmm_driver {
	const char *name;
	/* Fill argv (NULL-terminated, strings allocated) for exec. */
	int (*argv)(const struct vmm_launch *l, char ***argv);
	/* Restore: load the device state from the inherited fd and run. */
	int (*restore)(const char *bundle, int state_fd);
	int (*pause)(const char *bundle);
	/* Write the paused VM's device state (not its RAM) to fd. */
	int (*save_state)(const char *bundle, int fd);
	int (*resume)(const char *bundle);
};

extern const struct vmm_driver vmm_qemu;
