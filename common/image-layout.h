/* The file layout of templates' microVM images and of sandbox images, named once. Read by
 * netnsd (it checks a template's VM files before a spawn), by its spawner (which boots them,
 * writes images through the directory fd snapshotd hands over, and proves and seals them) and
 * by the tests and fuzzers that play those parts. scripts/warren-vm-image writes the template's
 * files under these names, and runsc names its checkpoint itself: both keep the names, with a
 * comment naming this header. Header-only, libc only. */
#pragma once
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Beside a template's rootfs directory (<template>/rootfs): the initramfs a microVM boots, and
 * for a template too big for one, its read-only root disk. */
#define IMAGE_LAYOUT_VM_INITRAMFS "vm-initramfs.cpio"
#define IMAGE_LAYOUT_VM_ROOT_DISK "vm-rootfs.ext4"

/* The guest kernel's default paths (netnsd --vm-kernel): QEMU boots the compressed image,
 * Firecracker needs the ELF one (warren-vm-image --vmlinux). */
#define IMAGE_LAYOUT_VM_KERNEL "/var/lib/warren/vm/vmlinuz"
#define IMAGE_LAYOUT_VM_KERNEL_ELF "/var/lib/warren/vm/vmlinux"

/* The members of an image directory in snapshotd's store: a microVM's VMM state and its RAM
 * (QEMU maps the RAM file at a restore), or gVisor's checkpoint (runsc's own name for it). */
#define IMAGE_LAYOUT_VM_STATE "state"
#define IMAGE_LAYOUT_VM_RAM "ram"
#define IMAGE_LAYOUT_GVISOR_CHECKPOINT "checkpoint.img"

/* The path of a template's file name (one of the IMAGE_LAYOUT_VM_* above) beside its rootfs
 * directory, a path with no trailing slash: <rootfs>/../name without the "..", so it reads the
 * same before and after realpath(). 0, -EINVAL when rootfs has no directory part, or
 * -ENAMETOOLONG. */
static inline int
image_layout_template_file(const char *rootfs, const char *name, char *out, size_t size)
{
	const char *slash = strrchr(rootfs, '/');
	if (!slash)
		return -EINVAL;
	int n = snprintf(out, size, "%.*s/%s", (int)(slash - rootfs), rootfs, name);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
