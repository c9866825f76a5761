/* Per-slot egress allow-lists in nftables (issue #15). A slot whose policy is an allow-list has
 * a chain of its own, egress_<slot>, in netnsd's table, reached through the map egress_slots
 * (host veth name -> jump) from the forward chain, and a record <runtime-dir>/egress/<slot>
 * holding the policy's canonical text, so a restarted netnsd loads the chain again in the same
 * transaction that re-creates the table. "off" and "on" have neither: the veth's link group
 * (pool.c) is their whole state, and it lives in the kernel across restarts. The spawner (root,
 * may exec nft) writes and removes chains and records; netnsd (root, before lock-down) reads
 * the records back. */
#pragma once
#include <stdbool.h>
#include <stdio.h>

#include "adopt.h"
#include "egress-policy.h"
#include "isolation.h"

/* The nft commands that install p's chain for slot (an allow-list), or remove the slot's chain
 * and map element (off, on): idempotent, whatever the slot had before. */
void egress_slot_script(FILE *f, const struct isolation_config *c, unsigned slot,
			const struct egress_policy *p);
/* The spawner's side: record first, then the chain (an allow-list); or the chain, then the
 * record, away (off, on). The order keeps what a crash leaves no wider than the policy asked
 * for. 0 or -errno. */
int egress_apply(const struct isolation_config *c, unsigned slot, const struct egress_policy *p);
/* netnsd at start, as root, before isolation_install: the chains of the adopted slots' records
 * go into f (listed[slot] set); a record of a slot not adopted is removed; a record that does
 * not parse becomes a chain that drops everything (fail closed). n_listed: the array's size. */
void egress_restore(const struct isolation_config *c, const struct adoption *a, FILE *f,
		    bool *listed, unsigned n_listed);
