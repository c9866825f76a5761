/* The network of a microVM whose VMM has no user-mode network (Firecracker, or QEMU with
 * --vm-net=tap): a tap device in the slot namespace and NAT to the guest's fixed inner address,
 * so every VM and every clone of it has the same address inside and needs no re-addressing
 * (docs/MICROVM.md: addressing). The tap and the table live in the slot: releasing the slot
 * deletes both (pool.c). */
#pragma once
#include <sys/types.h>

#define MICROVM_NFT_TABLE "warren_vm"

/* In the slot namespace (the launcher, before exec): a persistent tap VMM_TAP_NAME owned by
 * uid with AGENT_PROTO_HOST_ADDR/24, forwarding on, and the table: the slot's port DNATed to the
 * guest, the guest's own connections masqueraded behind the slot address. Idempotent. */
int microvm_net_setup(uid_t uid, unsigned port);
