/* A sandbox's egress policy (issue #15): "off", "on", or an allow-list of IPv4 CIDR[:port]
 * entries. Parsed and written back in one canonical form by every process that handles one: the
 * supervisor (D-Bus input, its records), netnsd (the request it validates) and its spawner (the
 * nftables chain it writes, the record a restarted netnsd re-applies). Pure: no I/O. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Each entry is two nftables rules (tcp, udp) or one: a small bound keeps a slot's chain, the
 * record and the D-Bus property small. */
#define EGRESS_MAX_ENTRIES 16
/* Longest text accepted or written, with its NUL: 16 entries of "255.255.255.255/32:65535,"
 * (25 bytes) fit. */
#define EGRESS_POLICY_MAX 512

enum egress_mode {
	EGRESS_OFF,  /* nothing leaves the sandbox (the link group stays out of the outbound one) */
	EGRESS_ON,   /* the world, less the default deny list (isolation.c) */
	EGRESS_LIST, /* only the entries, even where the deny list would refuse them */
};

struct egress_entry {
	uint32_t addr;	/* network order, host bits cleared */
	uint8_t prefix; /* 0-32 */
	uint16_t port;	/* 1-65535 for TCP and UDP only, 0: any protocol and port */
};

struct egress_policy {
	enum egress_mode mode;
	size_t n;
	struct egress_entry e[EGRESS_MAX_ENTRIES];
};

/* What a sandbox with outbound access may not reach unless allowed: "this network", private
 * (RFC 1918), shared CGN space, loopback, link-local (169.254.169.254 is the cloud metadata
 * service), IETF protocol space, multicast, reserved and broadcast. netnsd's nftables deny set,
 * and the ranges an E2B client's allow-list may not touch. */
extern const char *const egress_deny4[];
extern const size_t egress_deny4_n;

/* "off", "on" or "CIDR[:PORT],..." (an address alone is a /32; spaces after a comma are
 * skipped). Refuses anything else: control characters, more than EGRESS_MAX_ENTRIES entries, a
 * prefix above 32, a port outside 1-65535, an empty entry. 0 or -EINVAL with why filled. */
int egress_policy_parse(const char *s, struct egress_policy *p, char *why, size_t size);
/* The canonical text ("10.0.0.0/8:443,192.0.2.7"): what records and properties hold. 0, or
 * -ENOSPC when size is too small. */
int egress_policy_format(const struct egress_policy *p, char *buf, size_t size);
/* Parse then format: s in its canonical form in buf. */
int egress_policy_canonical(const char *s, char *buf, size_t size, char *why, size_t why_size);
/* 1 + the index of the first entry of an allow-list that overlaps a range of egress_deny4, 0 when
 * none does (or p is not a list). */
size_t egress_policy_denied_entry(const struct egress_policy *p);
/* The same against any n ranges (e.g. the host's own subnets, host-subnets.h). */
size_t egress_policy_overlaps(const struct egress_policy *p, const struct egress_entry *ranges,
			      size_t n);
/* Whether p reaches nothing that ceiling does not: off is within everything; on is within on;
 * a list is within on when it stays out of egress_deny4 (on never reaches those; a host's
 * --egress-allow only opens more; netnsd also closes the host's own subnets to on, which only
 * the caller can read: host_subnets4 and egress_policy_overlaps), and within a list when each entry
 * lies inside one of its entries (a port-less entry covers every port). What a caller who is not
 * the host's operator may ask of a template whose policy the operator chose (docs/E2B.md). */
bool egress_policy_within(const struct egress_policy *p, const struct egress_policy *ceiling);
