/* Minimal rtnetlink from C for netnsd (messages built with libmnl): veth pairs, addresses, routes,
 * link state and group.
 * Every call works in the network namespace of the socket it is given. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

int nl_open(int protocol);
/* Create veth host<->peer with the peer moved into the namespace peer_nsfd. */
int nl_veth_create(int nl, const char *host, const char *peer, int peer_nsfd);
int nl_link_set(int nl, int ifindex, bool up, int group /* < 0: leave */);
int nl_link_del(int nl, int ifindex);
/* addr in network byte order */
int nl_addr_add(int nl, int ifindex, uint32_t addr, int prefixlen);
int nl_addr_flush(int nl, int ifindex);
int nl_route_default(int nl, int ifindex, uint32_t gateway);
/* Delete every link but lo and keep (ifindex). */
int nl_links_delete_except(int nl, int keep_ifindex);
/* The ifindex (in the peer's namespace) of a veth's other end, as IFLA_LINK says. */
int nl_link_peer(int nl, int ifindex);
/* Send one request and wait for its ack; -errno from the kernel. */
int nl_talk(int nl, void *msg, uint32_t len);
/* Run a dump request; cb is called with each message. */
int nl_dump(int nl, void *msg, uint32_t len, int (*cb)(void *nlh, void *ud), void *ud);
/* Delete an nf_tables table (family NFPROTO_*) in the socket's namespace; 0 if absent. */
int nl_nft_table_delete(uint8_t family, const char *name);
