#!/bin/bash
# bench/e2b-bench.sh's measurement on a private Warren (the integration tests' harness: its own
# bus, daemons, namespaces and ports), for a machine where no Warren runs or where the installed
# one must not be touched. As root, under the integration tests' lock:
#   flock /tmp/warren-itest.lock env WARREN_LIBEXEC=... bash bench/e2b-bench-private.sh [N]
N=${1:-10}
source "$(dirname "$0")/../tests/integration/lib.sh"
start_bus() {
	sed -e "s|<listen>.*</listen>|<listen>unix:path=$T/bus.sock</listen>|" \
		-e "s|<pidfile>.*</pidfile>|<pidfile>$T/bus.pid</pidfile>|" \
		-e "s|</busconfig>|<include>$SOURCE/units/org.warren.Warren1.conf</include></busconfig>|" \
		/usr/share/dbus-1/system.conf >"$T/bus.conf"
	dbus-daemon --config-file="$T/bus.conf" --fork --nosyslog
	wait_for 5 test -S "$T/bus.sock" || fail "private dbus-daemon did not start"
}
warren_start
install -d -m 0755 "$T/etc"
install -d -m 0700 -o warren-e2b -g warren-e2b "$T/e2b"
E2B_PORT=$((18400 + K))
daemon e2b setpriv --reuid=warren-e2b --regid=warren-e2b --clear-groups --no-new-privs \
	"$LIBEXEC/warren-e2b-api" --listen "127.0.0.1:$E2B_PORT" --gateway "127.0.0.1:$GW_PORT" \
	--api-keys "$T/etc/api-keys" --state-dir "$T/e2b"
wait_for 10 curl -fsS "http://127.0.0.1:$E2B_PORT/health" || fail "warren-e2b-api did not start"
KEY=$(warrenctl apikey create bench --api-keys "$T/etc/api-keys")
ROOTFS=/var/lib/warren/templates/base/rootfs
# 49983: the agent's envd port (AGENT_PROTO_ENVD_PORT, common/agent-protocol.h)
mgr AddTemplate ssasqta{sv} -- e2bwarm "$ROOTFS" 2 /bin/sleep infinity 49983 536870912 1 warm b true >/dev/null
mgr AddTemplate ssasqta{sv} -- e2bstandby "$ROOTFS" 2 /bin/sleep infinity 49983 536870912 2 warm b true standby u 1 >/dev/null
export E2B_API_URL=http://127.0.0.1:$E2B_PORT E2B_SANDBOX_URL=$GW E2B_API_KEY=$KEY
N=1 TEMPLATES=prime1=e2bwarm,prime2=e2bstandby node "$SOURCE/bench/e2b-bench.mjs" >/dev/null ||
	fail "priming the warm templates failed"
sleep 5
N=$N TEMPLATES=cold=base,warm=e2bwarm,standby=e2bstandby node "$SOURCE/bench/e2b-bench.mjs"
