/* warren-clusterd: joins this Warren host to a cluster kept in etcd (docs/MULTIHOST.md). An
 * unprivileged daemon (its own user, no capabilities, a seccomp allow-list) that is a D-Bus
 * client of the local supervisor. main: options, what is opened before the lock-down (the
 * listener, the cluster key), the lock-down, the loop. Single-host Warren does not run it. */
#include "clusterd.h"
#include "daemon.h"
#include "log.h"
#include "macro.h"
#include "notify.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_DEFAULT_PATH "/etc/warren/cluster-key"

static void
usage(void)
{
	printf("Usage: warren-clusterd [OPTIONS]\n"
	       "Joins this Warren host to a cluster kept in etcd; places creates across hosts.\n"
	       "  --name NAME            this host's name in the cluster ([a-z0-9-], default the\n"
	       "                         hostname)\n"
	       "  --listen ADDR:PORT     HTTP address (default 0.0.0.0:8303)\n"
	       "  --advertise ADDR:PORT  the address other hosts reach this one at (default\n"
	       "                         --listen)\n"
	       "  --gateway-url URL      this host's gateway as clients reach it (published;\n"
	       "                         http://ADDR:PORT for other hosts' gateways to proxy to)\n"
	       "  --e2b-url URL          this host's E2B control plane, http://ADDR:PORT as the\n"
	       "                         other hosts' reach it (published: the E2B front door\n"
	       "                         forwards creates and calls there)\n"
	       "  --gateway-socket PATH  the gateway's cluster socket: push it the routes to\n"
	       "                         other hosts' sandboxes (default: no routing across\n"
	       "                         hosts)\n"
	       "  --etcd ADDR:PORT,...   etcd's client endpoints (default 127.0.0.1:2379)\n"
	       "  --cluster-key PATH     the shared cluster key (default " KEY_DEFAULT_PATH ";\n"
	       "                         root-owned, not readable by others)\n"
	       "  --prefix P             etcd key prefix (default /warren)\n"
	       "  --lease-ttl S          membership lease in seconds (default 10)\n"
	       "  --choices K            placement samples K hosts (default 2)\n"
	       "  --user USER            switch to USER when started as root (default "
	       "warren-cluster)\n" DAEMON_COMMON_HELP);
}

static int
listen_on(const char *s)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char host[32];
	if (!cluster_input_addr_ok(s))
		return -EINVAL;
	const char *colon = strrchr(s, ':');
	snprintf(host, sizeof host, "%.*s", (int)(colon - s), s);
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -EINVAL;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* The key: one line, 16-256 printable characters, in a file no other user may read (it is
 * root:warren-cluster 0640); read once, before the lock-down. */
static int
read_key(const char *path, char *key)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0)
		return log_error_errno(-errno, "Cannot open the cluster key %s: %m", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 0007) ||
	    (st.st_uid != 0 && st.st_uid != geteuid()))
		return log_error_errno(-EPERM,
				       "The cluster key %s must be a file of root's, not readable "
				       "by others (0640)",
				       path);
	ssize_t n = read(fd, key, CLUSTER_KEY_MAX + 1);
	if (n < 0)
		return log_error_errno(-errno, "Cannot read %s: %m", path);
	while (n > 0 && (key[n - 1] == '\n' || key[n - 1] == '\r'))
		n--;
	key[n] = 0;
	if (n < 16 || n > CLUSTER_KEY_MAX)
		return log_error_errno(-EINVAL, "The cluster key must be 16-256 characters");
	for (ssize_t i = 0; i < n; i++)
		if (key[i] < 0x21 || key[i] > 0x7e)
			return log_error_errno(-EINVAL, "The cluster key must be printable ASCII");
	return 0;
}

int
main(int argc, char **argv)
{
	struct daemon_common dc;
	static struct cluster c = {.prefix = "/warren",
				   .lease_ttl = 10,
				   .k = 2,
				   .gateway_url = "http://127.0.0.1:8300"};
	const char *listen_addr = "0.0.0.0:8303", *etcd = "127.0.0.1:2379";
	const char *key_path = KEY_DEFAULT_PATH, *user = NULL;
	bool user_given = false;
	char hostname[256];
	enum {
		O_NAME = 2000,
		O_ADV,
		O_GW,
		O_ETCD,
		O_KEY,
		O_PREFIX,
		O_TTL,
		O_K,
		O_USER,
		O_GWSOCK,
		O_E2B
	};
	static const struct option opts[] = {DAEMON_COMMON_OPTIONS,
					     {"name", required_argument, NULL, O_NAME},
					     {"listen", required_argument, NULL, 'l'},
					     {"advertise", required_argument, NULL, O_ADV},
					     {"gateway-url", required_argument, NULL, O_GW},
					     {"gateway-socket", required_argument, NULL, O_GWSOCK},
					     {"e2b-url", required_argument, NULL, O_E2B},
					     {"etcd", required_argument, NULL, O_ETCD},
					     {"cluster-key", required_argument, NULL, O_KEY},
					     {"prefix", required_argument, NULL, O_PREFIX},
					     {"lease-ttl", required_argument, NULL, O_TTL},
					     {"choices", required_argument, NULL, O_K},
					     {"user", required_argument, NULL, O_USER},
					     {"help", no_argument, NULL, 'h'},
					     {}};
	daemon_common_init(&dc, "clusterd");
	int ch;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		int r = daemon_common_option(&dc, ch, optarg);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		switch (ch) {
		case O_NAME:
			c.name = optarg;
			break;
		case 'l':
			listen_addr = optarg;
			break;
		case O_ADV:
			c.advertise = optarg;
			break;
		case O_GW:
			c.gateway_url = optarg;
			break;
		case O_E2B:
			if (!cluster_input_url_ok(optarg))
				return log_error("Bad --e2b-url (http://ADDR:PORT, IPv4)"), 2;
			c.e2b_url = optarg;
			break;
		case O_GWSOCK:
			c.gateway_socket = optarg;
			break;
		case O_ETCD:
			etcd = optarg;
			break;
		case O_KEY:
			key_path = optarg;
			break;
		case O_PREFIX:
			c.prefix = optarg;
			break;
		case O_TTL:
			c.lease_ttl = atoi(optarg);
			if (c.lease_ttl < 2 || c.lease_ttl > 300)
				return log_error("Bad --lease-ttl (2-300)"), 2;
			break;
		case O_K:
			c.k = (unsigned)atoi(optarg);
			if (c.k < 1 || c.k > PLACE_MAX_HOSTS)
				return log_error("Bad --choices"), 2;
			break;
		case O_USER:
			user = optarg;
			user_given = true;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 2;
		}
	}
	if (!user_given && geteuid() == 0)
		user = "warren-cluster";
	if (user && !*user)
		user = NULL;
	if (dc.dump_seccomp)
		return daemon_lock_down(&dc, NULL, NULL, 0, &clusterd_seccomp) < 0;
	if (!c.name) {
		if (gethostname(hostname, sizeof hostname) < 0)
			return 1;
		hostname[sizeof hostname - 1] = 0;
		c.name = hostname;
	}
	if (!c.advertise)
		c.advertise = listen_addr;
	if (!cluster_input_name_ok(c.name) || !cluster_input_addr_ok(c.advertise) ||
	    !cluster_input_addr_ok(listen_addr) || strlen(c.gateway_url) > 200 ||
	    c.prefix[0] != '/' || strlen(c.prefix) > 64)
		return log_error("Bad --name, --listen, --advertise, --gateway-url or --prefix"), 2;
	if (etcd_init(&c.etcd, etcd) < 0)
		return log_error("Bad --etcd (ADDR:PORT,...)"), 2;
	/* opened before the lock-down: the listener and the key (root's file) */
	int lfd = -1;
	if (!dc.seccomp_probe) {
		lfd = listen_on(listen_addr);
		if (lfd < 0)
			return log_error_errno(lfd, "Cannot listen on %s: %m", listen_addr), 1;
		if (read_key(key_path, c.key) < 0)
			return 1;
	}
	if (daemon_lock_down(&dc, user, NULL, 0, &clusterd_seccomp) < 0)
		return 1;
	/* the bus connection is made as the daemon's user: the bus policy names that user */
	int r = sd_bus_open_system(&c.bus);
	if (r < 0)
		return log_error_errno(r, "Cannot connect to the system bus: %m"), 1;
	c.base = event_base_new();
	dc.base = c.base;
	if (!c.base || bus_event_attach(c.bus, &dc, &c.bus_ev) < 0 ||
	    cluster_http_start(&c, lfd) < 0 || gateway_routes_init(&c) < 0 ||
	    catalog_watch_start(&c) < 0)
		return log_error("Cannot start the loop"), 1;
	c.tick_ev = event_new(c.base, -1, EV_PERSIST, member_tick, &c);
	struct timeval one = {1, 0};
	event_add(c.tick_ev, &one);
	member_tick(-1, 0, &c);
	notify_send("READY=1");
	log_info("Ready: %s on http://%s/, etcd %s, lease %d s", c.name, listen_addr, etcd,
		 c.lease_ttl);
	daemon_run(&dc);
	event_free(c.tick_ev);
	evhttp_free(c.http);
	bus_event_free(c.bus_ev);
	sd_bus_flush_close_unref(c.bus);
	return 0;
}
