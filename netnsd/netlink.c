/* rtnetlink requests netnsd needs to build and scrub namespace slots (no `ip` processes). */
#include "netlink.h"
#include "macro.h"

#include <errno.h>
#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct nlreq {
	struct nlmsghdr h;
	char buf[1024];
};

static uint32_t nl_seq;

int
nl_open(int protocol)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
	if (fd < 0)
		return -errno;
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* noinline: gcc's inlined view of the request buffer gives a false overflow warning */
static __attribute__((noinline)) struct rtattr *
attr_put(struct nlmsghdr *h, int type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));
	a->rta_type = (unsigned short)type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), data, len);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(a->rta_len);
	return a;
}
static void
attr_end(struct nlmsghdr *h, struct rtattr *nest)
{
	nest->rta_len = (unsigned short)((char *)h + h->nlmsg_len - (char *)nest);
}

int
nl_talk(int nl, void *msg, uint32_t len)
{
	struct nlmsghdr *h = msg;
	h->nlmsg_len = len;
	h->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	h->nlmsg_seq = ++nl_seq;
	if (send(nl, h, len, 0) < 0)
		return -errno;
	char buf[8192];
	for (;;) {
		ssize_t k = recv(nl, buf, sizeof buf, 0);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (struct nlmsghdr *r = (struct nlmsghdr *)buf; NLMSG_OK(r, (size_t)k);
		     r = NLMSG_NEXT(r, k)) {
			if (r->nlmsg_seq != h->nlmsg_seq)
				continue;
			if (r->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(r))->error;
		}
	}
}

int
nl_dump(int nl, void *msg, uint32_t len, int (*cb)(void *nlh, void *ud), void *ud)
{
	struct nlmsghdr *h = msg;
	h->nlmsg_len = len;
	h->nlmsg_flags |= NLM_F_REQUEST | NLM_F_DUMP;
	h->nlmsg_seq = ++nl_seq;
	if (send(nl, h, len, 0) < 0)
		return -errno;
	static char buf[32768];
	int r = 0;
	for (;;) {
		ssize_t k = recv(nl, buf, sizeof buf, 0);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (struct nlmsghdr *m = (struct nlmsghdr *)buf; NLMSG_OK(m, (size_t)k);
		     m = NLMSG_NEXT(m, k)) {
			if (m->nlmsg_seq != h->nlmsg_seq)
				continue;
			if (m->nlmsg_type == NLMSG_DONE)
				return r;
			if (m->nlmsg_type == NLMSG_ERROR) {
				int e = ((struct nlmsgerr *)NLMSG_DATA(m))->error;
				return e ? e : r;
			}
			if (r == 0)
				r = cb(m, ud);
		}
	}
}

int
nl_veth_create(int nl, const char *host, const char *peer, int peer_nsfd)
{
	struct nlreq q = {.h = {.nlmsg_type = RTM_NEWLINK,
				.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL,
				.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg))}};
	attr_put(&q.h, IFLA_IFNAME, host, strlen(host) + 1);
	struct rtattr *li = attr_put(&q.h, IFLA_LINKINFO, NULL, 0);
	attr_put(&q.h, IFLA_INFO_KIND, "veth", 4);
	struct rtattr *data = attr_put(&q.h, IFLA_INFO_DATA, NULL, 0);
	struct rtattr *pi = attr_put(&q.h, VETH_INFO_PEER, NULL, 0);
	q.h.nlmsg_len += NLMSG_ALIGN(sizeof(struct ifinfomsg));
	attr_put(&q.h, IFLA_IFNAME, peer, strlen(peer) + 1);
	attr_put(&q.h, IFLA_NET_NS_FD, &peer_nsfd, sizeof peer_nsfd);
	attr_end(&q.h, pi);
	attr_end(&q.h, data);
	attr_end(&q.h, li);
	return nl_talk(nl, &q, q.h.nlmsg_len);
}

int
nl_link_set(int nl, int ifindex, bool up, int group)
{
	struct nlreq q = {.h = {.nlmsg_type = RTM_NEWLINK,
				.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg))}};
	struct ifinfomsg *ifi = NLMSG_DATA(&q.h);
	ifi->ifi_index = ifindex;
	ifi->ifi_change = IFF_UP;
	ifi->ifi_flags = up ? IFF_UP : 0;
	if (group >= 0) {
		uint32_t g = (uint32_t)group;
		attr_put(&q.h, IFLA_GROUP, &g, sizeof g);
	}
	return nl_talk(nl, &q, q.h.nlmsg_len);
}

int
nl_link_del(int nl, int ifindex)
{
	struct nlreq q = {.h = {.nlmsg_type = RTM_DELLINK,
				.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg))}};
	struct ifinfomsg *ifi = NLMSG_DATA(&q.h);
	ifi->ifi_index = ifindex;
	return nl_talk(nl, &q, q.h.nlmsg_len);
}

static int
addr_change(int nl, int type, int flags, int ifindex, uint32_t addr, int prefixlen)
{
	struct nlreq q = {.h = {.nlmsg_type = (unsigned short)type,
				.nlmsg_flags = (unsigned short)flags,
				.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg))}};
	struct ifaddrmsg *ifa = NLMSG_DATA(&q.h);
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = (unsigned char)prefixlen;
	ifa->ifa_index = (unsigned)ifindex;
	attr_put(&q.h, IFA_LOCAL, &addr, 4);
	attr_put(&q.h, IFA_ADDRESS, &addr, 4);
	return nl_talk(nl, &q, q.h.nlmsg_len);
}

int
nl_addr_add(int nl, int ifindex, uint32_t addr, int prefixlen)
{
	int r = addr_change(nl, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, ifindex, addr, prefixlen);
	return r == -EEXIST ? 0 : r;
}

struct addr_list {
	int ifindex;
	uint32_t addrs[16];
	int prefix[16];
	int n;
};

static int
collect_addr(void *nlh, void *ud)
{
	struct nlmsghdr *h = nlh;
	struct addr_list *l = ud;
	struct ifaddrmsg *ifa = NLMSG_DATA(h);
	if (h->nlmsg_type != RTM_NEWADDR || (int)ifa->ifa_index != l->ifindex ||
	    ifa->ifa_family != AF_INET || l->n >= 16)
		return 0;
	int len = (int)IFA_PAYLOAD(h);
	for (struct rtattr *a = IFA_RTA(ifa); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == IFA_LOCAL) {
			memcpy(&l->addrs[l->n], RTA_DATA(a), 4);
			l->prefix[l->n++] = ifa->ifa_prefixlen;
		}
	return 0;
}

int
nl_addr_flush(int nl, int ifindex)
{
	struct nlreq q = {.h = {.nlmsg_type = RTM_GETADDR,
				.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg))}};
	((struct ifaddrmsg *)NLMSG_DATA(&q.h))->ifa_family = AF_INET;
	struct addr_list l = {.ifindex = ifindex};
	int r = nl_dump(nl, &q, q.h.nlmsg_len, collect_addr, &l);
	if (r < 0)
		return r;
	for (int i = 0; i < l.n; i++) {
		r = addr_change(nl, RTM_DELADDR, 0, ifindex, l.addrs[i], l.prefix[i]);
		if (r < 0 && r != -EADDRNOTAVAIL)
			return r;
	}
	return 0;
}

int
nl_route_default(int nl, int ifindex, uint32_t gateway)
{
	struct nlreq q = {.h = {.nlmsg_type = RTM_NEWROUTE,
				.nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE,
				.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg))}};
	struct rtmsg *rt = NLMSG_DATA(&q.h);
	rt->rtm_family = AF_INET;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_BOOT;
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	uint32_t oif = (uint32_t)ifindex;
	attr_put(&q.h, RTA_GATEWAY, &gateway, 4);
	attr_put(&q.h, RTA_OIF, &oif, 4);
	return nl_talk(nl, &q, q.h.nlmsg_len);
}

struct link_list {
	int keep;
	int idx[32];
	int n;
};

static int
collect_link(void *nlh, void *ud)
{
	struct nlmsghdr *h = nlh;
	struct link_list *l = ud;
	struct ifinfomsg *ifi = NLMSG_DATA(h);
	if (h->nlmsg_type == RTM_NEWLINK && !(ifi->ifi_flags & IFF_LOOPBACK) &&
	    ifi->ifi_index != l->keep && l->n < 32)
		l->idx[l->n++] = ifi->ifi_index;
	return 0;
}

int
nl_links_delete_except(int nl, int keep_ifindex)
{
	struct nlreq q = {.h = {.nlmsg_type = RTM_GETLINK,
				.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg))}};
	struct link_list l = {.keep = keep_ifindex};
	int r = nl_dump(nl, &q, q.h.nlmsg_len, collect_link, &l);
	if (r < 0)
		return r;
	for (int i = 0; i < l.n; i++)
		nl_link_del(nl, l.idx[i]);
	return l.n;
}

/* One nf_tables message after nfgenmsg: type is NFT_MSG_*, or a batch begin/end marker. */
static struct nlmsghdr *
nft_msg(char *at, uint16_t type, uint16_t flags, uint8_t family, uint16_t res_id, uint32_t seq)
{
	struct nlmsghdr *h = (struct nlmsghdr *)at;
	memset(h, 0, NLMSG_LENGTH(sizeof(struct nfgenmsg)));
	h->nlmsg_len = NLMSG_LENGTH(sizeof(struct nfgenmsg));
	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_seq = seq;
	struct nfgenmsg *g = NLMSG_DATA(h);
	g->nfgen_family = family;
	g->version = NFNETLINK_V0;
	g->res_id = htons(res_id);
	return h;
}

int
nl_nft_table_delete(uint8_t family, const char *name)
{
	int nl = nl_open(NETLINK_NETFILTER);
	if (nl < 0)
		return nl;
	/* nf_tables takes changes in a batch: begin, the deletion (acked), end */
	static char buf[512];
	uint32_t seq = ++nl_seq;
	struct nlmsghdr *b =
		nft_msg(buf, NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, seq);
	size_t len = NLMSG_ALIGN(b->nlmsg_len);
	struct nlmsghdr *d = nft_msg(buf + len, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELTABLE,
				     NLM_F_ACK, family, 0, seq + 1);
	attr_put(d, NFTA_TABLE_NAME, name, strlen(name) + 1);
	len += NLMSG_ALIGN(d->nlmsg_len);
	struct nlmsghdr *e =
		nft_msg(buf + len, NFNL_MSG_BATCH_END, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, seq + 2);
	len += NLMSG_ALIGN(e->nlmsg_len);
	nl_seq += 2;
	int r = 0;
	if (send(nl, buf, len, 0) < 0)
		r = -errno;
	char in[4096];
	while (r == 0) {
		ssize_t k = recv(nl, in, sizeof in, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = -errno;
			break;
		}
		bool done = false;
		for (struct nlmsghdr *m = (struct nlmsghdr *)in; NLMSG_OK(m, (size_t)k);
		     m = NLMSG_NEXT(m, k))
			if (m->nlmsg_type == NLMSG_ERROR && m->nlmsg_seq == seq + 1) {
				r = ((struct nlmsgerr *)NLMSG_DATA(m))->error;
				done = true;
			}
		if (done)
			break;
	}
	close(nl);
	return r == -ENOENT ? 0 : r; /* no such table: nothing to delete */
}

struct link_peer {
	int ifindex;
	int peer;
};

static int
collect_peer(void *nlh, void *ud)
{
	struct nlmsghdr *h = nlh;
	struct link_peer *l = ud;
	struct ifinfomsg *ifi = NLMSG_DATA(h);
	if (h->nlmsg_type != RTM_NEWLINK || ifi->ifi_index != l->ifindex)
		return 0;
	int len = (int)IFLA_PAYLOAD(h);
	for (struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == IFLA_LINK && RTA_PAYLOAD(a) >= sizeof(uint32_t))
			memcpy(&l->peer, RTA_DATA(a), sizeof(uint32_t));
	return 0;
}

int
nl_link_peer(int nl, int ifindex)
{
	struct nlreq q = {.h = {.nlmsg_type = RTM_GETLINK,
				.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg))}};
	struct link_peer l = {.ifindex = ifindex, .peer = 0};
	int r = nl_dump(nl, &q, q.h.nlmsg_len, collect_peer, &l);
	if (r < 0)
		return r;
	return l.peer > 0 ? l.peer : -ENOENT;
}
