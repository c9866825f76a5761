/* warren-e2b-api: E2B's control-plane REST API for Warren. An unprivileged daemon (its own
 * user, no capabilities, a seccomp allow-list) that is a D-Bus client of the supervisor like
 * warrenctl, and reaches sandbox agents only through the gateway. main: options, what is
 * opened before the lock-down (listener, bus, state directory), the lock-down, the loop. */
#include "host-subnets.h"
#include "daemon.h"
#include "e2b-api.h"
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

static void
usage(void)
{
	printf("Usage: warren-e2b-api [OPTIONS]\n"
	       "E2B's REST API (the e2b SDKs' E2B_API_URL) for Warren sandboxes.\n"
	       "  --listen ADDR:PORT     HTTP address (default 127.0.0.1:8302)\n"
	       "  --gateway ADDR:PORT    Warren's gateway, for the agents' /init (default "
	       "127.0.0.1:8300)\n"
	       "  --api-keys PATH        hashed API keys (default " API_KEYS_DEFAULT_PATH ")\n"
	       "  --state-dir DIR        its records (default /var/lib/warren/e2b)\n"
	       "  --user USER            switch to USER when started as root (default warren-e2b)\n"
	       "  --backend NAME         Warren backend for creates (default: the supervisor's)\n"
	       "  --domain DOMAIN        the sandboxes' domain reported to clients (default none)\n"
	       "  --envd-version V       the agents' envd API version reported (default 0.5.6:\n"
	       "                         multipart uploads, the agent's)\n"
	       "  --default-user NAME    the agents' default user, sent in /init (default user;\n"
	       "                         root where the template has no such user)\n"
	       "  --cpu-count N          CPUs reported per sandbox (default 1, netnsd's quota)\n"
	       "  --max-timeout S        longest sandbox lifetime in seconds (default 86400)\n"
	       "  --max-sandboxes N      E2B sandboxes kept at once (default "
	       "1024)\n"
	       "  --cluster ADDR:PORT    the local warren-clusterd: be a front door of the "
	       "cluster\n"
	       "                         (creates placed on any host, calls and lists for every\n"
	       "                         host's sandboxes; docs/MULTIHOST.md)\n"
	       "  --cluster-key PATH     the cluster key (default /etc/warren/cluster-key; "
	       "root's,\n"
	       "                         group warren-cluster, 0640: run with that group)\n"
	       "  --ifname-prefix P      netnsd's --ifname-prefix: its veths' subnets are the\n"
	       "                         pool's, not the host's (default "
	       "wrn)\n" DAEMON_COMMON_HELP);
}

static int
parse_addr(const char *s, struct sockaddr_in *out)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof host)
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	char *end;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (*end || port == 0 || port > 65535)
		return -EINVAL;
	memset(out, 0, sizeof *out);
	out->sin_family = AF_INET;
	out->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &out->sin_addr) != 1)
		return -EINVAL;
	return 0;
}

static int
listen_on(const struct sockaddr_in *addr)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (const struct sockaddr *)addr, sizeof *addr) < 0 || listen(fd, 128) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

static int
parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || !*s || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int
main(int argc, char **argv)
{
	struct daemon_common dc;
	struct e2b_api a = {.state_dir_fd = -1,
			    .keys_path = API_KEYS_DEFAULT_PATH,
			    .envd_version = "0.5.6",
			    .default_user = "user",
			    .cpu_count = 1,
			    .max_timeout_s = 86400,
			    .max_sandboxes = 1024};
	const char *listen_addr = "127.0.0.1:8302", *gateway = "127.0.0.1:8300";
	const char *state_dir = "/var/lib/warren/e2b", *user = NULL, *ifname_prefix = "wrn";
	const char *cluster = NULL, *cluster_key = "/etc/warren/cluster-key";
	bool user_given = false;
	enum {
		O_GATEWAY = 2000,
		O_KEYS,
		O_STATE,
		O_USER,
		O_BACKEND,
		O_DOMAIN,
		O_ENVD,
		O_CPU,
		O_MAXT,
		O_MAXS,
		O_DUSER,
		O_IFPREFIX,
		O_CLUSTER,
		O_CLUSTER_KEY
	};
	static const struct option opts[] = {
		DAEMON_COMMON_OPTIONS,
		{"listen", required_argument, NULL, 'l'},
		{"gateway", required_argument, NULL, O_GATEWAY},
		{"api-keys", required_argument, NULL, O_KEYS},
		{"state-dir", required_argument, NULL, O_STATE},
		{"user", required_argument, NULL, O_USER},
		{"backend", required_argument, NULL, O_BACKEND},
		{"domain", required_argument, NULL, O_DOMAIN},
		{"envd-version", required_argument, NULL, O_ENVD},
		{"default-user", required_argument, NULL, O_DUSER},
		{"cpu-count", required_argument, NULL, O_CPU},
		{"max-timeout", required_argument, NULL, O_MAXT},
		{"max-sandboxes", required_argument, NULL, O_MAXS},
		{"ifname-prefix", required_argument, NULL, O_IFPREFIX},
		{"cluster", required_argument, NULL, O_CLUSTER},
		{"cluster-key", required_argument, NULL, O_CLUSTER_KEY},
		{"help", no_argument, NULL, 'h'},
		{}};
	daemon_common_init(&dc, "e2b-api");
	int c;
	unsigned long v;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		int r = daemon_common_option(&dc, c, optarg);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		switch (c) {
		case 'l':
			listen_addr = optarg;
			break;
		case O_GATEWAY:
			gateway = optarg;
			break;
		case O_KEYS:
			a.keys_path = optarg;
			break;
		case O_STATE:
			state_dir = optarg;
			break;
		case O_USER:
			user = optarg;
			user_given = true;
			break;
		case O_BACKEND:
			a.backend = optarg;
			break;
		case O_DOMAIN:
			a.domain = optarg;
			break;
		case O_ENVD:
			a.envd_version = optarg;
			break;
		case O_DUSER:
			if (strlen(optarg) > 32 || !e2b_input_text_ok(optarg, strlen(optarg), 32))
				return log_error("Bad --default-user"), 2;
			a.default_user = optarg;
			break;
		case O_CPU:
			if (parse_uint(optarg, 1024, &v) < 0 || !v)
				return log_error("Bad --cpu-count"), 2;
			a.cpu_count = (unsigned)v;
			break;
		case O_MAXT:
			if (parse_uint(optarg, 30 * 86400, &v) < 0)
				return log_error("Bad --max-timeout"), 2;
			a.max_timeout_s = (uint32_t)v;
			break;
		case O_MAXS:
			if (parse_uint(optarg, 65536, &v) < 0 || !v)
				return log_error("Bad --max-sandboxes"), 2;
			a.max_sandboxes = v;
			break;
		case O_IFPREFIX:
			if (strlen(optarg) > 8)
				return log_error("Bad --ifname-prefix"), 2;
			ifname_prefix = optarg;
			break;
		case O_CLUSTER:
			cluster = optarg;
			break;
		case O_CLUSTER_KEY:
			cluster_key = optarg;
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
		user = "warren-e2b";
	if (user && !*user)
		user = NULL;
	if (dc.dump_seccomp)
		return daemon_lock_down(&dc, NULL, NULL, 0, &e2b_api_seccomp) < 0;
	struct sockaddr_in laddr;
	if (parse_addr(listen_addr, &laddr) < 0 || parse_addr(gateway, &a.gateway) < 0)
		return log_error("Bad --listen or --gateway (ADDR:PORT, IPv4)"), 2;
	a.keys = calloc(API_KEYS_MAX, sizeof *a.keys);
	if (!a.keys)
		return 1;
	/* opened before the lock-down: the listener, the bus, the state directory (its owner's,
	 * kept as an fd: every later write is relative to it) */
	int lfd = dc.seccomp_probe ? -1 : listen_on(&laddr);
	if (!dc.seccomp_probe && lfd < 0)
		return log_error_errno(lfd, "Cannot listen on %s: %m", listen_addr), 1;
	a.state_dir_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (a.state_dir_fd < 0 && !dc.seccomp_probe)
		return log_error_errno(-errno, "Cannot open the state directory %s: %m", state_dir),
		       1;
	/* netnsd reads them when it starts too (its deny set); a netlink socket is not allowed
	 * after the lock-down. All or none: a check that saw only some would let the rest be
	 * named in an allowOut. */
	int nn = host_subnets4(ifname_prefix, a.host_nets, E2B_HOST_NETS_MAX);
	if (nn == -E2BIG)
		return log_error("The host has more than %d IPv4 subnets: an allowOut could name "
				 "the ones past them",
				 E2B_HOST_NETS_MAX),
		       1;
	if (nn < 0)
		return log_error_errno(nn, "Cannot read the host's subnets: %m"), 1;
	a.n_host_nets = (size_t)nn;
	/* the cluster key: a file of root's its group reads, opened before the lock-down */
	if (cluster && !dc.seccomp_probe && e2b_cluster_setup(&a, cluster, cluster_key) < 0)
		return 1;
	/* libcrypto reads its configuration on first use: before the filter */
	uint8_t d[32];
	api_key_digest("warm-up", 7, d);
	if (daemon_lock_down(&dc, user, NULL, 0, &e2b_api_seccomp) < 0)
		return 1;
	struct stat st;
	if (fstat(a.state_dir_fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 0077))
		return log_error("The state directory %s must be mine and 0700", state_dir), 1;
	/* the bus connection is made as the daemon's user: the bus policy names that user */
	int r = sd_bus_open_system(&a.bus);
	if (r < 0)
		return log_error_errno(r, "Cannot connect to the system bus: %m"), 1;
	a.base = event_base_new();
	dc.base = a.base;
	if (e2b_store_load(&a) < 0)
		log_warning("Starting without the records of the state file");
	if (e2b_http_start(&a, lfd) < 0)
		return log_error("Cannot start the HTTP server"), 1;
	a.timer = event_new(a.base, -1, EV_PERSIST, e2b_http_tick, &a);
	struct timeval one = {1, 0};
	event_add(a.timer, &one);
	notify_send("READY=1");
	log_info("Ready: http://%s/ (E2B API), gateway %s, keys %s%s%s", listen_addr, gateway,
		 a.keys_path, a.clustered ? ", front door of the cluster through clusterd " : "",
		 a.clustered ? a.cluster_addr : "");
	daemon_run(&dc);
	event_free(a.timer);
	evhttp_free(a.http);
	sd_bus_flush_close_unref(a.bus);
	return 0;
}
