/* rtnetlink requests netnsd needs to build and scrub namespace slots (no `ip` processes), and the
 * nf_tables deletion of a slot's table. libmnl builds the messages, walks the attributes of the
 * replies and reads ACKs and errors (mnl_cb_run); the sockets stay plain fds, as the callers
 * hold them (the pool's host socket lives as long as netnsd, conntrack.c sends its own
 * messages through nl_talk and nl_dump). Runs in netnsd. */
#include "netlink.h"
#include "macro.h"

#include <errno.h>
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
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

/* One request: the largest, a veth pair with two names, takes under 200 bytes */
struct nl_request {
	_Alignas(struct nlmsghdr) char buf[1024];
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

/* Start a request of type with flags; nl_talk and nl_dump add NLM_F_REQUEST and ACK or DUMP.
 * The whole buffer is zeroed: libmnl 1.0.4 (Debian 12) leaves an attribute's padding as it
 * finds it, and stack bytes would go to the kernel. */
static struct nlmsghdr *
request_start(struct nl_request *q, uint16_t type, uint16_t flags)
{
	memset(q->buf, 0, sizeof q->buf);
	struct nlmsghdr *h = mnl_nlmsg_put_header(q->buf);
	h->nlmsg_type = type;
	h->nlmsg_flags = flags;
	return h;
}

/* Read the replies to request seq into buf and give each to mnl_cb_run (cb for data messages)
 * until one ends the exchange: an ACK or NLMSG_DONE (0), or an error (-errno, the kernel's).
 * Replies to other requests are skipped, not errors: a call that gave up on a failed recv can
 * leave some on a socket that lives on, and failing on them would leave every later call one
 * reply behind. */
static int
replies_run(int nl, void *buf, size_t size, uint32_t seq, mnl_cb_t cb, void *data)
{
	for (;;) {
		ssize_t k = recv(nl, buf, size, 0);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		int len = (int)k;
		for (struct nlmsghdr *m = buf; mnl_nlmsg_ok(m, len); m = mnl_nlmsg_next(m, &len)) {
			if (m->nlmsg_seq != seq)
				continue;
			/* A dump the kernel marks interrupted (links or addresses changed during
			 * it) is used as it came, as the hand-written parser did: mnl_cb_run would
			 * end it with EINTR, and a busy host's link dump would fail adoption. */
			m->nlmsg_flags &= ~NLM_F_DUMP_INTR;
			int r = mnl_cb_run(m, m->nlmsg_len, seq, 0, cb, data);
			if (r == MNL_CB_ERROR)
				return -errno;
			if (r == MNL_CB_STOP)
				return 0;
		}
	}
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
	_Alignas(struct nlmsghdr) char buf[8192];
	/* no data callback: an ACKed request's reply is its ACK or its error */
	return replies_run(nl, buf, sizeof buf, h->nlmsg_seq, NULL, NULL);
}

/* nl_dump's callback and what it returned: after its first nonzero return the rest of the dump
 * is read (the socket is left clean) but not given to it */
struct dump_state {
	int (*cb)(void *nlh, void *ud);
	void *ud;
	int r;
};

static int
dump_message(const struct nlmsghdr *nlh, void *data)
{
	struct dump_state *d = data;
	if (d->r == 0)
		d->r = d->cb((void *)nlh, d->ud);
	return MNL_CB_OK;
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
	/* static: 32 KiB holds the largest dump part the kernel sends, too much for a stack */
	static _Alignas(struct nlmsghdr) char buf[32768];
	struct dump_state d = {.cb = cb, .ud = ud};
	int r = replies_run(nl, buf, sizeof buf, h->nlmsg_seq, dump_message, &d);
	return r < 0 ? r : d.r;
}

int
nl_veth_create(int nl, const char *host, const char *peer, int peer_nsfd)
{
	struct nl_request q;
	struct nlmsghdr *h = request_start(&q, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	mnl_nlmsg_put_extra_header(h, sizeof(struct ifinfomsg));
	mnl_attr_put_strz(h, IFLA_IFNAME, host);
	/* libmnl marks each nest NLA_F_NESTED, which the hand-written builder did not; rtnetlink's
	 * parsers mask the flag off (nla_type()), so the kernel reads the same request */
	struct nlattr *linkinfo = mnl_attr_nest_start(h, IFLA_LINKINFO);
	mnl_attr_put_str(h, IFLA_INFO_KIND, "veth");
	struct nlattr *data = mnl_attr_nest_start(h, IFLA_INFO_DATA);
	struct nlattr *peer_info = mnl_attr_nest_start(h, VETH_INFO_PEER);
	/* the peer is described as a link of its own: an ifinfomsg (zeroed), then its attributes */
	mnl_nlmsg_put_extra_header(h, sizeof(struct ifinfomsg));
	mnl_attr_put_strz(h, IFLA_IFNAME, peer);
	mnl_attr_put_u32(h, IFLA_NET_NS_FD, (uint32_t)peer_nsfd);
	mnl_attr_nest_end(h, peer_info);
	mnl_attr_nest_end(h, data);
	mnl_attr_nest_end(h, linkinfo);
	return nl_talk(nl, h, h->nlmsg_len);
}

int
nl_link_set(int nl, int ifindex, bool up, int group)
{
	struct nl_request q;
	struct nlmsghdr *h = request_start(&q, RTM_NEWLINK, 0);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(h, sizeof *ifi);
	ifi->ifi_index = ifindex;
	ifi->ifi_change = IFF_UP;
	ifi->ifi_flags = up ? IFF_UP : 0;
	if (group >= 0)
		mnl_attr_put_u32(h, IFLA_GROUP, (uint32_t)group);
	return nl_talk(nl, h, h->nlmsg_len);
}

int
nl_link_del(int nl, int ifindex)
{
	struct nl_request q;
	struct nlmsghdr *h = request_start(&q, RTM_DELLINK, 0);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(h, sizeof *ifi);
	ifi->ifi_index = ifindex;
	return nl_talk(nl, h, h->nlmsg_len);
}

static int
addr_change(int nl, uint16_t type, uint16_t flags, int ifindex, uint32_t addr, int prefixlen)
{
	struct nl_request q;
	struct nlmsghdr *h = request_start(&q, type, flags);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(h, sizeof *ifa);
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = (unsigned char)prefixlen;
	ifa->ifa_index = (unsigned)ifindex;
	/* addr is in network byte order already: its bytes go as they are */
	mnl_attr_put_u32(h, IFA_LOCAL, addr);
	mnl_attr_put_u32(h, IFA_ADDRESS, addr);
	return nl_talk(nl, h, h->nlmsg_len);
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
	struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(h);
	if (h->nlmsg_type != RTM_NEWADDR || (int)ifa->ifa_index != l->ifindex ||
	    ifa->ifa_family != AF_INET || l->n >= 16)
		return 0;
	struct nlattr *a;
	mnl_attr_for_each(a, h, sizeof *ifa)
	{
		if (mnl_attr_get_type(a) == IFA_LOCAL) {
			l->addrs[l->n] = mnl_attr_get_u32(a);
			l->prefix[l->n++] = ifa->ifa_prefixlen;
		}
	}
	return 0;
}

int
nl_addr_flush(int nl, int ifindex)
{
	struct nl_request q;
	struct nlmsghdr *h = request_start(&q, RTM_GETADDR, 0);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(h, sizeof *ifa);
	ifa->ifa_family = AF_INET;
	struct addr_list l = {.ifindex = ifindex};
	int r = nl_dump(nl, h, h->nlmsg_len, collect_addr, &l);
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
	struct nl_request q;
	struct nlmsghdr *h = request_start(&q, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE);
	struct rtmsg *rt = mnl_nlmsg_put_extra_header(h, sizeof *rt);
	rt->rtm_family = AF_INET;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_BOOT;
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	/* gateway is in network byte order already: its bytes go as they are */
	mnl_attr_put_u32(h, RTA_GATEWAY, gateway);
	mnl_attr_put_u32(h, RTA_OIF, (uint32_t)ifindex);
	return nl_talk(nl, h, h->nlmsg_len);
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
	struct ifinfomsg *ifi = mnl_nlmsg_get_payload(h);
	if (h->nlmsg_type == RTM_NEWLINK && !(ifi->ifi_flags & IFF_LOOPBACK) &&
	    ifi->ifi_index != l->keep && l->n < 32)
		l->idx[l->n++] = ifi->ifi_index;
	return 0;
}

/* A dump of every link in the socket's namespace, each given to cb */
static int
links_dump(int nl, int (*cb)(void *nlh, void *ud), void *ud)
{
	struct nl_request q;
	struct nlmsghdr *h = request_start(&q, RTM_GETLINK, 0);
	mnl_nlmsg_put_extra_header(h, sizeof(struct ifinfomsg));
	return nl_dump(nl, h, h->nlmsg_len, cb, ud);
}

int
nl_links_delete_except(int nl, int keep_ifindex)
{
	struct link_list l = {.keep = keep_ifindex};
	int r = links_dump(nl, collect_link, &l);
	if (r < 0)
		return r;
	for (int i = 0; i < l.n; i++)
		nl_link_del(nl, l.idx[i]);
	return l.n;
}

/* One nf_tables message with its nfgenmsg at buf: type is NFT_MSG_* in the nf_tables
 * subsystem, or a batch begin/end marker */
static struct nlmsghdr *
nft_msg_put(void *buf, uint16_t type, uint16_t flags, uint8_t family, uint16_t res_id, uint32_t seq)
{
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_seq = seq;
	struct nfgenmsg *g = mnl_nlmsg_put_extra_header(h, sizeof *g);
	g->nfgen_family = family;
	g->version = NFNETLINK_V0;
	g->res_id = htons(res_id);
	return h;
}

int
nl_nft_table_delete(uint8_t family, const char *name)
{
	_cleanup_close_ int nl = nl_open(NETLINK_NETFILTER);
	if (nl < 0)
		return nl;
	/* nf_tables takes changes in a batch: begin, the deletion (acked), end, back to back in
	 * one send */
	_Alignas(struct nlmsghdr) char buf[512] = {0}; /* zeroed: see request_start */
	uint32_t seq = ++nl_seq;
	struct nlmsghdr *begin =
		nft_msg_put(buf, NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, seq);
	size_t len = begin->nlmsg_len;
	struct nlmsghdr *del =
		nft_msg_put(buf + len, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELTABLE, NLM_F_ACK,
			    family, 0, seq + 1);
	mnl_attr_put_strz(del, NFTA_TABLE_NAME, name);
	len += del->nlmsg_len;
	struct nlmsghdr *end = nft_msg_put(buf + len, NFNL_MSG_BATCH_END, 0, AF_UNSPEC,
					   NFNL_SUBSYS_NFTABLES, seq + 2);
	len += end->nlmsg_len;
	nl_seq += 2;
	_Alignas(struct nlmsghdr) char in[4096];
	/* only the deletion asks for an ACK */
	int r = send(nl, buf, len, 0) < 0 ? -errno
					  : replies_run(nl, in, sizeof in, seq + 1, NULL, NULL);
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
	struct ifinfomsg *ifi = mnl_nlmsg_get_payload(h);
	if (h->nlmsg_type != RTM_NEWLINK || ifi->ifi_index != l->ifindex)
		return 0;
	struct nlattr *a;
	mnl_attr_for_each(a, h, sizeof *ifi)
	{
		if (mnl_attr_get_type(a) == IFLA_LINK &&
		    mnl_attr_get_payload_len(a) >= sizeof(uint32_t))
			l->peer = (int)mnl_attr_get_u32(a);
	}
	return 0;
}

int
nl_link_peer(int nl, int ifindex)
{
	struct link_peer l = {.ifindex = ifindex, .peer = 0};
	int r = links_dump(nl, collect_peer, &l);
	if (r < 0)
		return r;
	return l.peer > 0 ? l.peer : -ENOENT;
}
