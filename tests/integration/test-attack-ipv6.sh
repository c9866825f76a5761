#!/bin/bash
# A local user reaches a slot over IPv6: the output rule `oifname "<prefix>*"
# meta skuid != { 0, gateway }` is what keeps host processes other than root and the gateway off
# a slot's veth for every address family (the subnet rule names IPv4 only). Made for real: a
# slot of the real netnsd gets a ULA address and a TCP listener inside its namespace (the one
# netnsd holds by fd); from the host,
#  - `nobody` connects to its ULA address and to its link-local address over the veth: refused
#    (dropped by the output hook: EPERM, or a timeout where the stack does not report it), both;
#  - root and the gateway's user connect to the same addresses: they get through (positive
#    controls, so the refusal is the rule's, not a dead path);
#  - with the rule deleted from the live table, nobody gets through too (the test can fail).
# Why an earlier attempt's root control failed: the input chain drops everything a slot's veth
# sends the host but replies, and IPv6 neighbour discovery is ICMPv6 that conntrack never sees
# as a reply, so the host never learned the slot's link-layer address (nor the slot the host's):
# no IPv6 packet crossed the veth for anyone. netnsd now lets neighbour solicitations and
# advertisements (hop limit 255, so only on-link ones) in from the veths; ARP was never in the
# inet family's path, which is why IPv4 worked.
source "$(dirname "$0")/lib.sh"
start_netnsd
# netnsd holds each slot's namespace by fd: one of them, and its veth on the host
ns=
for _ in $(seq 100); do
	for fd in /proc/$PID_netnsd/fd/*; do
		[[ $(readlink "$fd") == net:* ]] || continue
		[ "$(readlink "$fd")" = "$(readlink /proc/self/ns/net)" ] && continue
		ns=$fd
		break
	done
	[ -n "$ns" ] && break
	sleep 0.1
done
[ -n "$ns" ] || fail "no slot namespace in netnsd's fds"
inside() { nsenter --net="$ns" "$@"; }
peer=$(inside ip -o link show eth0 | sed -n 's/.*eth0@if\([0-9]*\):.*/\1/p')
veth=$(ip -o link show | awk -F': ' -v i="$peer" '$1 == i {sub(/@.*/, "", $2); print $2}')
log "slot namespace $ns, host veth $veth"
[[ $veth == "$IFPREFIX"* ]] || fail "the slot's host side $veth is not one of netnsd's veths"
# IPv6 on both ends (a host may have it off by default), addresses without DAD's wait
sysctl -qw "net.ipv6.conf.$veth.disable_ipv6=0"
inside sysctl -qw net.ipv6.conf.eth0.disable_ipv6=0
ULA_HOST=fd57:7c00:$K::1 ULA_SLOT=fd57:7c00:$K::2
ip -6 addr add "$ULA_HOST/64" dev "$veth" nodad
inside ip -6 addr add "$ULA_SLOT/64" dev eth0 nodad
inside ip link set eth0 up
expect "the slot has a link-local address" wait_for 10 sh -c "nsenter --net=$ns ip -6 -o addr show dev eth0 scope link | grep -q fe80"
LL_SLOT=$(inside ip -6 -o addr show dev eth0 scope link | awk '{print $4}' | cut -d/ -f1)
expect "the host's veth has a link-local address" wait_for 10 sh -c "ip -6 -o addr show dev $veth scope link | grep -q 'fe80.*' && ! ip -6 -o addr show dev $veth | grep -q tentative"
# a listener inside the slot answering every connection with "hi": nsenter execs python3 in
# place (no shell function in between), so the pid kept for the clean-up is the listener's own
nsenter --net="$ns" python3 -c '
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", 8099)); s.listen(64)
while True:
    c, _ = s.accept(); c.sendall(b"hi\n"); c.close()
' 3>&- &
PIDS+=($!)
expect "the listener is up inside the slot" wait_for 10 sh -c "nsenter --net=$ns ss -Htln | grep -q ':8099'"

# reach ADDR: connect over TCP (5 s), print "ok" and what came, or the errno's name
cat >"$T/reach.py" <<'EOF'
import errno, socket, sys
addr = sys.argv[1]
scope = socket.if_nametoindex(sys.argv[2]) if addr.startswith("fe80") else 0
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.settimeout(5)
try:
    s.connect((addr, 8099, 0, scope))
    print("ok", s.recv(16).decode().strip())
except OSError as e:
    print(errno.errorcode.get(e.errno, "timeout") if e.errno else "timeout")
EOF
chmod 0644 "$T/reach.py"
reach() { # reach USER ADDR
	local who=$1
	shift
	if [ "$who" = root ]; then
		/usr/bin/python3 "$T/reach.py" "$@" "$veth"
	else
		setpriv --reuid="$who" --regid="$(id -gn "$who")" --clear-groups /usr/bin/python3 "$T/reach.py" "$@" "$veth"
	fi
}
for addr in "$ULA_SLOT" "$LL_SLOT"; do
	out=$(reach root "$addr")
	expect "root reaches [$addr]:8099 over $veth ($out)" test "$out" = "ok hi"
	out=$(reach warren-gateway "$addr")
	expect "the gateway's user reaches [$addr]:8099 ($out)" test "$out" = "ok hi"
	# (the output hook drops nobody's SYN; IPv6's tcp_connect does not report that transmit
	# error, so connect() waits out its timeout where IPv4's says EPERM: either is a refusal,
	# and the red control below shows it is the rule's)
	out=$(reach nobody "$addr")
	expect "nobody cannot reach [$addr]:8099: the output rule drops the connect ($out)" \
		sh -c "test '$out' = EPERM || test '$out' = timeout"
done
# the rule is what refuses: without it nobody gets through (the red control)
handle=$(nft -a list chain inet "$NFT_TABLE" output | sed -n 's/.*oifname .*skuid.* drop # handle \([0-9]*\)/\1/p')
[ -n "$handle" ] || fail "no oifname rule in $NFT_TABLE's output chain"
nft delete rule inet "$NFT_TABLE" output handle "$handle"
out=$(reach nobody "$ULA_SLOT")
expect "without the oifname rule nobody gets through ($out): the refusal above was the rule's" \
	test "$out" = "ok hi"
log "all done"
