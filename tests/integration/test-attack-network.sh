#!/bin/bash
# Attacks on sandbox traffic, for real:
#  - a local user (`nobody`) connects straight to a sandbox's address and port: dropped, while
#    root, the gateway's uid and `nobody` through the gateway get through (positive controls);
#    a frozen sandbox stays frozen under nobody's connection and nobody's D-Bus Thaw;
#  - nobody reads a sandbox's properties (id, address) over D-Bus: refused, the Manager's stay
#    readable, group warren reads both;
#  - code inside a sandbox with allow_outbound (busybox nc by runsc exec) tries the cloud
#    metadata address 169.254.169.254, a private address and the host's own subnet in a "LAN"
#    namespace the test makes: all unreachable, while a public-looking address and a private one
#    named by --egress-allow answer (positive controls);
#  - IPv4 forwarding: the test switches it off first; netnsd switches it on for its sandboxes,
#    the LAN cannot route through the host, and it is off again once netnsd has stopped.
# Targets are only this test's namespaces: the addresses are routed to them for the pool's
# sources only (a policy-routing rule), so the host's own route to 169.254.169.254 is untouched.
source "$(dirname "$0")/lib.sh"

# The private bus gets this tree's D-Bus policy after the installed one (later rules win).
start_bus() {
	sed -e "s|<listen>.*</listen>|<listen>unix:path=$T/bus.sock</listen>|" \
		-e "s|<pidfile>.*</pidfile>|<pidfile>$T/bus.pid</pidfile>|" \
		-e "s|</busconfig>|<include>$SOURCE/units/org.warren.Warren1.conf</include></busconfig>|" \
		/usr/share/dbus-1/system.conf >"$T/bus.conf"
	dbus-daemon --config-file="$T/bus.conf" --fork --nosyslog
	wait_for 5 test -S "$T/bus.sock" || fail "private dbus-daemon did not start"
}

L=wtl$K
LAN_HOST=203.0.113.1 LAN_PEER=203.0.113.2 # the host's "LAN": a host subnet when netnsd starts
META=169.254.169.254 PRIV=10.253.$K.2 ALLOWED=10.252.$K.2 WORLD=198.51.100.$K
M=wtm$K # a second namespace behind the host, for the routing check
RT=$((1000 + K))
FWD_BEFORE=$(cat /proc/sys/net/ipv4/ip_forward)
undo() {
	set +e
	# netnsd first: its spawner puts forwarding back as it found it, then the test does
	if [ -n "${PID_netnsd:-}" ]; then
		local sp
		sp=$(pgrep -P "$PID_netnsd")
		stop_pid "$PID_netnsd"
		for p in $sp; do
			for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		done
		remove_all
	fi
	ip netns del "$M" 2>/dev/null
	ip rule del priority $RT 2>/dev/null
	ip route flush table $RT 2>/dev/null
	ip netns del "$L" 2>/dev/null
	ip link del "${L}h" 2>/dev/null
	echo "$FWD_BEFORE" >/proc/sys/net/ipv4/ip_forward
}
trap 'rc=$?; undo; cleanup $rc' EXIT

ip netns add "$L"
ip link add "${L}h" type veth peer name "${L}w"
ip link set "${L}w" netns "$L"
ip addr add $LAN_HOST/24 dev "${L}h"
ip link set "${L}h" up
ip -n "$L" addr add $LAN_PEER/24 dev "${L}w"
ip -n "$L" link set "${L}w" up
ip -n "$L" link set lo up
# (the namespace's loopback holds them: this kernel has no dummy links)
for a in $META $PRIV $ALLOWED $WORLD; do
	ip -n "$L" addr add $a/32 dev lo
	ip route add $a/32 via $LAN_PEER dev "${L}h" table $RT
done
ip -n "$L" route add default via $LAN_HOST
ip rule add from "$SUBNET/16" lookup $RT priority $RT
# listeners in the LAN that name themselves
for a in $META $PRIV $ALLOWED $WORLD $LAN_PEER; do
	ip netns exec "$L" python3 -c 'import socket,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 80)); s.listen()
while True:
    c=s.accept()[0]; c.sendall(b"hello-from-" + sys.argv[1].encode() + b"\n"); c.close()' "$a" &
	PIDS+=($!)
done

echo 0 >/proc/sys/net/ipv4/ip_forward
warren_start --egress-allow "$ALLOWED/32"
expect "netnsd switched forwarding on for its sandboxes" test "$(cat /proc/sys/net/ipv4/ip_forward)" = 1
expect "and noted what it was" grep -qx 0 "$T/netnsd/ip_forward.before"

reach() { # reach ADDR PORT: a TCP connect from the caller's uid
	timeout 5 python3 -c 'import socket,sys
socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()' "$1" "$2" 2>/dev/null
}
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
as_gateway() { setpriv --reuid=warren-gateway --regid=warren-gateway --clear-groups "$@"; }

id=$(create web wait)
addr=$(sbprop "$id" Address)
addr=${addr%:*}
log "sandbox $id at $addr"
expect "root reaches the sandbox directly (positive control)" reach "$addr" 8080
expect "the gateway's uid reaches it directly (positive control)" as_gateway bash -c "$(declare -f reach); reach $addr 8080"
if as_nobody bash -c "$(declare -f reach); reach $addr 8080"; then fail "nobody reached $addr:8080"; fi
log "ok: nobody cannot connect to the sandbox's port"
if as_nobody bash -c "$(declare -f reach); reach $addr 22"; then fail "nobody reached $addr:22"; fi
log "ok: nor to any other port of it"
expect "nobody reaches it through the gateway (positive control)" as_nobody sh -c "curl -fsS --max-time 10 $(sb_url "$id") | grep -q Hello"

# frozen: nobody's connection and nobody's Thaw leave it frozen
call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Freeze
expect "frozen" test "$(sbprop "$id" State)" = frozen
as_nobody bash -c "$(declare -f reach); reach $addr 8080" && fail "nobody reached a frozen sandbox"
out=$(as_nobody busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Thaw 2>&1 || true)
expect "nobody's Thaw is refused ($out)" grep -qi "access denied\|AccessDenied" <<<"$out"
sleep 1
expect "still frozen after nobody's attempts" test "$(sbprop "$id" State)" = frozen
fz=$(cat /sys/fs/cgroup/freezer"$CGROUP_PARENT/$id"/freezer.state)
expect "the kernel agrees ($fz)" test "$fz" = FROZEN
expect "a request through the gateway thaws it (positive control)" sh -c "curl -fsS --max-time 10 $(sb_url "$id") | grep -q Hello"

# D-Bus: sandbox objects for root and group warren only
getent passwd warren-test-op >/dev/null ||
	useradd --system --no-create-home --shell /usr/sbin/nologin -G warren warren-test-op
bus_as() { setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups busctl --system "${@:2}"; }
out=$(bus_as nobody get-property org.warren.Warren1 "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Address 2>&1 || true)
expect "nobody cannot read a sandbox's address ($out)" grep -qi "access denied\|AccessDenied" <<<"$out"
out=$(bus_as nobody call org.warren.Warren1 "/org/warren/Warren1/sandbox/$id" org.freedesktop.DBus.Properties GetAll s org.warren.Warren1.Sandbox 2>&1 || true)
expect "nor GetAll of it" grep -qi "access denied\|AccessDenied" <<<"$out"
out=$(bus_as nobody introspect org.warren.Warren1 /org/warren/Warren1/sandbox 2>&1 || true)
expect "nobody cannot list sandbox objects by introspection" grep -qi "access denied\|AccessDenied" <<<"$out"
out=$(bus_as nobody introspect --xml-interface org.warren.Warren1 /org/warren/Warren1 2>&1 || true)
if grep -q "$id" <<<"$out"; then fail "nobody's introspection of the Manager names $id"; fi
log "ok: nobody's introspection of the Manager names no sandbox"
expect "nobody reads the Manager's properties (positive control)" bus_as nobody get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager PoolFree
expect "group warren reads the sandbox's address (positive control)" sh -c "setpriv --reuid=warren-test-op --regid=\$(id -g warren-test-op) --init-groups busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox Address | grep -q $addr"
monitor_as() { # monitor_as USER FILE: Warren's signals as USER sees them, for 6 s
	timeout 6 setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups \
		dbus-monitor --system "type='signal',sender='org.warren.Warren1'" >"$2" 2>&1 &
}
monitor_as nobody "$T/nobody-signals"
monitor_as warren-test-op "$T/op-signals"
sleep 1
id2=$(create web)
sleep 2
expect "group warren receives SandboxNew naming $id2 (positive control)" grep -q "$id2" "$T/op-signals"
if grep -q "$id2" "$T/nobody-signals"; then fail "nobody received a signal naming $id2"; fi
log "ok: nobody receives no signal naming a new sandbox"
warrenctl destroy "$id2" >/dev/null 2>&1 || true

# egress from code inside an outbound sandbox
WEB=/var/lib/warren/templates/web/rootfs
mgr AddTemplate ssasqta{sv} -- outweb "$WEB" 7 /bin/busybox httpd -f -p 8080 -h /www 8080 67108864 1 allow_outbound b true
out_id=$(create outweb wait)
nc_from() { # nc_from ADDR: what the sandbox's nc got from ADDR:80
	warrenctl exec "$out_id" -- /bin/busybox sh -c "sleep 2 | /bin/busybox nc -w 3 $1 80" 2>&1 || true
}
got=$(nc_from $WORLD)
expect "the sandbox reaches a world address (positive control: $got)" grep -q "hello-from-$WORLD" <<<"$got"
got=$(nc_from $ALLOWED)
expect "and a private address named by --egress-allow (positive control: $got)" grep -q "hello-from-$ALLOWED" <<<"$got"
for a in $META $PRIV $LAN_PEER; do
	got=$(nc_from $a)
	if grep -q "hello-from" <<<"$got"; then fail "the sandbox reached $a: $got"; fi
	log "ok: the sandbox cannot reach $a ($got)"
done
expect "the LAN listeners are up (the host reaches them)" sh -c "ip netns exec $L python3 -c 'import socket; print(socket.create_connection((\"$META\", 80), timeout=3).recv(64))' | grep -q hello"

# the LAN cannot use the host as a router (netnsd switched forwarding on: only for the pool)
# a packet from the LAN to the host's own address is input, not forwarding; so the target is a
# second namespace behind the host
ip netns add "$M"
ip link add "${M}h" type veth peer name "${M}w"
ip link set "${M}w" netns "$M"
ip addr add 192.0.0.9/30 dev "${M}h"
ip link set "${M}h" up
ip -n "$M" addr add 192.0.0.10/30 dev "${M}w"
ip -n "$M" link set "${M}w" up
ip -n "$M" route add default via 192.0.0.9
ip netns exec "$M" python3 -c 'import socket
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 82)); s.listen()
while True: s.accept()[0].close()' &
PIDS+=($!)
sleep 0.3
expect "the host reaches the second namespace (positive control)" reach 192.0.0.10 82
if ip netns exec "$L" bash -c "$(declare -f reach); reach 192.0.0.10 82"; then fail "the LAN routed through the host"; fi
log "ok: the LAN cannot route through the host"
ip netns del "$M"

# stopping netnsd for good (--remove-all: a plain stop leaves the sandboxes and the table for the
# next netnsd) puts forwarding back
stop_pid "$PID_netnsd"
remove_all
expect "ip_forward is 0 again after netnsd stopped" test "$(cat /proc/sys/net/ipv4/ip_forward)" = 0
expect "and the note is gone" test ! -e "$T/netnsd/ip_forward.before"
