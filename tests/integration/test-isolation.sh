#!/bin/bash
# nftables isolation with real packets between namespace slots the test claims from netnsd:
# host -> sandbox works; sandbox -> sandbox, sandbox -> host services, sandbox -> world (by
# default) and world -> sandbox are dropped; a slot claimed with allow_outbound reaches the world.
# Every negative check must see a silent drop (a connect timeout), not any failure: a listener
# that is not there answers "refused", a missing route "unreachable", a broken nsenter no outcome
# at all. Each listener is first reached from a source that is allowed, and at the end Warren's
# nftables table is removed and every dropped path must then connect: what stopped them was the
# rules, not the test.
source "$(dirname "$0")/lib.sh"
start_bus
# "the world" below is a private address: outbound sandboxes reach it only when allowed
POOL=4 start_netnsd --egress-allow "10.250.$K.0/30"
wait_for 10 sh -c "$POKE $T/netnsd.sock status | grep -q pool_free=4" || fail "netnsd's pool of 4 not ready"
hold() { # hold NAME [outbound]: claim a slot and keep it; sets NAME_addr NAME_gw NAME_ns
	local name=$1 slot addr gw pid fd
	$POKE "$T/netnsd.sock" claim-hold ${2:-} >"$T/$name.claim" &
	PIDS+=($!)
	wait_for 5 test -s "$T/$name.claim" || fail "claim $name: nothing"
	read -r slot addr gw pid fd <"$T/$name.claim"
	[[ $slot =~ ^[0-9]+$ && $addr =~ ^10\. && $gw =~ ^10\. ]] ||
		fail "claim $name: $(cat "$T/$name.claim")"
	test -e "/proc/$pid/fd/$fd" || fail "claim $name: no namespace fd"
	eval "${name}_addr=$addr ${name}_gw=$gw ${name}_ns=/proc/$pid/fd/$fd"
}
# probe ADDR PORT (python source): prints what a TCP connect met: connected, timeout (dropped
# silently), refused (RST: nobody listens), unreachable (no route, ICMP) or error:ERRNO
PROBE='import errno, socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2).close()
    print("connected")
except TimeoutError:
    print("timeout")
except ConnectionRefusedError:
    print("refused")
except OSError as e:
    if e.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        print("unreachable")
    else:
        print("error:" + errno.errorcode.get(e.errno, str(e.errno)))'
# outcome FROM ADDR PORT: FROM is "host", a namespace fd path, or "world"
outcome() {
	local from=$1 out
	shift
	case $from in
	host) out=$(timeout 5 python3 -c "$PROBE" "$@" 2>&1) ;;
	world) out=$(timeout 5 ip netns exec "$W" python3 -c "$PROBE" "$@" 2>&1) ;;
	*) out=$(timeout 5 nsenter --net="$from" python3 -c "$PROBE" "$@" 2>&1) ;;
	esac
	echo "${out:-no outcome}"
}
up() { [ "$(outcome "$@")" = connected ]; } # up FROM ADDR PORT (for wait_for)
reaches() { # reaches DESCRIPTION FROM ADDR PORT
	local o
	o=$(outcome "$2" "$3" "$4")
	expect "$1 ($o)" test "$o" = connected
}
dropped() { # dropped DESCRIPTION FROM ADDR PORT: the SYN vanished (nftables drop)
	local o
	o=$(outcome "$2" "$3" "$4")
	expect "$1: dropped ($o)" test "$o" = timeout
}
serve() { # serve NS|host|world PORT: a TCP listener
	local code='import socket,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen()
while True: s.accept()[0].close()'
	case $1 in
	host) python3 -c "$code" "$2" & ;;
	world) ip netns exec "$W" python3 -c "$code" "$2" & ;;
	*) nsenter --net="$1" python3 -c "$code" "$2" & ;;
	esac
	PIDS+=($!)
}

hold a
hold b
hold c outbound
log "slots: a=$a_addr b=$b_addr c=$c_addr (outbound)"
serve "$a_ns" 9000
serve "$b_ns" 9000
serve "$c_ns" 9000
for s in a b c; do
	eval "addr=\$${s}_addr"
	expect "the host reaches sandbox $s" wait_for 5 up host "$addr" 9000
done
dropped "sandbox a -> sandbox b" "$a_ns" "$b_addr" 9000
# a host service on the host end of a's veth and on every host address
serve host 9100
expect "the host service is up" wait_for 5 up host 127.0.0.1 9100
reaches "the host reaches its service on a's gateway address" host "$a_gw" 9100
dropped "sandbox a -> a host service on its gateway" "$a_ns" "$a_gw" 9100
# "the world": a namespace of the test's own, routed through the host like any outside network
W=wtw$K
ip netns del "$W" 2>/dev/null || true
ip netns add "$W"
at_exit "ip netns del $W 2>/dev/null"
ip link add "${W}h" type veth peer name "${W}w"
ip link set "${W}w" netns "$W"
ip addr add 10.250.$K.1/30 dev "${W}h"
ip link set "${W}h" up
ip -n "$W" addr add 10.250.$K.2/30 dev "${W}w"
ip -n "$W" link set "${W}w" up
ip -n "$W" link set lo up
ip -n "$W" route add default via 10.250.$K.1
serve world 9200
expect "the host reaches the world" wait_for 5 up host 10.250.$K.2 9200
reaches "sandbox c (allow_outbound) reaches the world" "$c_ns" 10.250.$K.2 9200
dropped "sandbox a (default) -> the world" "$a_ns" 10.250.$K.2 9200
dropped "the world -> sandbox c" world "$c_addr" 9000
dropped "the world -> sandbox a" world "$a_addr" 9000
# The control: without Warren's rules the same paths connect, so the timeouts above were the
# rules' drops (not a listener, a route or the test's plumbing).
expect "Warren's nftables table is there" nft list table inet "$NFT_TABLE" >/dev/null
nft delete table inet "$NFT_TABLE"
# Another Warren on this host (scripts/run.sh's) that turned forwarding on itself forwards only
# its outbound slots' flows ("iifgroup != ... drop" in its table): the forwarded paths' control
# is then its rules' answer, not ours, and is left out; the CI machine runs no other Warren.
other_restricts=false
for t in $(nft list tables inet 2>/dev/null | awk '{print $3}'); do
	nft list chain inet "$t" forward 2>/dev/null | grep -q '^\s*iifgroup != ' && other_restricts=true
done
reaches "without the rules: sandbox a -> the host service" "$a_ns" "$a_gw" 9100
if $other_restricts; then
	log "another Warren's table restricts forwarding on this host: forwarded paths not controlled"
else
	reaches "without the rules: sandbox a -> sandbox b" "$a_ns" "$b_addr" 9000
	reaches "without the rules: the world -> sandbox a" world "$a_addr" 9000
	# (sandbox -> world without the rules has no masquerade; the world routes 10.x back via
	# the host, so it connects too)
	reaches "without the rules: sandbox a -> the world" "$a_ns" 10.250.$K.2 9200
fi
