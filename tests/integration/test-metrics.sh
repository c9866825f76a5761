#!/bin/bash
# The metrics endpoint, scraped by a real Prometheus (Debian's package, its own config, port and
# storage here): what the test did comes back through Prometheus's HTTP API. Three sandboxes
# running -> exactly 3 under state="running" and 3 per-sandbox memory series; requests sent ->
# at least that many 200s and upstream latencies; requests for an unknown sandbox -> exactly
# that many 404s; a snapshot, a fork and a freeze land in their histograms and states; the pool
# and per-sandbox CPU and network counters carry the right figures. The gateway's endpoint
# answers only GET /metrics on its own port, and a scrape without the supervisor's part says so.
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || { log "SKIP: no prometheus (scripts/setup.sh installs it)"; exit 77; }
POOL=6
warren_start
M=http://127.0.0.1:$GW_METRICS_PORT/metrics
PROM_PORT=$((19400 + K))

# the endpoint itself, before Prometheus
out=$(curl -fsS --max-time 10 "$M") || fail "GET /metrics failed"
expect "the supervisor's part came with the scrape" grep -qx "warren_supervisor_scrape_ok 1" <<<"$out"
expect "sandboxes by state and backend are there" \
	grep -qx 'warren_sandboxes{state="running",backend="gvisor"} 0' <<<"$out"
expect "pool size as netnsd has it" grep -qx "warren_pool_slots $POOL" <<<"$out"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$GW_METRICS_PORT/other")
expect "another path on the metrics port is 404 ($code)" test "$code" = 404
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$GW/metrics")
expect "the sandbox port does not serve metrics ($code)" test "$code" = 404

mkdir -p "$T/prom/data"
cat >"$T/prom/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: warren
    scrape_interval: 1s
    scrape_timeout: 900ms
    static_configs:
      - targets: ['127.0.0.1:$GW_METRICS_PORT']
YML
daemon prometheus prometheus --config.file="$T/prom/prometheus.yml" \
	--storage.tsdb.path="$T/prom/data" --web.listen-address="127.0.0.1:$PROM_PORT" \
	--log.level=warn
# promq QUERY: the value of an instant query's only sample ("none" when there is none)
promq() {
	curl -fsS --max-time 5 "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
		python3 -c 'import json,sys
d=json.load(sys.stdin)["data"]["result"]
print("none" if len(d) != 1 else d[0]["value"][1])'
}
# prom_is QUERY OP VALUE: the query's value compares so (python), polled as scrapes come
prom_is() {
	local v
	v=$(promq "$1" 2>/dev/null) || return 1
	[ "$v" != none ] && python3 -c "import sys; sys.exit(0 if float('$v') $2 float('$3') else 1)"
}
expect_prom() { # expect_prom QUERY OP VALUE
	wait_for 30 prom_is "$@" || fail "Prometheus: $1 $2 $3 (it says $(promq "$1" 2>&1))"
	log "ok: Prometheus: $1 $2 $3"
}
expect_prom 'up{job="warren"}' == 1

a=$(create web wait)
b=$(create web wait)
c=$(create web wait)
expect_prom 'warren_sandboxes{state="running",backend="gvisor"}' == 3
expect_prom 'sum(warren_sandboxes)' == 3
expect_prom 'count(warren_sandbox_memory_bytes)' == 3
expect_prom 'sum(warren_create_seconds_count{backend="gvisor"})' == 3
expect_prom "warren_sandbox_memory_bytes{id=\"$a\",template=\"web\",backend=\"gvisor\"}" '>' 1000000
expect_prom 'warren_pool_slots' == "$POOL"
expect_prom 'warren_pool_slots_free' == $((POOL - 3))

# requests: N answered by a sandbox, E for one that does not exist
N=7 E=3
for _ in $(seq $N); do curl -fsS --max-time 10 -o /dev/null "$(sb_url "$a")" || fail "request to $a"; done
for _ in $(seq $E); do
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$GW/s/0123456789ab/")
	[ "$code" = 404 ] || fail "request for an unknown sandbox gave $code"
done
expect_prom 'warren_gateway_requests_total{code="200"}' '>=' $N
# and the one 404 of /metrics asked on the sandbox port above
expect_prom 'warren_gateway_requests_total{code="404"}' == $((E + 1))
expect_prom 'warren_gateway_upstream_latency_seconds_count' '>=' $N
expect_prom "warren_sandbox_network_receive_bytes_total{id=\"$a\"}" '>' 0
expect_prom "warren_sandbox_network_transmit_bytes_total{id=\"$a\"}" '>' 1000
expect_prom "warren_sandbox_cpu_seconds_total{id=\"$a\"}" '>' 0
# the sandbox with the traffic sent more than one that had none after its start-up probes
expect_prom "warren_sandbox_network_transmit_bytes_total{id=\"$a\"} - ignoring(id) warren_sandbox_network_transmit_bytes_total{id=\"$c\"}" '>' 1000

# lifecycle: a freeze, a snapshot and a fork of one child, a destroy
ctl freeze "$b" >/dev/null || fail "freeze $b"
expect_prom 'warren_sandboxes{state="frozen",backend="gvisor"}' == 1
expect_prom 'warren_sandboxes{state="running",backend="gvisor"}' == 2
call "/org/warren/Warren1/sandbox/$c" org.warren.Warren1.Sandbox Snapshot s m1 >/dev/null ||
	fail "snapshot of $c"
expect_prom 'sum(warren_snapshot_seconds_count)' == 1
out=$(ctl fork m1 1 2>/dev/null) || fail "fork m1 1: $out"
child=$(ids_in "$out")
expect_count "one fork child" 1 "$child"
expect "the child answers" wait_for 30 curl -fsS --max-time 5 -o /dev/null "$(sb_url "$child")"
expect_prom 'sum(warren_fork_seconds_count)' == 1
expect_prom 'sum(warren_restore_seconds_count)' '>=' 1
ctl destroy "$a" >/dev/null || fail "destroy $a"
wait_for 30 sh -c "[ \"\$(curl -fsS '$M' | grep -c 'warren_sandbox_memory_bytes{id=\"$a\"')\" = 0 ]" ||
	fail "the destroyed sandbox still has per-sandbox series"
log "ok: the destroyed sandbox's series are gone"
# b (frozen above), c and the child remain: b may have been thawed meanwhile, so both states
expect_prom 'sum(warren_sandboxes{state=~"running|frozen"})' == 3

# without the supervisor the gateway still answers, saying its part is missing
kill -STOP "$PID_supervisor"
out=$(curl -fsS --max-time 10 "$M") || { kill -CONT "$PID_supervisor"; fail "scrape with the supervisor stopped"; }
kill -CONT "$PID_supervisor"
expect "a scrape without the supervisor says so" grep -qx "warren_supervisor_scrape_ok 0" <<<"$out"
expect "and still carries the gateway's counters" grep -q "^warren_gateway_requests_total{code=\"404\"} $((E + 1))\$" <<<"$out"
grep -q '^warren_sandboxes{' <<<"$out" && fail "supervisor series in a scrape without its part"
log "PASS"
