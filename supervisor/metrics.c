/* The supervisor's part of the metrics endpoint. The gateway serves `GET /metrics` (the
 * supervisor may open Unix sockets only: seccomp, RestrictAddressFamilies and a private network
 * namespace); on each scrape it sends a MetricsNeeded event, and the supervisor answers with
 * its Prometheus text in PushMetrics pieces: sandboxes by state and backend, latency
 * histograms of creates, restores, forks and snapshots, the pool, reclaim and zswap, and per
 * live sandbox its CPU, memory (its cgroup, world-readable) and network counters (asked from
 * netnsd, which sees the slots' veths). Per-sandbox series are bounded: only sandboxes with a
 * runtime, at most METRICS_MAX_SANDBOXES of them (the rest counted), label values escaped.
 * Runs in warren-supervisor. */
#include "metrics.h"
#include "clock.h"
#include "fileio.h"
#include "log.h"
#include "netnsd-client.h"
#include "gateway-client.h"
#include "macro.h"
#include "prom.h"
#include "supervisor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METRICS_MAX_SANDBOXES 1000 /* per-sandbox series; above: counted in ..._omitted */
#define METRICS_PIECE (48 << 10)   /* PushMetrics text per datagram (the limit is 64 KiB) */

enum { OP_CREATE, OP_RESTORE, OP_FORK, OP_SNAPSHOT, OP_SNAPSHOT_PAUSE, OP_MAX };
static const char *const op_names[OP_MAX] = {"warren_create_seconds", "warren_restore_seconds",
					     "warren_fork_seconds", "warren_snapshot_seconds",
					     "warren_snapshot_pause_seconds"};
static const char *const op_help[OP_MAX] = {
	"Cold CreateSandbox to the sandbox answering on its port.",
	"Restore of an image (warm create, fork child, standby) to the sandbox answering.",
	"ForkTag or BranchSandbox's fork: from the call to every child routed.",
	"Snapshot: from the checkpoint's start to the image sealed.",
	"Snapshot of a gVisor sandbox: how long the parent did not answer."};
static const char *const backends[_BACKEND_MAX] = {"gvisor", "microvm"};

static struct prom_hist hists[OP_MAX][2];
static uint64_t reclaimed_total, reclaims_total;

static int
backend_index(const char *backend)
{
	return backend_from_string(backend) == BACKEND_MICROVM ? BACKEND_MICROVM : BACKEND_GVISOR;
}

static void
metrics_observe(int op, const char *backend, uint64_t usec)
{
	if (op >= 0 && op < OP_MAX)
		prom_hist_observe(&hists[op][backend_index(backend)], usec);
}

void
metrics_sandbox_ready(const struct sandbox *sb)
{
	uint64_t now = now_usec();
	if (sb->t_pause_us)
		metrics_observe(OP_SNAPSHOT_PAUSE, backend_to_string(sb->backend),
				now - sb->t_pause_us);
	else if (sb->restoring_tag[0])
		metrics_observe(OP_RESTORE, backend_to_string(sb->backend), now - sb->t_create_us);
	else
		metrics_observe(OP_CREATE, backend_to_string(sb->backend), now - sb->t_create_us);
}

void
metrics_fork_done(uint64_t t0)
{
	metrics_observe(OP_FORK, "gvisor", now_usec() - t0);
}

void
metrics_snapshot_done(const char *backend, uint64_t t0)
{
	metrics_observe(OP_SNAPSHOT, backend, now_usec() - t0);
}

void
metrics_reclaimed(uint64_t bytes)
{
	reclaimed_total += bytes;
	reclaims_total++;
}

/* CPU time of the sandbox's cgroup in microseconds: v2 cpu.stat, v1 cpuacct.usage (ns). */
static int
cgroup_cpu_usec(const char *rel, uint64_t *v)
{
	static const char *const v2_roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
	char path[512];
	for (size_t i = 0; i < ELEMENTSOF(v2_roots); i++) {
		snprintf(path, sizeof path, "%s%s/cpu.stat", v2_roots[i], rel);
		_cleanup_free_ char *s = NULL;
		if (file_read_all(path, &s, NULL) < 0)
			continue;
		const char *p = strstr(s, "usage_usec ");
		if (p) {
			*v = strtoull(p + 11, NULL, 10);
			return 0;
		}
	}
	static const char *const v1_dirs[] = {"cpuacct", "cpu,cpuacct"};
	for (size_t i = 0; i < ELEMENTSOF(v1_dirs); i++) {
		uint64_t ns;
		snprintf(path, sizeof path, "/sys/fs/cgroup/%s%s/cpuacct.usage", v1_dirs[i], rel);
		if (file_read_u64(path, &ns) == 0) {
			*v = ns / 1000;
			return 0;
		}
	}
	return -ENOENT;
}

static void
labels_sandbox(struct prom_buf *b, const struct sandbox *sb)
{
	prom_append(b, "id=\"", 4);
	prom_escape(b, sb->id);
	prom_append(b, "\",template=\"", 12);
	prom_escape(b, sb->template_name);
	prom_append(b, "\",backend=\"", 11);
	prom_escape(b, backend_to_string(sb->backend));
	prom_append(b, "\"", 1);
}

static bool
sandbox_live(const struct sandbox *sb)
{
	return sandbox_visible(sb) && sb->runtime_alive &&
	       (sb->state == SANDBOX_RUNNING || sb->state == SANDBOX_FROZEN ||
		sb->state == SANDBOX_STARTING || sb->state == SANDBOX_SNAPSHOTTING);
}

static const Warren__V1__SlotCounters *
counters_find(const Warren__V1__SlotCountersResponse *sc, int slot)
{
	if (!sc || slot < 0)
		return NULL;
	for (size_t i = 0; i < sc->n_slots; i++)
		if (sc->slots[i]->slot == (uint32_t)slot)
			return sc->slots[i];
	return NULL;
}

/* One per-sandbox family: each live sandbox's value from get(). */
typedef bool (*sandbox_value_fn)(const struct sandbox *sb, const void *ctx, double *v);

static void
write_sandbox_family(struct prom_buf *b, const char *name, const char *type, const char *help,
		     sandbox_value_fn get, const void *ctx)
{
	prom_header(b, name, type, help);
	unsigned n = 0;
	for (struct sandbox *sb = sup->sandboxes; sb; sb = sb->next) {
		double v;
		if (!sandbox_live(sb) || n >= METRICS_MAX_SANDBOXES || !get(sb, ctx, &v))
			continue;
		n++;
		prom_append(b, name, strlen(name));
		prom_append(b, "{", 1);
		labels_sandbox(b, sb);
		prom_printf(b, "} %.9g\n", v);
	}
}

static bool
get_cpu(const struct sandbox *sb, const void *ctx, double *v)
{
	uint64_t us;
	if (!sb->cgroup[0] || cgroup_cpu_usec(sb->cgroup, &us) < 0)
		return false;
	*v = (double)us / 1e6;
	return true;
}

static bool
get_memory(const struct sandbox *sb, const void *ctx, double *v)
{
	uint64_t bytes;
	if (!sb->cgroup[0] || cgroup_memory_usage(sb->cgroup, &bytes) < 0)
		return false;
	*v = (double)bytes;
	return true;
}

static bool
get_reclaimed(const struct sandbox *sb, const void *ctx, double *v)
{
	*v = (double)sb->reclaimed_bytes;
	return true;
}

#define NET_GETTER(fn, field)                                                                      \
	static bool fn(const struct sandbox *sb, const void *ctx, double *v)                       \
	{                                                                                          \
		const Warren__V1__SlotCounters *c = counters_find(ctx, sb->slot);                  \
		if (!c)                                                                            \
			return false;                                                              \
		*v = (double)c->field;                                                             \
		return true;                                                                       \
	}
NET_GETTER(get_rx_bytes, rx_bytes)
NET_GETTER(get_tx_bytes, tx_bytes)
NET_GETTER(get_rx_packets, rx_packets)
NET_GETTER(get_tx_packets, tx_packets)

static void
metrics_render(struct prom_buf *b, const Warren__V1__SlotCountersResponse *sc)
{
	/* sandboxes by state and backend: every pair, zeros included, so a query for "running"
	 * finds a series even when none runs */
	unsigned counts[8][2] = {{0}}, standby[2] = {0, 0}, live = 0;
	for (struct sandbox *sb = sup->sandboxes; sb; sb = sb->next) {
		int bi = sb->backend;
		if (sb->standby)
			standby[bi]++;
		else if (sb->state >= 0 && sb->state < 8)
			counts[sb->state][bi]++;
		live += sandbox_live(sb);
	}
	prom_header(b, "warren_sandboxes", "gauge",
		    "Sandboxes (as ListSandboxes shows them, and those being created), by state "
		    "and backend.");
	for (int st = 0; st < 8; st++)
		for (int bi = 0; bi < 2; bi++)
			prom_printf(b, "warren_sandboxes{state=\"%s\",backend=\"%s\"} %u\n",
				    sandbox_state_to_string((enum sandbox_state)st), backends[bi],
				    counts[st][bi]);
	prom_header(b, "warren_standby_sandboxes", "gauge",
		    "Sandboxes restored ahead for warm templates (invisible), by backend.");
	for (int bi = 0; bi < 2; bi++)
		prom_printf(b, "warren_standby_sandboxes{backend=\"%s\"} %u\n", backends[bi],
			    standby[bi]);
	for (int op = 0; op < OP_MAX; op++) {
		prom_header(b, op_names[op], "histogram", op_help[op]);
		for (int bi = 0; bi < 2; bi++) {
			char labels[32];
			snprintf(labels, sizeof labels, "backend=\"%s\"", backends[bi]);
			prom_hist_write(b, op_names[op], labels, &hists[op][bi]);
		}
	}
	const Warren__V1__StatusResponse *ns =
		sup->helpers[HELPER_NETNSD].up ? sup->helpers[HELPER_NETNSD].status : NULL;
	prom_header(b, "warren_pool_slots", "gauge", "Namespace slots in the pool.");
	prom_sample_u64(b, "warren_pool_slots", "", ns ? ns->pool_size : 0);
	prom_header(b, "warren_pool_slots_free", "gauge", "Namespace slots free to claim.");
	prom_sample_u64(b, "warren_pool_slots_free", "", ns ? ns->pool_free : 0);
	prom_header(b, "warren_helper_up", "gauge",
		    "1 when the supervisor's link to a helper is up.");
	for (int i = 0; i < HELPER_MAX; i++)
		prom_printf(b, "warren_helper_up{helper=\"%s\"} %d\n", sup->helpers[i].name,
			    helper(i) != NULL);
	prom_header(b, "warren_reclaimed_bytes_total", "counter",
		    "Memory taken out of frozen sandboxes by reclaim, summed over every reclaim.");
	prom_sample_u64(b, "warren_reclaimed_bytes_total", "", reclaimed_total);
	prom_header(b, "warren_reclaims_total", "counter", "Reclaims that answered.");
	prom_sample_u64(b, "warren_reclaims_total", "", reclaims_total);
	uint64_t v = 0;
	prom_header(b, "warren_swap_bytes", "gauge", "The host's swap (SwapTotal).");
	meminfo_bytes("SwapTotal", &v);
	prom_sample_u64(b, "warren_swap_bytes", "", v);
	v = 0;
	prom_header(b, "warren_zswap_pool_bytes", "gauge", "Memory zswap's pool uses (Zswap).");
	meminfo_bytes("Zswap", &v);
	prom_sample_u64(b, "warren_zswap_pool_bytes", "", v);
	v = 0;
	prom_header(b, "warren_zswapped_bytes", "gauge", "Memory held compressed in zswap.");
	meminfo_bytes("Zswapped", &v);
	prom_sample_u64(b, "warren_zswapped_bytes", "", v);
	prom_header(b, "warren_sandbox_series_omitted", "gauge",
		    "Live sandboxes left out of the per-sandbox series (bound reached).");
	prom_sample_u64(b, "warren_sandbox_series_omitted", "",
			live > METRICS_MAX_SANDBOXES ? live - METRICS_MAX_SANDBOXES : 0);
	write_sandbox_family(b, "warren_sandbox_cpu_seconds_total", "counter",
			     "CPU time of the sandbox's cgroup.", get_cpu, NULL);
	write_sandbox_family(b, "warren_sandbox_memory_bytes", "gauge",
			     "Memory charged to the sandbox's cgroup.", get_memory, NULL);
	write_sandbox_family(b, "warren_sandbox_reclaimed_bytes", "gauge",
			     "What the last reclaim after a freeze took out of the sandbox.",
			     get_reclaimed, NULL);
	write_sandbox_family(b, "warren_sandbox_network_receive_bytes_total", "counter",
			     "Bytes the sandbox received on its interface.", get_rx_bytes, sc);
	write_sandbox_family(b, "warren_sandbox_network_transmit_bytes_total", "counter",
			     "Bytes the sandbox sent on its interface.", get_tx_bytes, sc);
	write_sandbox_family(b, "warren_sandbox_network_receive_packets_total", "counter",
			     "Packets the sandbox received.", get_rx_packets, sc);
	write_sandbox_family(b, "warren_sandbox_network_transmit_packets_total", "counter",
			     "Packets the sandbox sent.", get_tx_packets, sc);
}

static void
ignore_reply(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	ipc_close_fds(fds, n_fds);
	if (r < 0)
		log_warning_errno(r, "Metrics: the gateway refused a piece: %m");
}

static void
metrics_push(uint64_t seq, const Warren__V1__SlotCountersResponse *sc)
{
	struct prom_buf b = {0};
	metrics_render(&b, sc);
	if (b.failed) {
		prom_buf_free(&b);
		return; /* the gateway's wait ends without our part */
	}
	size_t off = 0;
	do {
		size_t n = b.len - off < METRICS_PIECE ? b.len - off : METRICS_PIECE;
		Warren__V1__PushMetricsRequest q = WARREN__V1__PUSH_METRICS_REQUEST__INIT;
		q.seq = seq;
		q.text.data = (uint8_t *)b.data + off;
		q.text.len = n;
		q.last = off + n == b.len;
		if (gateway_client_push_metrics(&q, 5000, ignore_reply, NULL) < 0)
			break;
		off += n;
	} while (off < b.len);
	prom_buf_free(&b);
}

static void
counters_done(const IpcResponse *resp, int r, int *fds, size_t n_fds, void *ud)
{
	uint64_t seq = (uint64_t)(uintptr_t)ud;
	ipc_close_fds(fds, n_fds);
	/* without netnsd's figures the network series are left out, the rest still goes */
	metrics_push(seq,
		     r == 0 && resp && resp->body_case == WARREN__V1__RESPONSE__BODY_SLOT_COUNTERS
			     ? resp->slot_counters
			     : NULL);
}

/* From the gateway: a scrape is waiting for our part. */
void
metrics_on_needed(uint64_t seq)
{
	Warren__V1__SlotCountersRequest q = WARREN__V1__SLOT_COUNTERS_REQUEST__INIT;
	if (netnsd_client_slot_counters(&q, 1000, counters_done, (void *)(uintptr_t)seq) < 0)
		metrics_push(seq, NULL);
}
