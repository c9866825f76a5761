/* The microVM backend (netnsd's spawner side): one core for everything that is not the VMM's
 * API — guest kernel and command line, the template's initramfs, the slot namespace and
 * cgroup, the guest RAM (a memfd, or a restore's image file mapped private), snapshots, the
 * in-guest agent — and a VMM driver for the API. The qemu driver (`-M microvm`, QMP) runs here
 * under TCG; see docs/MICROVM.md for the Firecracker one.
 *
 * Launching is done in the spawner's event loop (fork + setns + exec, no wrapper process);
 * every step that waits on the VMM or the agent (restore, snapshot, exec) runs in a forked child
 * of the spawner that blocks, exits with 0 or an error status, and leaves a message in
 * <bundle>/vmm.log, so the spawner's loop never blocks. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct microvm_config {
	const char *vmm;	 /* driver: "qemu" (default) or "firecracker" */
	const char *qemu;	 /* qemu-system-x86_64 */
	const char *firecracker; /* firecracker (KVM hosts) */
	const char *kernel;	 /* guest kernel (Debian's linux-image-cloud-amd64; Firecracker
				  * needs it as an ELF vmlinux: warren-vm-image --vmlinux) */
	bool tap;		 /* qemu: network through a tap in the slot, as Firecracker's */
	const char *vm_user;	 /* the VMM drops to this user once its files are open */
	bool console; /* the guest kernel's messages on its serial port too (console=ttyS0),
		       * so into the sandbox's console log: for debugging (slower boots) */
};

struct microvm_start {
	const char *id;
	const char *bundle;    /* per-VM directory: sockets, logs */
	const char *cgroup;    /* relative cgroup path, created here */
	const char *initrd;    /* the template's vm-initramfs.cpio */
	const char *root_disk; /* the template's vm-rootfs.ext4 (read-only), or NULL */
	char *const *argv;
	size_t argc;
	char *const *env;
	size_t envc;
	const char *cwd;   /* NULL or "": / */
	uint32_t uid, gid; /* the program's ids in the guest */
	unsigned port;
	uint64_t memory_limit;
	/* the VMM's pids and CPU bounds, as a gVisor sandbox's (its cgroup); 0: none */
	uint32_t pids_max, cpu_millis;
	int nsfd;
	int image_fd; /* restore: the image directory (state + ram); -1 for a cold boot */
	/* the sandbox's console FIFO, read-write: the guest's serial port (its program's
	 * stdout and stderr, as the agent wires them) goes there; -1: nowhere */
	int console_fd;
};

/* Select the driver (c->vmm); -EINVAL for an unknown name. */
int microvm_configure(const struct microvm_config *c);
/* Is the backend usable here (VMM binary and kernel present, /dev/kvm for Firecracker)? Says
 * why not in why. */
bool microvm_available(const struct microvm_config *c, char *why, size_t size);
/* Start the VMM in the slot namespace and the sandbox's cgroup (made with its limits before the
 * fork, so it exists when this returns); returns its pid or -errno. A
 * restore's VMM waits for microvm_finish_restore, which gets the fd numbers it inherited. */
pid_t microvm_launch(const struct microvm_config *c, const struct microvm_start *s,
		     int incoming[2] /* restore: state and RAM file fds in the VMM */);

/* Blocking steps for a forked child (0 or -errno; a message in <bundle>/vmm.log). */
int microvm_finish_restore(const char *bundle, const char *id, const int incoming[2]);
/* Pause, write the device state and the RAM into the image directory, resume in place. A VM
 * that was itself restored has only the pages it wrote since copied while paused. Guest memory
 * is read and the image written by a child as owner:group (the store's owner; if that is root,
 * the VM user), no capabilities, no_new_privs, through fds opened before it dropped them. */
int microvm_snapshot(const struct microvm_config *c, const char *bundle, const char *id,
		     pid_t vmm_pid, uint64_t memory_limit, int image_dirfd, uid_t owner,
		     gid_t group);
/* Connect to the VM's agent (its socket in the bundle); an fd or -errno. */
int microvm_agent_open(const char *bundle);
/* Run argv in the guest through the agent connection fd (closed here); stdout/stderr into the
 * fds (each at most MICROVM_EXEC_OUTPUT_MAX bytes, then a "warren: ... truncated" line on
 * stderr); the exit status. */
#define MICROVM_EXEC_OUTPUT_MAX (16u << 20)
int microvm_exec(int agent_fd, char *const *argv, size_t argc, unsigned timeout_ms, int out_fd,
		 int err_fd);
/* A cold-booted VM's RAM: a memfd of this name the VMM inherits (no file anywhere). */
#define MICROVM_RAM_NAME "warren-ram"
