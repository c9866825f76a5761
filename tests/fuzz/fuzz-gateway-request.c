/* libFuzzer harness: the gateway's request path as a (compromised) supervisor reaches it. Each
 * input is a sequence of datagrams sent, one after the other, over one SOCK_SEQPACKET connection
 * to the gateway's real IPC server (common/ipc-server.c: receive, envelope decode, version and
 * fd-count checks, the dispatch table) running the gateway's real handlers (gateway-dispatch.c)
 * over its real route table (routes.c) and proxy (proxy.c, with no client connections: what a
 * route change does to held requests is a no-op here). The readiness prober (probe.c connects to
 * the route's address) is replaced, as the route table's first listener, by a ledger of the
 * routes being probed. The agent gate's fields are checked as taken (a bad token refused).
 *
 * The same for a (compromised) clusterd on the cluster socket (its own table: Status and
 * SetRemoteRoutes): a record whose length byte has its top bit set goes there. Remote routes
 * must stay inside the cluster's network and port (or be lost), never replace a local route,
 * and count at most GATEWAY_REMOTE_MAX.
 *
 * Input: records of [length byte][that many bytes (7 bits): one datagram], up to 16 of them. After
 * each datagram the table is checked: every route has a valid id (unique), an IPv4 address, a valid
 * port, a known state, a bounded reason and timeout; exactly the STARTING routes are probed; a
 * SetRoute or RemoveRoute the gateway answered with success is what the table now holds; the
 * Status answer counts the routes. Every input starts from an empty table (routes removed by
 * the real route_remove), so anything left allocated is a leak LeakSanitizer reports. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gateway.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "invariant broken at %s:%d: %s\n", __FILE__, __LINE__,     \
				#c);                                                               \
			__builtin_trap();                                                          \
		}                                                                                  \
	} while (0)

static struct gateway g;

/* ---- the boundary: the prober (real probes connect to the route's address) ---- */

#define MAX_PROBED 64
static struct route *probed[MAX_PROBED];
static size_t n_probed;

static bool
route_listed(const struct route *r)
{
	for (struct route *q = g.routes; q; q = q->next)
		if (q == r)
			return true;
	return false;
}

static ssize_t
probed_index(const struct route *r)
{
	for (size_t i = 0; i < n_probed; i++)
		if (probed[i] == r)
			return (ssize_t)i;
	return -1;
}

/* the prober's place as a listener of the route table: a ledger of the routes it would probe */
static void
ledger_route_changed(struct gateway *gw, struct route *r)
{
	CHECK(gw == &g);
	ssize_t i = probed_index(r);
	if (r->state == WARREN__V1__ROUTE_STATE__ROUTE_STARTING) {
		CHECK(route_listed(r));
		/* what probe.c relies on: a valid IPv4 address and port to connect to */
		CHECK(r->sa.sin_family == AF_INET && port_valid(ntohs(r->sa.sin_port)));
		if (i < 0) {
			CHECK(n_probed < MAX_PROBED);
			probed[n_probed++] = r;
		}
	} else if (i >= 0)
		probed[i] = probed[--n_probed];
}

/* ---- the invariants ---- */

static void
check_table(void)
{
	unsigned n = 0;
	for (struct route *r = g.routes; r; r = r->next) {
		n++;
		CHECK(sandbox_id_valid(r->id));
		for (struct route *q = r->next; q; q = q->next)
			CHECK(strcmp(q->id, r->id));
		CHECK(r->sa.sin_family == AF_INET && port_valid(ntohs(r->sa.sin_port)));
		CHECK(r->state >= WARREN__V1__ROUTE_STATE__ROUTE_STARTING &&
		      r->state <= WARREN__V1__ROUTE_STATE__ROUTE_FAILED);
		CHECK(strlen(r->reason) < sizeof r->reason && r->start_timeout_ms <= 600000);
		for (const unsigned char *p = (const unsigned char *)r->reason; *p; p++)
			CHECK(*p >= 0x20 && *p != 0x7f); /* it goes into a 502's body */
		CHECK(r->active == 0);
		CHECK(route_agent_token_valid(r->agent_token) == 0); /* what the gate compares */
		CHECK((probed_index(r) >= 0) ==
		      (r->state == WARREN__V1__ROUTE_STATE__ROUTE_STARTING));
		/* a remote route only ever leads to a cluster gateway (10/8, port 8300 here) */
		if (r->remote && !r->lost)
			CHECK((ntohl(r->sa.sin_addr.s_addr) >> 24) == 10 &&
			      ntohs(r->sa.sin_port) == 8300);
		if (r->remote)
			CHECK(r->state == WARREN__V1__ROUTE_STATE__ROUTE_RUNNING &&
			      !r->agent_token[0]);
	}
	for (size_t i = 0; i < n_probed; i++)
		CHECK(route_listed(probed[i]));
	CHECK(n == route_count(&g) + remote_count(&g) && remote_count(&g) <= GATEWAY_REMOTE_MAX);
}

/* A reason of any length is taken: all of it when it fits, else cut at a character boundary,
 * control characters as spaces. */
static bool
reason_taken(const char *kept, const char *sent)
{
	size_t k = strlen(kept), n = strlen(sent);
	if (k > n || (n < sizeof((struct route *)0)->reason && k != n))
		return false;
	if (k < n && ((unsigned char)sent[k] & 0xc0) == 0x80)
		return false; /* cut inside a UTF-8 sequence */
	for (size_t i = 0; i < k; i++) {
		unsigned char c = (unsigned char)sent[i];
		if (kept[i] != (c < 0x20 || c == 0x7f ? ' ' : (char)c))
			return false;
	}
	return true;
}

/* The gateway said yes: the table holds what was asked (or, for RemoveRoute, not the id). */
static void
check_answer(const IpcRequest *q, const IpcResponse *resp)
{
	if (resp->error) {
		CHECK(resp->error < 0);
		return;
	}
	switch (q->body_case) {
	case WARREN__V1__REQUEST__BODY_SET_ROUTE: {
		const Warren__V1__SetRouteRequest *s = q->set_route;
		struct route *r = route_find(&g, s->id);
		struct in_addr a;
		CHECK(r && inet_pton(AF_INET, s->address, &a) == 1);
		CHECK(r->sa.sin_addr.s_addr == a.s_addr && ntohs(r->sa.sin_port) == s->port);
		CHECK(r->state == (int)s->state && reason_taken(r->reason, s->reason));
		CHECK(r->start_timeout_ms == s->start_timeout_ms && r->idle_ms == s->idle_ms);
		CHECK(r->probe_http == s->probe_http && r->runtime_up == s->runtime_up);
		CHECK(r->agent_api == s->agent_api && !strcmp(r->agent_token, s->agent_token));
		break;
	}
	case WARREN__V1__REQUEST__BODY_REMOVE_ROUTE:
		CHECK(!route_find(&g, q->remove_route->id));
		break;
	case WARREN__V1__REQUEST__BODY_STATUS:
		CHECK(resp->body_case == WARREN__V1__RESPONSE__BODY_STATUS &&
		      resp->status->routes == route_count(&g));
		break;
	default:
		CHECK(!"the gateway answered success to a request it has no handler for");
	}
}

/* clusterd's requests the gateway accepted: only its own two, a local route never remote */
static void
check_cluster_answer(const IpcRequest *q, const IpcResponse *resp)
{
	switch (q->body_case) {
	case WARREN__V1__REQUEST__BODY_SET_REMOTE_ROUTES:
		for (size_t i = 0; i < q->set_remote_routes->n_routes; i++)
			CHECK(sandbox_id_valid(q->set_remote_routes->routes[i]->id));
		break;
	case WARREN__V1__REQUEST__BODY_STATUS:
		CHECK(resp->body_case == WARREN__V1__RESPONSE__BODY_STATUS &&
		      resp->status->routes == remote_count(&g));
		break;
	default:
		CHECK(!"the cluster socket answered success to a supervisor's request");
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	g.dc.base = event_base_new();
	g.domain = "fuzz.test";
	struct ipc_server_config cfg = {.name = "gateway",
					.table = gateway_handlers,
					.n_table = gateway_n_handlers,
					.userdata = &g};
	g.server = ipc_server_new(g.dc.base, -1, &cfg);
	struct ipc_server_config ccfg = {.name = "gateway-cluster",
					 .table = gateway_cluster_handlers,
					 .n_table = gateway_n_cluster_handlers,
					 .on_peer_gone = remote_routes_peer_gone,
					 .userdata = &g};
	g.cluster_server = ipc_server_new(g.dc.base, -1, &ccfg);
	g.cluster_port = 8300;
	CHECK(g.cluster_server && remote_nets_parse(&g, "10.0.0.0/8") == 0);
	CHECK(route_listen(&g, ledger_route_changed) == 0 &&
	      route_listen(&g, proxy_route_changed) == 0);
	CHECK(g.dc.base && g.server);
	return 0;
}

static void
run_loop(void)
{
	for (int i = 0; i < 4; i++)
		event_base_loop(g.dc.base, EVLOOP_NONBLOCK);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	while (g.routes)
		route_remove(&g, g.routes);
	CHECK(n_probed == 0);

	int sp[2], cp[2];
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cp) == 0);
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	fcntl(sp[1], F_SETFL, O_NONBLOCK);
	fcntl(cp[0], F_SETFL, O_NONBLOCK);
	fcntl(cp[1], F_SETFL, O_NONBLOCK);
	CHECK(ipc_server_adopt(g.server, sp[0]) == 0);
	CHECK(ipc_server_adopt(g.cluster_server, cp[0]) == 0);
	for (int k = 0; k < 16 && size > 0; k++) {
		bool cluster = data[0] & 0x80;
		int peer = cluster ? cp[1] : sp[1];
		size_t len = data[0] & 0x7f;
		if (len > size - 1)
			len = size - 1;
		const uint8_t *dgram = data + 1;
		data += 1 + len;
		size -= 1 + len;
		IpcRequest *q = warren__v1__request__unpack(NULL, len, dgram);
		if (send(peer, dgram, len, MSG_DONTWAIT) < 0) {
			if (q)
				protobuf_c_message_free_unpacked(&q->base, NULL);
			break;
		}
		run_loop();
		check_table();
		IpcResponse *resp = NULL;
		int rfds[IPC_MAX_FDS];
		size_t rn = 0;
		int answered = 0;
		while (ipc_recv_response(peer, &resp, rfds, &rn) == 0) {
			CHECK(rn == 0);
			/* what the gateway accepted decodes here too, and is answered once */
			if (q && resp->id == q->id && q->version == IPC_VERSION && !resp->error)
				cluster ? check_cluster_answer(q, resp) : check_answer(q, resp);
			answered++;
			protobuf_c_message_free_unpacked(&resp->base, NULL);
		}
		CHECK(answered <= 1);
		if (q)
			protobuf_c_message_free_unpacked(&q->base, NULL);
	}
	close(sp[1]);
	close(cp[1]);
	run_loop();
	check_table();
	return 0;
}
