/* warren-gateway: the unprivileged HTTP/1.1 reverse proxy in front of the sandboxes. Routes
 * come from the supervisor over Warren IPC; readiness, idleness and thaw requests go back. */
#include "gateway.h"
#include "log.h"
#include "notify.h"

#include <stdio.h>
#include <stdlib.h>

static void
usage(void)
{
	printf("Usage: warren-gateway [OPTIONS]\n"
	       "  --listen ADDR        HTTP address (default 127.0.0.1)\n"
	       "  --port N             HTTP port (default 8300)\n"
	       "  --domain D           sandboxes answer as <id>.D (default warren.localhost)\n"
	       "  --user U             switch to this user after binding\n" DAEMON_COMMON_HELP);
}

int
main(int argc, char **argv)
{
	static struct gateway g;
	daemon_common_init(&g.dc, "gateway");
	const char *listen = "127.0.0.1", *user = NULL;
	unsigned port = 8300;
	g.domain = "warren.localhost";
	static const struct option opts[] = {{"listen", required_argument, NULL, 'l'},
					     {"port", required_argument, NULL, 'p'},
					     {"domain", required_argument, NULL, 'D'},
					     {"user", required_argument, NULL, 'u'},
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
		switch (c) {
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
	if (g.dc.dump_seccomp)
		return daemon_lock_down(&g.dc, NULL, NULL, 0, &gateway_seccomp) < 0;
	g.dc.base = event_base_new();
	int lfd = daemon_listen(&g.dc);
	if (lfd < 0)
		return 1;
	if (!g.dc.seccomp_probe && proxy_listen(&g, listen, port) < 0)
		return 1;
	if (daemon_lock_down(&g.dc, user, NULL, 0, &gateway_seccomp) < 0)
		return 1;
	struct ipc_server_config cfg = {.name = "gateway",
					.table = gateway_handlers,
					.n_table = gateway_n_handlers,
					.allowed_uids = g.dc.peer_uids,
					.n_allowed_uids = g.dc.n_peer_uids,
					.drop_on_violation = false,
					.userdata = &g};
	g.server = ipc_server_new(g.dc.base, lfd, &cfg);
	ipc_server_set_ready(g.server, true);
	proxy_idle_scan_start(&g);
	notify_send("READY=1");
	log_info("Ready: http://%s:%u/ (sandboxes as <id>.%s)", listen, port, g.domain);
	daemon_run(&g.dc);
	ipc_server_free(g.server);
	return 0;
}
