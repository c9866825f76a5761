/* A sandbox's console log (its program's stdout and stderr, as the spawner drains them from the
 * container's stdio FIFO or a microVM's serial port): a ring of bounded size in the spawner's
 * memory, read whole as a sealed memfd or followed through a pipe, saved into a checkpoint
 * image and loaded again by the restores of that image. Runs in netnsd's spawner. */
#pragma once
#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOG_RING_DEFAULT (256u << 10)
#define LOG_RING_MAX (16u << 20)
#define LOG_RING_FOLLOWERS 4		  /* followers per sandbox at once */
#define LOG_RING_FOLLOW_QUEUE (1u << 20)  /* bytes queued for one slow follower; beyond: dropped */
#define LOG_RING_IMAGE_FILE "console.log" /* its name in a checkpoint image */

struct log_ring;

struct log_ring *log_ring_new(struct event_base *base, size_t size);
/* Followers see end-of-file. NULL-safe. */
void log_ring_free(struct log_ring *r);
/* Output the ring keeps (the oldest bytes go when it is full), passed on to followers. */
void log_ring_take(struct log_ring *r, const char *buf, size_t n);
/* Output not kept (over the console's rate): counted. */
void log_ring_dropped(struct log_ring *r, uint64_t n);
uint64_t log_ring_dropped_total(const struct log_ring *r);
/* follow false: a sealed memfd with the ring's contents; true: the read end of a pipe that
 * carries them and then new output until the sandbox goes (-EBUSY with LOG_RING_FOLLOWERS
 * live followers). *size: bytes of the ring in it. */
int log_ring_open(struct log_ring *r, bool follow, int *fd_out, uint64_t *size);
/* Keep the ring of a sandbox whose program ended by itself after its runtime is removed, so
 * its owner can still read why (at most LOG_RING_KEPT of them, the oldest dropped; its
 * followers see end-of-file). Takes r. */
#define LOG_RING_KEPT 32
void log_ring_keep(const char *id, struct log_ring *r);
/* A kept ring, or NULL. */
struct log_ring *log_ring_kept(const char *id);
/* Write the ring into dirfd/name (a new file, O_EXCL, 0600): a checkpoint keeps it. */
int log_ring_save(struct log_ring *r, int dirfd, const char *name);
/* Take the end of dirfd/name (at most the ring's size) as the ring's start: a restore. A
 * missing file (an image from before) is not an error. */
int log_ring_load(struct log_ring *r, int dirfd, const char *name);
