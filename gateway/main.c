/* warren-gateway: the unprivileged HTTP/1.1 reverse proxy in front of the sandboxes. Routes
 * come from the supervisor over Warren IPC; readiness, idleness and thaw requests go back. */
#include "gateway.h"
#include "http-parse.h"
#include "log.h"
#include "notify.h"
#include "privdrop.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

/* fds kept aside from client connections: listeners, IPC peers, readiness probes, logs */
#define FD_RESERVE 64
#define DEFAULT_MAX_CONNS 4096
#define MAX_OPEN_FILES_DEFAULT 65536

static void
usage(void)
{
	printf("Usage: warren-gateway [OPTIONS]\n"
	       "  --listen ADDR          HTTP address (default 127.0.0.1)\n"
	       "  --port N               HTTP port (default 8300)\n"
	       "  --domain D             sandboxes answer as <id>.D (default warren.localhost)\n"
	       "  --user U               switch to this user after binding\n"
	       "  --metrics-listen ADDR  address of the Prometheus endpoint (default 127.0.0.1)\n"
	       "  --metrics-port N       GET /metrics there (default 9309; 0: none). The\n"
	       "                         default port is skipped with a warning when taken\n"
	       "Routing across hosts (docs/MULTIHOST.md; off without --cluster-socket):\n"
	       "  --cluster-socket PATH  the socket warren-clusterd pushes remote routes on\n"
	       "                         (made here, 0666: the peer's uid is what is checked)\n"
	       "  --cluster-user USER    the only user accepted there (default warren-cluster)\n"
	       "  --cluster-net CIDR,... the networks other hosts' gateways are in: a remote\n"
	       "                         route to any other address is refused (required)\n"
	       "  --cluster-port N       their gateways' port (default --port)\n"
	       "Limits (S: seconds, decimals allowed; 0 turns a limit off):\n"
	       "  --header-timeout S     a request head must be complete S after the accept\n"
	       "                         (or its first byte after a keep-alive wait), else 408\n"
	       "                         and close (default 10)\n"
	       "  --idle-timeout S       close a keep-alive connection idle for S (default 60)\n"
	       "  --body-timeout S       close when a request body, a response body or a write\n"
	       "                         to either side makes no progress for S (default 30)\n"
	       "  --response-timeout S   504 when the sandbox has not started its answer S\n"
	       "                         after the request (default 120)\n"
	       "  --max-connections N    client connections in all; above: 503 and close\n"
	       "                         (default min(4096, (open-file limit - 64) / 2): each\n"
	       "                         client may need an upstream fd)\n"
	       "  --max-connections-per-ip N\n"
	       "                         client connections from one address (default 256)\n"
	       "  --max-response-head N  bytes of a sandbox's response head, at most 16384;\n"
	       "                         above: 502 (default 16384)\n"
	       "  --max-open-files N     set RLIMIT_NOFILE (default: the hard limit, at most\n"
	       "                         65536); at the limit accepting pauses until fds "
	       "free\n" DAEMON_COMMON_HELP);
}

/* SECONDS (decimals allowed) -> ms; -1 on a bad value */
static long
parse_seconds(const char *s)
{
	char *end;
	errno = 0;
	double d = strtod(s, &end);
	if (errno || end == s || *end || !(d >= 0) || d > 86400)
		return -1;
	return (long)(d * 1000 + 0.5);
}

static long
parse_count(const char *s, long max)
{
	char *end;
	errno = 0;
	long n = strtol(s, &end, 10);
	if (errno || end == s || *end || n < 0 || n > max)
		return -1;
	return n;
}

/* Set the open-file limit and derive the connection cap from it: the cap keeps one upstream
 * fd for every client connection, so a full gateway still reaches its sandboxes. */
static int
limits_apply(struct gateway *g, long max_open_files, bool conns_given)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return log_error_errno(-errno, "getrlimit: %m");
	if (max_open_files >= 0)
		rl.rlim_cur = (rlim_t)max_open_files;
	else
		rl.rlim_cur =
			rl.rlim_max < MAX_OPEN_FILES_DEFAULT ? rl.rlim_max : MAX_OPEN_FILES_DEFAULT;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		if (max_open_files >= 0)
			return log_error_errno(-errno, "Cannot set the open-file limit to %ld: %m",
					       max_open_files);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	long derived = ((long)rl.rlim_cur - FD_RESERVE) / 2;
	if (derived < 1)
		derived = 1;
	if (!conns_given)
		g->lim.max_conns =
			(unsigned)(derived < DEFAULT_MAX_CONNS ? derived : DEFAULT_MAX_CONNS);
	else if (!g->lim.max_conns || g->lim.max_conns > derived)
		log_warning("--max-connections %u is above what %lu open files carry (%ld): the "
			    "gateway may run out of fds (it then pauses accepting)",
			    g->lim.max_conns, (unsigned long)rl.rlim_cur, derived);
	return 0;
}

/* The supervisor went away: routes stay (sandboxes keep answering), but a sandbox not known
 * here may have been created meanwhile: 503 and Retry-After until the next one synced. */
static void
gateway_supervisor_gone(void *ud, uint64_t peer_serial)
{
	struct gateway *g = ud;
	g->status_seen = 0;
	log_warning("The supervisor is gone: unknown sandboxes are answered 503 until it is back");
}

int
main(int argc, char **argv)
{
	static struct gateway g;
	daemon_common_init(&g.dc, "gateway");
	const char *listen = "127.0.0.1", *user = NULL, *metrics_addr = "127.0.0.1";
	unsigned metrics_port = 9309;
	bool metrics_port_given = false;
	unsigned port = 8300;
	g.domain = "warren.localhost";
	g.lim = (struct gateway_limits){.header_timeout_ms = 10000,
					.idle_timeout_ms = 60000,
					.body_timeout_ms = 30000,
					.response_timeout_ms = 120000,
					.max_conns_per_ip = 256,
					.max_response_head = HTTP_MAX_HEAD};
	long max_open_files = -1;
	bool conns_given = false;
	enum {
		O_HEADER_TIMEOUT = 0x100,
		O_IDLE_TIMEOUT,
		O_BODY_TIMEOUT,
		O_RESPONSE_TIMEOUT,
		O_MAX_CONNS,
		O_MAX_CONNS_PER_IP,
		O_MAX_RESPONSE_HEAD,
		O_MAX_OPEN_FILES,
		O_METRICS_LISTEN = 0x200,
		O_METRICS_PORT,
		O_CLUSTER_SOCKET = 0x300,
		O_CLUSTER_USER,
		O_CLUSTER_NET,
		O_CLUSTER_PORT
	};
	const char *cluster_socket = NULL, *cluster_user = "warren-cluster", *cluster_net = NULL;
	long cluster_port = 0;
	static const struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"port", required_argument, NULL, 'p'},
		{"domain", required_argument, NULL, 'D'},
		{"user", required_argument, NULL, 'u'},
		{"header-timeout", required_argument, NULL, O_HEADER_TIMEOUT},
		{"idle-timeout", required_argument, NULL, O_IDLE_TIMEOUT},
		{"body-timeout", required_argument, NULL, O_BODY_TIMEOUT},
		{"response-timeout", required_argument, NULL, O_RESPONSE_TIMEOUT},
		{"max-connections", required_argument, NULL, O_MAX_CONNS},
		{"max-connections-per-ip", required_argument, NULL, O_MAX_CONNS_PER_IP},
		{"max-response-head", required_argument, NULL, O_MAX_RESPONSE_HEAD},
		{"max-open-files", required_argument, NULL, O_MAX_OPEN_FILES},
		{"metrics-listen", required_argument, NULL, O_METRICS_LISTEN},
		{"metrics-port", required_argument, NULL, O_METRICS_PORT},
		{"cluster-socket", required_argument, NULL, O_CLUSTER_SOCKET},
		{"cluster-user", required_argument, NULL, O_CLUSTER_USER},
		{"cluster-net", required_argument, NULL, O_CLUSTER_NET},
		{"cluster-port", required_argument, NULL, O_CLUSTER_PORT},
		{"help", no_argument, NULL, 'h'},
		DAEMON_COMMON_OPTIONS,
		{}};
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		int r = daemon_common_option(&g.dc, c, optarg);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		if (c == O_METRICS_LISTEN) {
			metrics_addr = optarg;
			continue;
		}
		if (c == O_METRICS_PORT) {
			long p = parse_count(optarg, 65535);
			if (p < 0)
				return log_error("Bad value for --metrics-port: %s", optarg), 2;
			metrics_port = (unsigned)p;
			metrics_port_given = true;
			continue;
		}
		if (c == O_CLUSTER_SOCKET || c == O_CLUSTER_USER || c == O_CLUSTER_NET) {
			*(c == O_CLUSTER_SOCKET ? &cluster_socket
			  : c == O_CLUSTER_USER ? &cluster_user
						: &cluster_net) = optarg;
			continue;
		}
		if (c == O_CLUSTER_PORT) {
			cluster_port = parse_count(optarg, 65535);
			if (cluster_port < 1)
				return log_error("Bad value for --cluster-port: %s", optarg), 2;
			continue;
		}
		long v = 0;
		if (c >= O_HEADER_TIMEOUT && c <= O_RESPONSE_TIMEOUT)
			v = parse_seconds(optarg);
		else if (c == O_MAX_RESPONSE_HEAD)
			v = parse_count(optarg, HTTP_MAX_HEAD);
		else if (c >= O_MAX_CONNS && c <= O_MAX_OPEN_FILES)
			v = parse_count(optarg, 1 << 24);
		if (v < 0 || (c == O_MAX_RESPONSE_HEAD && v < 64) ||
		    (c == O_MAX_OPEN_FILES && v < 16)) {
			log_error("Bad value for --%s: %s", opts[c - O_HEADER_TIMEOUT + 4].name,
				  optarg);
			return 2;
		}
		switch (c) {
		case O_HEADER_TIMEOUT:
			g.lim.header_timeout_ms = (unsigned)v;
			break;
		case O_IDLE_TIMEOUT:
			g.lim.idle_timeout_ms = (unsigned)v;
			break;
		case O_BODY_TIMEOUT:
			g.lim.body_timeout_ms = (unsigned)v;
			break;
		case O_RESPONSE_TIMEOUT:
			g.lim.response_timeout_ms = (unsigned)v;
			break;
		case O_MAX_CONNS:
			g.lim.max_conns = (unsigned)v;
			conns_given = true;
			break;
		case O_MAX_CONNS_PER_IP:
			g.lim.max_conns_per_ip = (unsigned)v;
			break;
		case O_MAX_RESPONSE_HEAD:
			g.lim.max_response_head = (unsigned)v;
			break;
		case O_MAX_OPEN_FILES:
			max_open_files = v;
			break;
		case 'l':
			listen = optarg;
			break;
		case 'p':
			port = (unsigned)atoi(optarg);
			break;
		case 'D':
			g.domain = optarg;
			break;
		case 'u':
			user = optarg;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 2;
		}
	}
	if (!port_valid(port))
		return log_error("Bad --port"), 2;
	uid_t cluster_uid = 0;
	gid_t cluster_gid;
	if (cluster_socket) {
		if (!cluster_net || remote_nets_parse(&g, cluster_net) < 0)
			return log_error("--cluster-socket needs --cluster-net A.B.C.D/N[,...] (/8 "
					 "to /32)"),
			       2;
		if (privdrop_lookup_user(cluster_user, &cluster_uid, &cluster_gid) < 0 ||
		    cluster_uid == 0)
			return log_error("Bad --cluster-user %s", cluster_user), 2;
		g.cluster_port = (uint16_t)(cluster_port ? cluster_port : port);
	}
	if (g.dc.dump_seccomp)
		return daemon_lock_down(&g.dc, NULL, NULL, 0, &gateway_seccomp) < 0;
	if (limits_apply(&g, max_open_files, conns_given) < 0)
		return 1;
	g.dc.base = event_base_new();
	/* the layers above the route table hear of its changes: probing first, then held requests
	 * (a route that just became ready is running by the time the proxy looks) */
	route_listen(&g, probe_route_changed);
	route_listen(&g, proxy_route_changed);
	int lfd = daemon_listen(&g.dc);
	if (lfd < 0)
		return 1;
	if (!g.dc.seccomp_probe && proxy_listen(&g, listen, port) < 0)
		return 1;
	/* A metrics port asked for must be had; the default one is given up when taken (another
	 * Warren on this host, a test's gateway beside a running one). */
	if (!g.dc.seccomp_probe && metrics_port &&
	    metrics_listen(&g, metrics_addr, metrics_port) < 0) {
		if (metrics_port_given)
			return 1;
		log_warning("No metrics endpoint: 127.0.0.1:%u is taken (--metrics-port)",
			    metrics_port);
	}
	/* clusterd's socket, bound before the lock-down; 0666 because the gateway's user cannot
	 * give it clusterd's group: the accept checks the peer's uid (SO_PEERCRED) instead */
	int cfd = -1;
	if (cluster_socket && !g.dc.seccomp_probe) {
		cfd = ipc_listen(cluster_socket, 0666);
		if (cfd < 0)
			return log_error_errno(cfd, "Cannot listen on %s: %m", cluster_socket), 1;
	}
	if (daemon_lock_down(&g.dc, user, NULL, 0, &gateway_seccomp) < 0)
		return 1;
	struct ipc_server_config cfg = {.name = "gateway",
					.table = gateway_handlers,
					.n_table = gateway_n_handlers,
					.allowed_uids = g.dc.peer_uids,
					.n_allowed_uids = g.dc.n_peer_uids,
					.drop_on_violation = false,
					.on_peer_gone = gateway_supervisor_gone,
					.userdata = &g};
	g.server = ipc_server_new(g.dc.base, lfd, &cfg);
	ipc_server_set_ready(g.server, true);
	if (cfd >= 0) {
		/* its own table and peer: clusterd cannot send the supervisor's requests, nor the
		 * supervisor clusterd's, and clusterd coming and going is not the supervisor's */
		struct ipc_server_config ccfg = {.name = "gateway-cluster",
						 .table = gateway_cluster_handlers,
						 .n_table = gateway_n_cluster_handlers,
						 .allowed_uids = &cluster_uid,
						 .n_allowed_uids = 1,
						 .drop_on_violation = false,
						 .on_peer_gone = remote_routes_peer_gone,
						 .userdata = &g};
		g.cluster_server = ipc_server_new(g.dc.base, cfd, &ccfg);
		if (!g.cluster_server)
			return log_error("Cannot serve %s", cluster_socket), 1;
		ipc_server_set_ready(g.cluster_server, true);
		log_info("Routing across hosts: remote routes from uid %u on %s, to port %u",
			 (unsigned)cluster_uid, cluster_socket, g.cluster_port);
	}
	proxy_idle_scan_start(&g);
	notify_send("READY=1");
	log_info("Ready: http://%s:%u/ (sandboxes as <id>.%s); at most %u connections, %u per "
		 "address",
		 listen, port, g.domain, g.lim.max_conns, g.lim.max_conns_per_ip);
	daemon_run(&g.dc);
	ipc_server_free(g.server);
	ipc_server_free(g.cluster_server);
	return 0;
}
