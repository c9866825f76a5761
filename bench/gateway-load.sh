#!/bin/bash
# Load through the gateway: LOAD_CONNS (1000) concurrent keep-alive connections spread
# over LOAD_SANDBOXES (50) running `web`-like sandboxes for LOAD_SECONDS (30), while sandboxes
# are created and destroyed beside them (bench/gateway-load.py). Each sandbox serves its own id
# (its hostname), so a request answered by another sandbox is seen. Reports errors (must be 0),
# p50/p99, the churn (a destroyed sandbox must answer 404 or 503, never another's page), and the
# gateway's RSS and fds before the load and after it (all connections closed). Exit status 1 on
# any error, wrong answer or fds not back within 8 of the baseline.
# Run as root, on a private instance of the daemons (tests/integration/lib.sh), with the
# integration tests' lock:
#   WARREN_LIBEXEC=/opt/.../libexec/warren WARREN_BUILD=build flock /tmp/warren-itest.lock \
#     bench/gateway-load.sh
set -euo pipefail
source "$(dirname "$0")/../tests/integration/lib.sh"
CONNS=${LOAD_CONNS:-1000} NSB=${LOAD_SANDBOXES:-50} SECS=${LOAD_SECONDS:-30}
ulimit -n 16384
POOL=$((NSB + 6))
start_bus
start_netnsd
start_snapshotd
start_gateway --max-connections-per-ip $((CONNS + 100))
start_supervisor --idle-ms 0
WEB=/var/lib/warren/templates/web/rootfs
mgr AddTemplate ssasqta{sv} -- whoami "$WEB" 4 /bin/busybox sh -c \
	'mkdir -p /tmp/w && /bin/busybox hostname >/tmp/w/index.html && exec /bin/busybox httpd -f -p 8080 -h /tmp/w' \
	8080 67108864 0 >/dev/null
: >"$T/ids"
for _ in $(seq "$NSB"); do
	out=$(mgr CreateSandbox sa{sv} whoami 1 wait b true) || fail "create: $out"
	awk '{print $2}' <<<"$out" | tr -d '"' >>"$T/ids"
done
log "$NSB sandboxes up"
cat >"$T/churn" <<EOC
#!/bin/bash
export DBUS_SYSTEM_BUS_ADDRESS=$DBUS_SYSTEM_BUS_ADDRESS
case \$1 in
create) busctl --system --timeout=120 call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager \
	CreateSandbox sa{sv} whoami 1 wait b true | awk '{print \$2}' | tr -d '"' ;;
destroy) busctl --system --timeout=120 call org.warren.Warren1 /org/warren/Warren1/sandbox/\$2 \
	org.warren.Warren1.Sandbox Destroy ;;
esac
EOC
chmod +x "$T/churn"
gwpid=$(pgrep -f "^$LIBEXEC/warren-gateway .*--port $GW_PORT" | head -1)
sample() { echo "rss_kib=$(awk '/^VmRSS/ {print $2}' /proc/$gwpid/status) fds=$(ls /proc/$gwpid/fd | wc -l)"; }
before=$(sample)
result=$(python3 "$SOURCE/bench/gateway-load.py" "127.0.0.1:$GW_PORT" warren.localhost "$SECS" \
	"$CONNS" "$T/ids" "$T/churn")
during_peak=$(sample)
sleep 3
after=$(sample)
echo "gateway-load: $result"
echo "gateway-load: gateway before: $before; right after: $during_peak; 3 s later: $after"
echo "gateway-load: machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 -c '
import json, sys
r = json.loads(sys.argv[1])
fb, fa = int(sys.argv[2]), int(sys.argv[3])
ok = r["errors"] == 0 and r["churn_wrong_n"] == 0 and r["churn_cycles"] > 0 and fa <= fb + 8
sys.exit(0 if ok else 1)' "$result" "$(sed 's/.*fds=//' <<<"$before")" "$(sed 's/.*fds=//' <<<"$after")" ||
	fail "errors, wrong routing or fds not back: see above"
log "PASS"
