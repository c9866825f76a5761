/* Who may act on one sandbox over D-Bus (owner.c). */
#pragma once
#include <systemd/sd-bus.h>

struct sandbox;

/* 0 when the sender of m is root or the sandbox's owner; otherwise sets err to AccessDenied
 * (saying the caller may not `what` it) and returns its negative errno. */
int owner_check(sd_bus_message *m, const struct sandbox *sb, const char *what, sd_bus_error *err);

/* Owner records, <state-dir>/<dir>/<name> ("owners" for sandboxes, logs.c; "tag-owners"):
 * set from the sender of m, read back (0, root's alone, when none), removed. name must be
 * checked by the caller (a sandbox id or a user tag). */
int owner_record_set(const char *dir, const char *name, sd_bus_message *m);
uid_t owner_record_get(const char *dir, const char *name);
void owner_record_remove(const char *dir, const char *name);

/* Tags have owners too: who snapshotted (Snapshot, BranchSandbox) the image. Recorded when the
 * image is sealed (m: the caller's message), checked by ForkTag and RemoveTag (root or the
 * owner; a tag with no record is root's alone), forgotten when the tag is removed. */
void tag_owner_set(const char *tag, sd_bus_message *m);
int tag_owner_check(sd_bus_message *m, const char *tag, const char *what, sd_bus_error *err);
void tag_owner_remove(const char *tag);
