#!/bin/bash
# nftables isolation with real packets between namespace slots the test claims from netnsd:
# host -> sandbox works; sandbox -> sandbox, sandbox -> host services, sandbox -> world (by
# default) and world -> sandbox are dropped; a slot claimed with allow_outbound reaches the world.
source "$(dirname "$0")/lib.sh"
start_bus
# "the world" below is a private address: outbound sandboxes reach it only when allowed
POOL=4 start_netnsd --egress-allow "10.250.$K.0/30"
wait_for 10 sh -c "$POKE $T/netnsd.sock status | grep -q pool_free=4"
hold() { # hold NAME [outbound]: claim a slot and keep it; sets NAME_addr NAME_gw NAME_ns
	local name=$1
	$POKE "$T/netnsd.sock" claim-hold ${2:-} >"$T/$name.claim" &
	PIDS+=($!)
	wait_for 5 test -s "$T/$name.claim" || fail "claim $name"
	read -r _ addr gw pid fd <"$T/$name.claim"
	eval "${name}_addr=$addr ${name}_gw=$gw ${name}_ns=/proc/$pid/fd/$fd"
}
in_ns() { local ns=$1; shift; nsenter --net="$ns" "$@"; }
listen() { # listen NS PORT: a TCP listener inside a slot
	nsenter --net="$1" python3 -c 'import socket,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen()
while True: s.accept()[0].close()' "$2" &
	PIDS+=($!)
	sleep 0.3
}
reach() { timeout 3 python3 -c 'import socket,sys
socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)' "$1" "$2" 2>/dev/null; }

hold a
hold b
hold c outbound
log "slots: a=$a_addr b=$b_addr c=$c_addr (outbound)"
listen "$a_ns" 9000
listen "$b_ns" 9000
expect "host reaches sandbox a" reach "$a_addr" 9000
expect "host reaches sandbox b" reach "$b_addr" 9000
if in_ns "$a_ns" bash -c "$(declare -f reach); reach $b_addr 9000"; then fail "a reached b"; fi
log "ok: sandbox a cannot reach sandbox b"
# a host service on the host end of a's veth and on every host address
python3 -c 'import socket
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 9100)); s.listen()
while True: s.accept()[0].close()' &
PIDS+=($!)
sleep 0.3
expect "the host service is up" reach 127.0.0.1 9100
if in_ns "$a_ns" bash -c "$(declare -f reach); reach $a_gw 9100"; then fail "a reached a host service"; fi
log "ok: sandbox a cannot reach a host service"
# "the world": a namespace of the test's own, routed through the host like any outside network
W=wtw$K
ip netns add "$W"
trap 'ip netns del '"$W"' 2>/dev/null; cleanup $?' EXIT
ip link add "${W}h" type veth peer name "${W}w"
ip link set "${W}w" netns "$W"
ip addr add 10.250.$K.1/30 dev "${W}h"
ip link set "${W}h" up
ip -n "$W" addr add 10.250.$K.2/30 dev "${W}w"
ip -n "$W" link set "${W}w" up
ip -n "$W" link set lo up
ip -n "$W" route add default via 10.250.$K.1
ip netns exec "$W" python3 -c 'import socket
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 9200)); s.listen()
while True: s.accept()[0].close()' &
PIDS+=($!)
sleep 0.3
expect "the host reaches the world" reach 10.250.$K.2 9200
if in_ns "$a_ns" bash -c "$(declare -f reach); reach 10.250.$K.2 9200"; then fail "a reached the world"; fi
log "ok: sandbox a (default) cannot reach the world"
expect "sandbox c (allow_outbound) reaches the world" in_ns "$c_ns" bash -c "$(declare -f reach); reach 10.250.$K.2 9200"
listen "$c_ns" 9000
if ip netns exec "$W" bash -c "$(declare -f reach); reach $c_addr 9000"; then fail "world reached c"; fi
log "ok: the world cannot reach a sandbox"
