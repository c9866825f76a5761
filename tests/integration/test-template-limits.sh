#!/bin/bash
# Per-template pids and CPU bounds: AddTemplate's "pids" and "cpu_millis"
# options are checked (out of range: InvalidArgument, nothing saved), saved, and reach the
# sandbox's cgroup: runsc's config.json for a gVisor sandbox, the VMM's cgroup for a microVM
# (where QEMU is here). netnsd's --sandbox-pids/--sandbox-cpus stay the caps: a template asking
# for more gets the host's. A template without them gets the host's (the control).
source "$(dirname "$0")/lib.sh"
# caps of this host's netnsd: 256 tasks, 2 CPUs
warren_start --sandbox-pids 256 --sandbox-cpus 2
ROOTFS=/var/lib/warren/templates/web/rootfs
WEBARGS=(7 /bin/busybox httpd -f -p 8080 -h /www)
add() { mgr AddTemplate ssasqta{sv} -- "$1" "$ROOTFS" "${WEBARGS[@]}" 8080 67108864 "${@:2}" 2>&1; }
refused() { # refused WHAT PATTERN NAME OPTIONS...: AddTemplate fails, saying why
	local what=$1 pat=$2 out
	shift 2
	out=$(add "$@") && fail "$what was accepted: $out"
	grep -q "$pat" <<<"$out" || fail "$what: not the expected reason: $out"
	log "ok: $what refused: $out"
}
refused "pids below 64" "pids is 0 (the host's) or 64-65536" p1 1 pids u 10
refused "pids above 65536" "pids is 0 (the host's) or 64-65536" p2 1 pids u 70000
refused "cpu_millis below 50" "cpu_millis is 0 (the host's) or 50-1024000" p3 1 cpu_millis u 10
refused "cpu_millis above 1024000" "cpu_millis is 0 (the host's) or 50-1024000" p4 1 cpu_millis u 2000000
refused "pids of the wrong type" "Option pids is a uint32" p5 1 pids s 100
expect "nothing of them was saved" test -z "$(ls "$T/state/templates" 2>/dev/null | grep '^p[0-9]$' || true)"
expect "a template with its own bounds is added" add lim 2 pids u 100 cpu_millis u 500
expect "a template asking for more than the caps is added" add big 2 pids u 4096 cpu_millis u 8000
expect "the bounds are saved with it" \
	sh -c "grep -qx pids=100 $T/state/templates/lim && grep -qx cpu_millis=500 $T/state/templates/lim"

# cgroup_limits ID: "pids quota period" of a sandbox's cgroup (v1 here, v2 in production)
cgroup_limits() {
	local v1p=/sys/fs/cgroup/pids$CGROUP_PARENT/$1 c
	if [ -d "$v1p" ]; then
		c=$(ls -d /sys/fs/cgroup/cpu,cpuacct$CGROUP_PARENT/$1 /sys/fs/cgroup/cpu$CGROUP_PARENT/$1 2>/dev/null | head -1 || true)
		echo "$(cat $v1p/pids.max) $(cat $c/cpu.cfs_quota_us) $(cat $c/cpu.cfs_period_us)"
	else
		echo "$(cat /sys/fs/cgroup$CGROUP_PARENT/$1/pids.max) $(cat /sys/fs/cgroup$CGROUP_PARENT/$1/cpu.max)"
	fi
}
id=$(create lim wait)
expect "the lim sandbox answers" wait_for 30 sh -c "curl -fsS --max-time 5 $(sb_url "$id") >/dev/null"
expect "its cgroup has the template's bounds: 100 tasks, half a CPU ($(cgroup_limits "$id"))" \
	test "$(cgroup_limits "$id")" = "100 50000 100000"
id2=$(create big wait)
expect "a template above the caps gets the host's: 256 tasks, 2 CPUs ($(cgroup_limits "$id2"))" \
	test "$(cgroup_limits "$id2")" = "256 200000 100000"
id3=$(create web wait)
expect "a template without bounds gets the host's ($(cgroup_limits "$id3"))" \
	test "$(cgroup_limits "$id3")" = "256 200000 100000"
warrenctl destroy "$id" "$id2" "$id3" >/dev/null 2>&1 || true

backends=$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager Backends)
if grep -q '"microvm"' <<<"$backends"; then
	vm=
	for attempt in 1 2; do # TCG boots hang now and then (docs/MICROVM.md): one retry
		out=$(mgr CreateSandbox sa{sv} lim 3 wait b true backend s microvm start_timeout_ms u 60000 2>&1) &&
			{ vm=$(echo "$out" | awk '{print $2}' | tr -d '"'); break; }
		log "microVM create attempt $attempt failed: $out"
	done
	[ -n "$vm" ] || fail "no microVM came up"
	qpid=$(pgrep -f "^/usr/bin/qemu-system-x86_64.*$T/netnsd/bundles/$vm" | head -1)
	expect "the VMM is in the pids controller's sandbox cgroup" \
		grep -Eq ":pids:$CGROUP_PARENT/$vm\$|^0::$CGROUP_PARENT/$vm\$" /proc/$qpid/cgroup
	expect "the VMM's cgroup has the template's bounds ($(cgroup_limits "$vm"))" \
		test "$(cgroup_limits "$vm")" = "100 50000 100000"
	warrenctl destroy "$vm" >/dev/null 2>&1 || true
else
	log "no microVM backend here: its part is skipped"
fi
log "all done"
