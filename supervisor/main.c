/* warren-supervisor: the unprivileged owner of the D-Bus API (org.warren.Warren1) and of the
 * sandbox state. Loads templates and saved sandboxes, connects to its helpers, takes the bus
 * name, locks itself down (no capabilities, seccomp) and runs. */
#include "agent-token.h"
#include "bus-errors.h"
#include "bus-event.h"
#include "exec.h"
#include "fileio.h"
#include "lifetime.h"
#include "log.h"
#include "macro.h"
#include "metrics.h"
#include "notify.h"
#include "privdrop.h"
#include "sandbox-egress.h"
#include "reclaim.h"
#include "snapshot.h"
#include "supervisor-dbus.h"
#include "supervisor.h"
#include "templates.h"
#include "warm.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static void
usage(void)
{
	printf("Usage: warren-supervisor [OPTIONS]\n"
	       "  --state-dir DIR        sandbox and template records (default "
	       "/var/lib/warren/state)\n"
	       "  --templates-dir DIR    template root filesystems (default "
	       "/var/lib/warren/templates)\n"
	       "  --netnsd-socket P      (default /run/warren/netnsd.sock)\n"
	       "  --snapshotd-socket P   (default /run/warren/snapshotd.sock)\n"
	       "  --gateway-socket P     (default /run/warren/gateway.sock)\n"
	       "  --gateway-user U       the user the gateway runs as (default warren-gateway)\n"
	       "  --agent-api-user U     sandboxes of U (the E2B control plane) reach their agent\n"
	       "                         without Warren's agent token (default warren-e2b)\n"
	       "  --gateway-url URL      (default http://127.0.0.1:8300)\n"
	       "  --gateway-domain D     (default warren.localhost)\n"
	       "  --idle-ms N            freeze sandboxes idle this long, 0 never (default "
	       "300000)\n"
	       "  --max-templates N      AddTemplate refuses more templates (default 1024)\n"
	       "  --user U               switch to U when started as root\n"
	       "  --log-journal          log to journald with SANDBOX_ID=, TEMPLATE=, BACKEND=\n"
	       "                         (default: when stderr is the "
	       "journal)\n" DAEMON_COMMON_HELP);
}

/* What the helpers' links hand up (helper-client.c sits below the features): gateway scrapes
 * to metrics, everything else to the sandboxes; netnsd coming back re-adopts the sandboxes it
 * still runs, the gateway coming back gets every route again. */
static void
helper_event(const IpcResponse *ev)
{
	if (ev->body_case == WARREN__V1__RESPONSE__BODY_METRICS_NEEDED) {
		metrics_on_needed(ev->metrics_needed->seq);
		return;
	}
	sandbox_on_event(ev);
}

static void
helper_connected(int which)
{
	if (which == HELPER_NETNSD)
		sandboxes_reconcile(sup);
	else if (which == HELPER_GATEWAY)
		sandboxes_push_routes(sup);
}

/* What sandbox.c hands up: a sandbox gone for good takes its lifetime with it; its state
 * changes and its appearing or leaving are signalled by sandbox-dbus.c; the features hear what
 * concerns them (sandbox_hooks below). */
static void
sandbox_forgotten(const struct sandbox *sb)
{
	lifetime_forget(sb);
	sandbox_egress_forget(sb);
}

static const struct sandbox_hooks sandbox_hooks = {
	.forgotten = sandbox_forgotten,
	.state_changed = sandbox_dbus_emit_state,
	.announced = sandbox_dbus_emit_new,
	.answered = metrics_sandbox_ready,
	.warmer_ready = warm_sandbox_ready,
	.warmer_done = warm_done,
	.fork_child_done = fork_job_child_done,
	.frozen = reclaim_after_freeze,
	.idle_deferred = exec_defer_idle_freeze,
};

static const struct helper_hooks helper_hooks = {
	.event = helper_event,
	.connected = helper_connected,
};

int
main(int argc, char **argv)
{
	static struct supervisor s;
	sup = &s;
	daemon_common_init(&s.dc, "supervisor");
	const char *state = "/var/lib/warren/state", *templates = "/var/lib/warren/templates";
	const char *gateway_user = "warren-gateway", *user = NULL, *agent_api_user = "warren-e2b";
	s.helpers[HELPER_NETNSD] =
		(struct helper){.name = "netnsd", .socket = "/run/warren/netnsd.sock"};
	s.helpers[HELPER_SNAPSHOTD] =
		(struct helper){.name = "snapshotd", .socket = "/run/warren/snapshotd.sock"};
	s.helpers[HELPER_GATEWAY] =
		(struct helper){.name = "gateway", .socket = "/run/warren/gateway.sock"};
	s.gateway_url = "http://127.0.0.1:8300";
	s.gateway_domain = "warren.localhost";
	s.idle_ms = 300000;
	s.max_templates = 1024;
	static const struct option opts[] = {{"state-dir", required_argument, NULL, 'S'},
					     {"templates-dir", required_argument, NULL, 'T'},
					     {"netnsd-socket", required_argument, NULL, 'n'},
					     {"snapshotd-socket", required_argument, NULL, 's'},
					     {"gateway-socket", required_argument, NULL, 'g'},
					     {"gateway-user", required_argument, NULL, 'G'},
					     {"gateway-url", required_argument, NULL, 'U'},
					     {"agent-api-user", required_argument, NULL, 'A'},
					     {"gateway-domain", required_argument, NULL, 'D'},
					     {"idle-ms", required_argument, NULL, 'i'},
					     {"user", required_argument, NULL, 'u'},
					     {"max-templates", required_argument, NULL, 'M'},
					     {"importd-socket", required_argument, NULL, 'I'},
					     {"log-journal", no_argument, NULL, 'J'},
					     {"help", no_argument, NULL, 'h'},
					     DAEMON_COMMON_OPTIONS,
					     {}};
	int c;
	bool journal = false;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		int r = daemon_common_option(&s.dc, c, optarg);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		switch (c) {
		case 'S':
			state = optarg;
			break;
		case 'T':
			templates = optarg;
			break;
		case 'n':
			s.helpers[HELPER_NETNSD].socket = optarg;
			break;
		case 's':
			s.helpers[HELPER_SNAPSHOTD].socket = optarg;
			break;
		case 'g':
			s.helpers[HELPER_GATEWAY].socket = optarg;
			break;
		case 'G':
			gateway_user = optarg;
			break;
		case 'A':
			agent_api_user = optarg;
			break;
		case 'U':
			s.gateway_url = optarg;
			break;
		case 'D':
			s.gateway_domain = optarg;
			break;
		case 'i':
			s.idle_ms = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'u':
			user = optarg;
			break;
		case 'J':
			journal = true;
			break;
		case 'M':
			s.max_templates = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'I':
			template_importd_socket = optarg; /* template-import.c */
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 2;
		}
	}
	if (s.dc.dump_seccomp)
		return daemon_lock_down(&s.dc, NULL, NULL, 0, &supervisor_seccomp) < 0;
	journal_init(journal);
	/* Helpers run as root except the gateway, which runs as its own user. */
	uid_t gw_uid = 0;
	gid_t gw_gid;
	if (privdrop_lookup_user(gateway_user, &gw_uid, &gw_gid) < 0) {
		log_error("Unknown gateway user %s", gateway_user);
		return 2;
	}
	uid_t api_uid;
	gid_t api_gid;
	if (privdrop_lookup_user(agent_api_user, &api_uid, &api_gid) == 0)
		agent_token_set_api_uid(api_uid);
	else
		log_info("No user %s: every sandbox's agent needs its agent token", agent_api_user);
	s.helpers[HELPER_NETNSD].uid = 0;
	s.helpers[HELPER_SNAPSHOTD].uid = 0;
	s.helpers[HELPER_GATEWAY].uid = gw_uid;
	char path[PATH_MAX];
	s.state_dir = strdup(state);
	if (!s.state_dir)
		return log_error_errno(-ENOMEM, "State dir: %m"), 1;
	snprintf(path, sizeof path, "%s/sandboxes", state);
	int r = mkdir_p(path, 0700);
	snprintf(path, sizeof path, "%s/templates", state);
	if (r == 0)
		r = mkdir_p(path, 0700);
	if (r < 0)
		return log_error_errno(r, "Cannot create %s (run as the warren user?): %m", path),
		       1;
	s.templates_dir = realpath(templates, NULL);
	if (!s.templates_dir)
		return log_error_errno(-errno, "Templates dir %s: %m", templates), 1;

	if (!s.dc.seccomp_probe) {
		if (user && geteuid() == 0 && privdrop_apply(user, NULL, 0) < 0)
			return 1;
		r = sd_bus_open_system(&s.bus);
		if (r < 0)
			return log_error_errno(r, "Cannot connect to the system bus: %m"), 1;
	}
	if (daemon_lock_down(&s.dc, NULL, NULL, 0, &supervisor_seccomp) < 0)
		return 1;
	s.dc.base = event_base_new();
	if ((r = templates_load(&s)) < 0)
		return log_error_errno(r, "Templates: %m"), 1;
	sandbox_hooks_set(&sandbox_hooks);
	sandboxes_load(&s);
	lifetime_load(&s);
	sandbox_egress_load(&s);
	if ((r = bus_errors_init()) < 0)
		return log_error_errno(r, "D-Bus error map: %m"), 1;
	if ((r = manager_dbus_init(&s)) < 0 || (r = sandbox_dbus_init(&s)) < 0)
		return log_error_errno(r, "D-Bus objects: %m"), 1;
	r = sd_bus_request_name(s.bus, BUS_NAME, 0);
	if (r < 0)
		return log_error_errno(r, "Cannot own %s (D-Bus policy installed?): %m", BUS_NAME),
		       1;
	if ((r = bus_event_attach(s.bus, &s.dc, NULL)) < 0)
		return log_error_errno(r, "D-Bus on the event loop: %m"), 1;
	if ((r = helpers_init(s.dc.base, s.helpers, &helper_hooks)) < 0)
		return log_error_errno(r, "Helper links: %m"), 1;
	notify_send("READY=1");
	log_info("Ready on the system bus as %s", BUS_NAME);
	daemon_run(&s.dc);
	sd_bus_flush_close_unref(s.bus);
	return 0;
}
