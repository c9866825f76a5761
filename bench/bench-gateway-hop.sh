#!/bin/bash
# What routing across hosts costs a request (docs/MULTIHOST.md): the latency of a request to a
# stand-in sandbox (tests/helpers/upstream.py) through its own host's gateway (direct) and through
# another host's gateway that proxies it there (proxied: one more gateway and one more hop).
# Two gateways on loopback addresses stand for two hosts (as tests/integration/
# test-gateway-remote.sh sets them up); one keep-alive connection, HOP_REQUESTS (2000)
# sequential GETs each way, after 200 of warm-up. Prints one row per path (p50, p99, mean in
# microseconds) and the difference of the medians: the row for the README's table. Exit status
# 1 when any request fails or is answered by anything but the sandbox.
# Run as root with the integration tests' lock:
#   WARREN_LIBEXEC=/opt/.../libexec/warren WARREN_BUILD=build flock /tmp/warren-itest.lock \
#     bench/bench-gateway-hop.sh
set -euo pipefail
source "$(dirname "$0")/../tests/integration/lib.sh"
N=${HOP_REQUESTS:-2000}
P=$GW_PORT A=127.0.0.1 B=127.0.0.3 UP=127.0.0.4 UPPORT=$((GW_PORT + 1000))
S=b0b0b0b0b0b0
TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
# the stand-in sandbox answers a request in two writes: TCP_NODELAY, or Nagle would add the
# gateway's delayed ACK (40 ms) to every answer and hide the hop
UPSTREAM_NODELAY=1 UPSTREAM_NAME=b UPSTREAM_ADDR=$UP python3 "$SOURCE/tests/helpers/upstream.py" "$UPPORT" \
	2>>"$T/upstream.log" &
PIDS+=($!)
wait_for 10 curl -fsS "http://$UP:$UPPORT/" >/dev/null || fail "upstream did not start"
for g in "a $A" "b $B"; do
	set -- $g
	install -d -m 0755 "$T/$1"
	install -d -o warren-gateway -m 0755 "$T/$1/c"
	daemon "gw$1" warren-launch __sockact "$T/$1/gateway.sock" warren-gateway 0660 -- \
		setpriv --reuid=warren-gateway --regid=warren-gateway --clear-groups --no-new-privs \
		"$LIBEXEC/warren-gateway" --peer-users warren --listen "$2" --port "$P" \
		--metrics-port 0 --cluster-socket "$T/$1/c/cluster.sock" --cluster-net 127.0.0.0/24
	wait_for 10 test -S "$T/$1/c/cluster.sock" || fail "gateway $1 did not start"
done
$POKE "$T/b/gateway.sock" setroute $S $UP "$UPPORT" running | grep -q ok || fail "route on B"
IPC_POKE_USER=warren-cluster $POKE "$T/a/c/cluster.sock" remoteroutes "$TOKEN" "$S=hb@$B:$P" |
	grep -q ok || fail "remote route on A"
python3 - "$N" "$S" "$P" "$B" "$A" <<'PY'
import http.client, statistics, sys, time
n, sid, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
rows = {}
for name, addr in (("direct", sys.argv[4]), ("proxied", sys.argv[5])):
    c = http.client.HTTPConnection(addr, port, timeout=10)
    lat = []
    for i in range(n + 200):
        t0 = time.perf_counter()
        c.request("GET", "/hv", headers={"Host": "%s.warren.localhost:%d" % (sid, port)})
        r = c.getresponse()
        body = r.read()
        dt = (time.perf_counter() - t0) * 1e6
        if r.status != 200 or b"upstream=b" not in body:
            print("FAIL: %s request %d: %d %r" % (name, i, r.status, body[:200]))
            sys.exit(1)
        if i >= 200:
            lat.append(dt)
    lat.sort()
    rows[name] = (lat[len(lat) // 2], lat[int(len(lat) * 0.99)], statistics.mean(lat))
    print("%-8s requests %d  p50 %7.0f us  p99 %7.0f us  mean %7.0f us" % ((name, n) + rows[name]))
print("hop cost (p50 proxied - p50 direct): %.0f us" % (rows["proxied"][0] - rows["direct"][0]))
PY
