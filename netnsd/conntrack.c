/* ctnetlink dump + delete of the host's conntrack entries of one sandbox address, so a reused
 * slot starts with no state from its previous owner. A dump collects at most MAX_ENTRIES, so it
 * dumps again until none are left (a sandbox may have held far more: the conntrack table is as
 * big as the host's). Runs in netnsd (CAP_NET_ADMIN). */
#include "conntrack.h"
#include "netlink.h"
#include "macro.h"

#include <errno.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>

#define MAX_ENTRIES 256
/* Enough rounds for the largest conntrack table (nf_conntrack_max 2^21 / 256), and a bound if
 * entries keep appearing faster than they go. */
#define MAX_ROUNDS 8192

struct ct_list {
	uint32_t addr;
	int n;
	struct {
		char tuple[256];
		unsigned short len;
	} e[MAX_ENTRIES];
};

static int
tuple_has_addr(struct nlattr *tuple, uint32_t addr)
{
	int len = tuple->nla_len - NLA_HDRLEN;
	for (struct nlattr *a = (struct nlattr *)((char *)tuple + NLA_HDRLEN); len >= NLA_HDRLEN;
	     len -= NLA_ALIGN(a->nla_len),
			   a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len))) {
		if ((a->nla_type & NLA_TYPE_MASK) != CTA_TUPLE_IP)
			continue;
		int l2 = a->nla_len - NLA_HDRLEN;
		for (struct nlattr *b = (struct nlattr *)((char *)a + NLA_HDRLEN); l2 >= NLA_HDRLEN;
		     l2 -= NLA_ALIGN(b->nla_len),
				   b = (struct nlattr *)((char *)b + NLA_ALIGN(b->nla_len))) {
			int t = b->nla_type & NLA_TYPE_MASK;
			if ((t == CTA_IP_V4_SRC || t == CTA_IP_V4_DST) &&
			    !memcmp((char *)b + NLA_HDRLEN, &addr, 4))
				return 1;
		}
	}
	return 0;
}

static int
collect(void *nlh, void *ud)
{
	struct nlmsghdr *h = nlh;
	struct ct_list *l = ud;
	int len = (int)h->nlmsg_len - NLMSG_LENGTH(sizeof(struct nfgenmsg));
	struct nlattr *a =
		(struct nlattr *)((char *)NLMSG_DATA(h) + NLMSG_ALIGN(sizeof(struct nfgenmsg)));
	for (; len >= NLA_HDRLEN; len -= NLA_ALIGN(a->nla_len),
				  a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len))) {
		if ((a->nla_type & NLA_TYPE_MASK) != CTA_TUPLE_ORIG)
			continue;
		if (tuple_has_addr(a, l->addr) && l->n < MAX_ENTRIES && a->nla_len <= 256) {
			memcpy(l->e[l->n].tuple, a, a->nla_len);
			l->e[l->n++].len = a->nla_len;
		}
	}
	return 0;
}

struct ct_msg {
	struct nlmsghdr h;
	struct nfgenmsg g;
	char buf[512];
};

static void
ct_msg_init(struct ct_msg *q, int type)
{
	memset(q, 0, sizeof *q);
	q->h.nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | type;
	q->g.nfgen_family = AF_INET;
	q->g.version = NFNETLINK_V0;
}

int
conntrack_flush_addr(uint32_t addr)
{
	_cleanup_close_ int nl = nl_open(NETLINK_NETFILTER);
	if (nl < 0)
		return nl;
	struct ct_msg q;
	static struct ct_list l;
	int deleted = 0;
	for (int round = 0; round < MAX_ROUNDS; round++) {
		ct_msg_init(&q, IPCTNL_MSG_CT_GET);
		l.addr = addr;
		l.n = 0;
		int r = nl_dump(nl, &q, NLMSG_LENGTH(sizeof(struct nfgenmsg)), collect, &l);
		if (r < 0)
			return r == -ENOENT ? deleted : r;
		if (l.n == 0)
			return deleted;
		int gone = 0;
		for (int i = 0; i < l.n; i++) {
			ct_msg_init(&q, IPCTNL_MSG_CT_DELETE);
			memcpy(q.buf, l.e[i].tuple, l.e[i].len);
			uint32_t len =
				NLMSG_LENGTH(sizeof(struct nfgenmsg)) + NLA_ALIGN(l.e[i].len);
			/* -ENOENT: it timed out between the dump and now, which is as good */
			int r2 = nl_talk(nl, &q, len);
			if (r2 == 0 || r2 == -ENOENT)
				gone++;
		}
		deleted += gone;
		/* none of them would go: another dump would find the same ones */
		if (gone == 0)
			return -EIO;
	}
	return -E2BIG;
}
