/* A VMM driver: the part of the microVM backend that speaks one VMM's API. The core
 * (microvm.c) decides what to boot and what a snapshot holds; a driver only turns that into
 * the VMM's command line or config and its requests. Driver calls block (they run in forked
 * children). Two drivers: qemu (QMP, runs here under TCG) and firecracker (REST over its Unix
 * socket, for KVM hosts). What differs beyond the API is said by the driver's flags. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent-protocol.h"

/* The tap device in the slot namespace, for VMMs without a user-mode network. */
#define VMM_TAP_NAME "wtap0"

struct vmm_launch {
	const char *binary;
	const char *kernel, *initrd, *cmdline;
	const char *root_disk; /* read-only root filesystem image, or NULL */
	const char *ram_path;  /* RAM file: shared (cold boot) or mapped private (restore); NULL
				* when the VMM's RAM is its own memory (firecracker cold boot) */
	int ram_private;       /* restore: MAP_PRIVATE, so clones share the page cache */
	uint64_t ram_bytes;
	unsigned port;	     /* the guest's port, forwarded from the slot's address */
	const char *bundle;  /* per-VM directory (root's) */
	const char *vmm_dir; /* the VMM's own directory in it: its sockets, files it writes */
	const char *console; /* where the guest's serial port goes: a path the VMM opens
			      * (/proc/self/fd/N of an inherited fd), or NULL: nowhere */
	const char *own_log; /* serial_stdout: a file (made, the VMM's) for the VMM's own log
			      * lines, which must not join the guest's output; or NULL */
	const char *user;    /* the VMM drops to this user once its files are open (qemu) */
	bool tap;	     /* network through VMM_TAP_NAME instead of a user-mode network */
	int incoming_fd;     /* restore: the device state to read (inherited), or -1 */
};

struct vmm_restore {
	const char *vmm_dir;
	int state_fd; /* inherited by the VMM at this number */
	int ram_fd;   /* the image's RAM file, inherited at this number (firecracker), or -1 */
};

struct vmm_driver {
	const char *name;
	bool needs_tap;	    /* no user-mode network: the core makes a tap in the slot */
	bool agent_vsock;   /* the agent is reached over vsock (a Unix socket + "CONNECT port") */
	bool own_ram;	    /* cold boots use the VMM's own memory, so the VMM writes guest
			     * memory into snapshots itself (mem_path below) */
	bool drops_itself;  /* the VMM drops to l->user itself (qemu -runas); else the launcher
			     * does before exec, and the VMM's files must be readable by that user */
	bool serial_stdout; /* the guest's serial port is the VMM's stdout (firecracker), not
			     * l->console */
	const char *boot_args; /* what this VMM's guests need on their command line */
	/* Fill argv (NULL-terminated, strings allocated) for exec; may write files into
	 * l->vmm_dir first (a config file). */
	int (*argv)(const struct vmm_launch *l, char ***argv);
	/* Restore: load the device state (and the RAM file) and run. */
	int (*restore)(const struct vmm_restore *r);
	int (*pause)(const char *vmm_dir);
	/* Write the paused VM's device state to state_fd. Drivers with own_ram also write guest
	 * memory to mem_path (a file in vmm_dir): everything, or with diff only the pages written
	 * since the restore (the VMM's dirty log; other pages stay holes). */
	int (*save)(const char *vmm_dir, int state_fd, const char *mem_path, bool diff);
	int (*resume)(const char *vmm_dir);
};

extern const struct vmm_driver vmm_qemu;
extern const struct vmm_driver vmm_firecracker;
