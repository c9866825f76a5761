#!/bin/bash
# A destroyed sandbox's namespace slot is reused, not rebuilt: with a pool of one slot, the
# sandbox created after a destroy lives in the very same network namespace (same inode), wired to
# the same veth pair (same host ifindex, same peer ifindex inside), with the same address; netnsd
# built the pool once and logged no rebuild; and the reused slot works (address and route set
# again after gVisor took them).
source "$(dirname "$0")/lib.sh"
POOL=1 warren_start
mgrprop() { busctl --system get-property org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager "$1"; }
# slot_of ID: "INODE PID": the network namespace, among those of the sandbox's processes (runsc
# puts some, e.g. its gofer, in namespaces of their own), whose eth0 is the peer of the slot's
# host veth ${IFPREFIX}0 (exactly one must be), and a process in it
slot_of() {
	local f p pids="" n link found="" pid=
	for f in /sys/fs/cgroup/pids"$CGROUP_PARENT/$1"/cgroup.procs \
		/sys/fs/cgroup"$CGROUP_PARENT/$1"/cgroup.procs; do
		[ -f "$f" ] && pids="$pids $(cat "$f")"
	done
	[ -n "${pids// /}" ] || fail "no processes in the cgroup of $1"
	for p in $pids; do
		n=$(stat -L -c %i "/proc/$p/ns/net" 2>/dev/null) || continue
		[[ " $found " == *" $n "* ]] && continue
		# eth0@ifN inside names the host end of its veth pair
		link=$(nsenter --net="/proc/$p/ns/net" ip -o link show eth0 2>/dev/null || true)
		[[ $link == *"eth0@if$(host_ifindex):"* ]] && found="$found $n" pid=$p
	done
	found=${found# }
	[[ $found =~ ^[0-9]+$ ]] || fail "sandbox $1: namespaces wired to ${IFPREFIX}0: '$found'"
	echo "$found $pid"
}
# free_is N: netnsd itself (not the supervisor's cached status) counts N free slots
free_is() { $POKE "$T/netnsd.sock" status | grep -q " pool_size=1 pool_free=$1 "; }
host_ifindex() { cat "/sys/class/net/${IFPREFIX}0/ifindex"; }

expect "the pool has one slot" test "$(mgrprop PoolSize)" = "u 1"
expect "and it is built and free" wait_for 10 free_is 1
builds=$(grep -c "Namespace pool ready" "$T/netnsd.log" || true)
expect "netnsd built its pool once ($builds)" test "$builds" = 1
hidx=$(host_ifindex)
a=$(create web wait)
expect "sandbox a answers" sh -c "curl -fsS --max-time 10 $(sb_url "$a") | grep -q Hello"
read -r a_slot a_pid <<<"$(slot_of "$a")"
# the test holds a's namespace open: even if it were given up, no other namespace could get its
# inode number (nsfs numbers are reused), so an equal inode below means the same namespace
exec {held}<"/proc/$a_pid/ns/net"
at_exit "exec $held<&-"
a_addr=$(sbprop "$a" Address)
log "a: slot namespace inode $a_slot, address $a_addr, host end ${IFPREFIX}0 ifindex $hidx"
expect "the slot is taken" free_is 0
warrenctl destroy "$a"
expect "a destroy gives the slot back" wait_for 30 free_is 1
b=$(create web wait)
expect "sandbox b answers in the reused slot" sh -c "curl -fsS --max-time 10 $(sb_url "$b") | grep -q Hello"
read -r b_slot _ <<<"$(slot_of "$b")"
log "b: slot namespace inode $b_slot"
expect "b lives in a's network namespace (inode $a_slot / $b_slot)" test "$b_slot" = "$a_slot"
expect "the host end of the pair is the same link (ifindex $hidx)" test "$(host_ifindex)" = "$hidx"
expect "b has a's address ($a_addr)" test "$(sbprop "$b" Address)" = "$a_addr"
expect "netnsd built nothing more" test "$(grep -c "Namespace pool ready" "$T/netnsd.log")" = 1
expect "netnsd logged no slot failure" sh -c "! grep -E 'Slot [0-9]+:|Pool stops' $T/netnsd.log"
