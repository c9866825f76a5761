/* A template's root filesystem as the spawner hands it to runsc: opened once, beneath the
 * templates directory, with no symlink and no mount crossing; its tree checked once (cached by
 * the root's dev/ino/mtime/ctime); then bind-mounted from that fd, read-only, nosuid and nodev,
 * onto a fixed path in runsc's private mount namespace, so what runsc opens is what was checked
 * (docs/ARCHITECTURE.md: the spawner). Runs in netnsd's spawner. */
#pragma once
#include <stddef.h>

/* Open the templates directory (O_PATH); it must be root's and writable by nobody else. */
int rootfs_open_templates(const char *templates_dir);
/* Open the rootfs at path (canonical, inside templates_dir, as netnsd forwards it) beneath
 * templates_fd; refuse it, with the reason in why, if a component on the way is not root's or
 * is writable by others, or if the tree holds a device node, an entry not owned by root, an
 * entry others may write (sticky directories included) or a mount point. Returns an O_PATH fd
 * or -errno. */
int rootfs_open(int templates_fd, const char *templates_dir, const char *path, char *why,
		size_t why_size);
/* Check a tree (an O_PATH or O_RDONLY directory fd) without the cache; 0 or -errno and why. */
int rootfs_check_tree(int rootfd, char *why, size_t why_size);
/* For runsc's private mount namespace (a forked child, before exec): a detached clone of the
 * checked tree's mount, read-only, nosuid, nodev, without its submounts; made before the child
 * leaves the spawner's mount namespace (a mount of another namespace cannot be cloned), then
 * attached onto target in the new one. */
/* The template's program (an absolute path) is an executable regular file inside the tree,
 * resolved as the sandbox would (symlinks inside its root): 0, or -ENOENT/-EACCES with why. A
 * container started by the agent would otherwise only report exit status 127. */
int rootfs_program_check(int rootfd, const char *program, char *why, size_t why_size);
/* The mount point of the agent's bind mount (an absolute path) is a regular file in the tree,
 * reached without a symlink: 0, or -errno. runsc cannot make it in a read-only tree. */
int rootfs_agent_mountpoint(int rootfd, const char *path);
int rootfs_clone(int rootfd);
int rootfs_attach(int tree, const char *target);
