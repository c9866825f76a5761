#!/bin/bash
# Egress policies (issue #15), with real connections from code inside gVisor sandboxes (busybox
# nc by Exec) to listeners in a "LAN" namespace of the test's own that name themselves and their
# port: a world address on ports 80 and 81, a second world address, and a private address the
# default deny list covers.
#  - a template's default (allow_outbound, and the template option egress);
#  - per sandbox at create: off blocks what on reaches (positive control: the same listener);
#  - an allow-list reaches the listed CIDR:port only: not another port, not another address,
#    and a listed private address although the deny list covers it;
#  - a fork child has its parent's policy (recorded with the tag), not its template's;
#  - at run time on -> off -> allow-list -> on, each checked on new connections;
#  - SetEgress by another user (uid warren, not the owner) is refused; bad policies are
#    InvalidArgument and change nothing;
#  - a hostile IPC peer (uid warren, as a compromised supervisor) sending netnsd bad egress
#    requests is refused, and the policy in force stays;
#  - a netnsd restart keeps an allow-list in force (never "on"); a supervisor restart keeps the
#    Egress property;
#  - after Destroy the slot's chain, map element and record are gone.
# Targets are only this test's namespace: its addresses are routed to it for the pool's sources
# only (a policy-routing rule), as in test-attack-network.sh.
source "$(dirname "$0")/lib.sh"

L=wte$K
LAN_HOST=203.0.113.1 LAN_PEER=203.0.113.2
WORLD=198.51.100.$K OTHER=198.51.100.$((K + 100)) PRIV=10.253.$K.2
RT=$((1100 + K))
undo() {
	set +e
	ip rule del priority $RT 2>/dev/null
	ip route flush table $RT 2>/dev/null
	ip netns del "$L" 2>/dev/null
	ip link del "${L}h" 2>/dev/null
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
for a in $WORLD $OTHER $PRIV; do
	ip -n "$L" addr add $a/32 dev lo
	ip route add $a/32 via $LAN_PEER dev "${L}h" table $RT
done
ip -n "$L" route add default via $LAN_HOST
ip rule add from "$SUBNET/16" lookup $RT priority $RT
for ap in $WORLD:80 $WORLD:81 $OTHER:80 $PRIV:80; do
	ip netns exec "$L" python3 -c 'import socket,sys
a, p = sys.argv[1].split(":")
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((a, int(p))); s.listen()
while True:
    c=s.accept()[0]; c.sendall(b"hello-from-" + sys.argv[1].encode() + b"\n"); c.close()' "$ap" &
	PIDS+=($!)
done
lan_up() { ip netns exec "$L" python3 -c 'import socket,sys
a, p = sys.argv[1].split(":")
print(socket.create_connection((a, int(p)), timeout=3).recv(64))' "$1" | grep -q "hello-from-$1"; }
for ap in $WORLD:80 $WORLD:81 $OTHER:80 $PRIV:80; do
	expect "listener $ap is up" wait_for 10 lan_up "$ap"
done

warren_start

WEB=/var/lib/warren/templates/web/rootfs
mgr AddTemplate ssasqta{sv} -- egout "$WEB" 7 /bin/busybox httpd -f -p 8080 -h /www 8080 67108864 1 allow_outbound b true >/dev/null
mgr AddTemplate ssasqta{sv} -- eglist "$WEB" 7 /bin/busybox httpd -f -p 8080 -h /www 8080 67108864 1 egress s "$WORLD/32:81" >/dev/null
got=$(mgr GetTemplate s eglist)
expect "GetTemplate reads the template's egress back ($got)" grep -q "\"egress\" s \"$WORLD:81\"" <<<"$got"

# create TEMPLATE POLICY: a sandbox with a per-sandbox egress option, running
create_egress() {
	local out
	out=$(mgr CreateSandbox sa{sv} "$1" 2 wait b true egress s "$2" 2>&1) ||
		fail "CreateSandbox $1 egress $2: $out"
	awk '{print $2}' <<<"$out" | tr -d '"'
}
# nc_from ID ADDR:PORT: what the sandbox's nc got from there (a new connection each time)
nc_from() {
	warrenctl exec "$1" -- /bin/busybox sh -c "sleep 1 | /bin/busybox nc -w 3 ${2%:*} ${2#*:}" 2>&1 || true
}
reaches() { # reaches ID ADDR:PORT WHY
	local got
	got=$(nc_from "$1" "$2")
	expect "$3: $1 reaches $2 ($got)" grep -q "hello-from-$2" <<<"$got"
}
blocked() { # blocked ID ADDR:PORT WHY
	local got
	got=$(nc_from "$1" "$2")
	if grep -q "hello-from" <<<"$got"; then fail "$3: $1 reached $2: $got"; fi
	log "ok: $3: $1 cannot reach $2 (${got:-nothing})"
}
set_egress() { call "/org/warren/Warren1/sandbox/$1" org.warren.Warren1.Sandbox SetEgress s "$2"; }
# set_egress_err ID POLICY: the D-Bus error's name and message (busctl prints only the message)
set_egress_err() {
	dbus-send --system --print-reply --dest=org.warren.Warren1 "/org/warren/Warren1/sandbox/$1" \
		org.warren.Warren1.Sandbox.SetEgress "string:$2" 2>&1 || true
}
# slot_of ID: the slot index, from the address (slot i has SUBNET + 4i + 2)
slot_of() {
	local a
	a=$(sbprop "$1" Address)
	a=${a%:*}
	IFS=. read -r _ _ c d <<<"$a"
	echo $(((c * 256 + d - 2) / 4))
}

# --- template defaults
on=$(create egout wait)
expect "allow_outbound's sandbox shows egress on" test "$(sbprop "$on" Egress)" = on
reaches "$on" $WORLD:80 "template default on"
blocked "$on" $PRIV:80 "on keeps the deny list"
tl=$(create eglist wait)
expect "the template's egress is the sandbox's" test "$(sbprop "$tl" Egress)" = "$WORLD:81"
reaches "$tl" $WORLD:81 "template allow-list"
blocked "$tl" $WORLD:80 "template allow-list, another port"

# --- per sandbox at create: off blocks what on reached
off=$(create_egress egout off)
expect "the create's option is the sandbox's" test "$(sbprop "$off" Egress)" = off
blocked "$off" $WORLD:80 "per-sandbox off"
reaches "$on" $WORLD:80 "positive control, the same listener"
id=$(warrenctl create egout --egress "$OTHER:80,$PRIV" --wait | awk '{print $1}')
[[ $id =~ ^[0-9a-f]{12}$ ]] || fail "warrenctl create --egress gave no id: $id"
expect "warrenctl create --egress sets it" test "$(sbprop "$id" Egress)" = "$OTHER:80,$PRIV"
reaches "$id" $OTHER:80 "per-sandbox allow-list"
reaches "$id" $PRIV:80 "a listed private address"
blocked "$id" $WORLD:80 "per-sandbox allow-list, an address not listed"
warrenctl destroy "$off" "$id" >/dev/null

# --- a fork child starts with its parent's policy, not its template's (egout's is on)
fp=$(create_egress egout off)
call "/org/warren/Warren1/sandbox/$fp" org.warren.Warren1.Sandbox Snapshot s "egoff$K" >/dev/null
expect "the tag records its sandbox's policy" grep -qx off "$T/state/egress-tags/egoff$K"
# fork_off_child WHY: a fork child of egoff$K, running, whose Egress must be off and which must
# not reach the world (egout, its template, is on)
fork_off_child() {
	local k
	k=$(warrenctl fork "egoff$K" 1)
	[[ $k =~ ^[0-9a-f]{12}$ ]] || fail "warrenctl fork gave no child: $k"
	expect "$1: the fork child runs" wait_for 60 has_state "$k" running
	expect "$1: its Egress is off, not its template's on ($(sbprop "$k" Egress))" \
		test "$(sbprop "$k" Egress)" = off
	blocked "$k" $WORLD:80 "$1"
	echo "$k"
}
kid=$(fork_off_child "a fork child of an off sandbox")
# a tag whose record is gone: its children start off, never with the (wider) template's policy
rm "$T/state/egress-tags/egoff$K"
kid2=$(fork_off_child "a fork child of a tag without an egress record")
warrenctl destroy "$kid" "$kid2" "$fp" >/dev/null
mgr RemoveTag s "egoff$K" >/dev/null
expect "RemoveTag takes the tag's record away" test ! -e "$T/state/egress-tags/egoff$K"

# --- at run time, on the sandbox that was on
set_egress "$on" off
expect "Egress reads off" test "$(sbprop "$on" Egress)" = off
blocked "$on" $WORLD:80 "on -> off"
warrenctl egress "$on" "$WORLD:81, $PRIV/24:80"
expect "Egress reads the canonical allow-list" test "$(sbprop "$on" Egress)" = "$WORLD:81,10.253.$K.0/24:80"
reaches "$on" $WORLD:81 "off -> allow-list, listed address and port"
blocked "$on" $WORLD:80 "allow-list, the listed address on another port"
blocked "$on" $OTHER:80 "allow-list, another address"
reaches "$on" $PRIV:80 "allow-list opens a private range the deny list covers"
slot=$(slot_of "$on")
log "sandbox $on is in slot $slot"
expect "its chain is in netnsd's table" nft list chain inet "$NFT_TABLE" "egress_$slot"
expect "netnsd keeps its record" grep -qx "$WORLD:81,10.253.$K.0/24:80" "$T/netnsd/egress/$slot"

# --- who may: another user (uid warren, not the owner); bad policies
out=$(setpriv --reuid=warren --regid=warren --init-groups busctl --system call org.warren.Warren1 \
	"/org/warren/Warren1/sandbox/$on" org.warren.Warren1.Sandbox SetEgress s on 2>&1 || true)
expect "SetEgress by uid warren (not the owner) is refused ($out)" grep -q "AccessDenied\|Access denied\|not yours" <<<"$out"
for bad in "1.1.1.1,1.1.1.2,1.1.1.3,1.1.1.4,1.1.1.5,1.1.1.6,1.1.1.7,1.1.1.8,1.1.1.9,1.1.1.10,1.1.1.11,1.1.1.12,1.1.1.13,1.1.1.14,1.1.1.15,1.1.1.16,1.1.1.17" \
	"$WORLD/33" "$WORLD:70000" "$WORLD:0" $'on\n' $'1.2.3.4\x01' "garbage" "" "ON" "1.2.3.4,,5.6.7.8" "::/0"; do
	out=$(set_egress_err "$on" "$bad")
	expect "SetEgress '$(printf %q "$bad")' is InvalidArgument ($out)" grep -q "org.warren.Warren1.Error.InvalidArgument" <<<"$out"
done
out=$(mgr CreateSandbox sa{sv} egout 1 egress s "$WORLD/40" 2>&1 || true)
expect "CreateSandbox with a bad egress is refused ($out)" grep -q "Option 'egress': entry $WORLD/40: the prefix length" <<<"$out"
expect "the policy stayed" test "$(sbprop "$on" Egress)" = "$WORLD:81,10.253.$K.0/24:80"

# --- a hostile peer on netnsd's socket (uid warren: what a compromised supervisor is)
poke_as_warren() { setpriv --reuid=warren --regid=warren --init-groups "$POKE" "$T/netnsd.sock" "$@" 2>&1 || true; }
for bad in "$WORLD/33" "$WORLD:70000" $'1.2.3.4\n' "x" "" "1.1.1.1,1.1.1.2,1.1.1.3,1.1.1.4,1.1.1.5,1.1.1.6,1.1.1.7,1.1.1.8,1.1.1.9,1.1.1.10,1.1.1.11,1.1.1.12,1.1.1.13,1.1.1.14,1.1.1.15,1.1.1.16,1.1.1.17"; do
	out=$(poke_as_warren set-egress "$slot" "$bad")
	expect "netnsd refuses set_egress '$(printf %q "$bad")' ($out)" grep -q "^error -22 " <<<"$out"
done
out=$(poke_as_warren set-egress 3999 on)
expect "netnsd refuses a slot nobody claimed ($out)" grep -q "^error -2 " <<<"$out"
out=$(poke_as_warren set-egress 4294967295 on)
expect "and a slot past its table ($out)" grep -q "^error -2 " <<<"$out"
expect "netnsd still serves" sh -c "$POKE $T/netnsd.sock status | grep -q ready=1"
expect "the chain is unchanged" sh -c "nft list chain inet $NFT_TABLE egress_$slot | grep -q 'dport 81'"
blocked "$on" $WORLD:80 "after the hostile requests, still the allow-list"

# --- a netnsd restart keeps the allow-list (the sandbox lives on; its chain is loaded again)
stop_pid "$PID_netnsd"
start_netnsd
expect "the supervisor reconnects" wait_for 30 helpers_up
expect "the chain is back after the restart" wait_for 10 nft list chain inet "$NFT_TABLE" "egress_$slot"
blocked "$on" $WORLD:80 "after a netnsd restart, the allow-list holds"
reaches "$on" $WORLD:81 "after a netnsd restart, the listed port (positive control)"

# --- a supervisor restart: its record gives the property back; netnsd's chain never went
stop_pid "$PID_supervisor"
start_supervisor
expect "the sandbox is re-adopted" wait_for 30 has_state "$on" running
expect "after a supervisor restart Egress reads the allow-list" test "$(sbprop "$on" Egress)" = "$WORLD:81,10.253.$K.0/24:80"
blocked "$on" $WORLD:80 "after a supervisor restart, the allow-list holds"

# --- back to on; then Destroy takes the chain, the map element and the record away
warrenctl egress "$on" on
reaches "$on" $WORLD:80 "allow-list -> on"
blocked "$on" $PRIV:80 "on again keeps the deny list"
if nft list chain inet "$NFT_TABLE" "egress_$slot" >/dev/null 2>&1; then fail "on left the chain egress_$slot"; fi
log "ok: on removed the slot's chain"
set_egress "$on" "$WORLD:81"
expect "the chain is there again" nft list chain inet "$NFT_TABLE" "egress_$slot"
warrenctl destroy "$on" >/dev/null
gone() { ! nft list chain inet "$NFT_TABLE" "egress_$slot" >/dev/null 2>&1; }
expect "after Destroy the slot's chain is gone" wait_for 15 gone
expect "and its map element" sh -c "! nft list map inet $NFT_TABLE egress_slots | grep -q '\"$IFPREFIX$slot\"'"
expect "and netnsd's record" test ! -e "$T/netnsd/egress/$slot"
expect "and the supervisor's record" test ! -e "$T/state/egress/$on"
# the slot's next tenant gets its own policy, not the last one's
n=$(create egout wait)
log "next sandbox $n in slot $(slot_of "$n")"
reaches "$n" $WORLD:80 "a new sandbox (on) after an allow-list's"
warrenctl destroy "$n" "$tl" >/dev/null
