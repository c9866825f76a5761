/* See microvm-net.h. Runs in the launcher child (already in the slot namespace, still root),
 * so it may exec nft; netnsd's locked-down main process only deletes the table (netlink). */
#include "microvm-net.h"
#include "agent-protocol.h"
#include "isolation.h"
#include "vmm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int
tap_create(uid_t uid)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", VMM_TAP_NAME);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	int r = 0;
	/* persistent and owned by the VM user, so the VMM can attach to it without privileges */
	if (ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETOWNER, (unsigned long)uid) < 0 ||
	    ioctl(fd, TUNSETPERSIST, 1UL) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int
tap_address(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", VMM_TAP_NAME);
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	sin->sin_family = AF_INET;
	int r = 0;
	inet_pton(AF_INET, AGENT_PROTO_HOST_ADDR, &sin->sin_addr);
	if (ioctl(s, SIOCSIFADDR, &ifr) < 0)
		r = -errno;
	inet_pton(AF_INET, "255.255.255.0", &sin->sin_addr);
	if (r == 0 && ioctl(s, SIOCSIFNETMASK, &ifr) < 0)
		r = -errno;
	if (r == 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
			r = -errno;
	}
	close(s);
	return r;
}

int
microvm_net_setup(uid_t uid, unsigned port)
{
	int r = tap_create(uid);
	if (r == 0)
		r = tap_address();
	if (r < 0) {
		fprintf(stderr, "warren: tap %s: %s\n", VMM_TAP_NAME, strerror(-r));
		return r;
	}
	/* /proc/sys/net is the opener's namespace: this is the slot's forwarding switch */
	FILE *f = fopen("/proc/sys/net/ipv4/ip_forward", "we");
	if (!f || fputs("1", f) < 0 || fclose(f) != 0) {
		fprintf(stderr, "warren: ip_forward in the slot: %s\n", strerror(errno));
		return -errno;
	}
	char script[1024];
	snprintf(script, sizeof script,
		 "table ip %1$s\n"
		 "delete table ip %1$s\n"
		 "table ip %1$s {\n"
		 " chain prerouting { type nat hook prerouting priority dstnat;\n"
		 "  iifname \"eth0\" tcp dport { %2$u%5$s } dnat to %3$s\n"
		 " }\n"
		 " chain postrouting { type nat hook postrouting priority srcnat;\n"
		 "  oifname \"eth0\" ip saddr %4$s masquerade\n"
		 " }\n"
		 "}\n",
		 MICROVM_NFT_TABLE, port, AGENT_PROTO_GUEST_ADDR, AGENT_PROTO_GUEST_ADDR,
		 /* the agent's envd API too, unless it is the template's own port */
		 port == AGENT_PROTO_ENVD_PORT ? "" : ", " AGENT_PROTO_ENVD_PORT_S);
	r = nft_run(script);
	if (r < 0)
		fprintf(stderr, "warren: nft table %s in the slot failed\n", MICROVM_NFT_TABLE);
	return r;
}
