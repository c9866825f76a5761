#!/bin/bash
# Fault points: each daemon, started with WARREN_FAULT=<step>, kills itself with
# SIGKILL at that step of an operation; it is then started again without the fault, and what
# must hold is checked: the sandbox that ran before the step (`keep`) still runs, is the same
# runtime and answers through the gateway; the operation in flight is done or failed with a
# named error; nothing leaked (veths = the pool, and cgroups, runsc states, bundles and records
# = the live sandboxes; PoolFree = pool - live sandboxes; no temporary image, no VMM left; the
# operation's own sandboxes are destroyed the ordinary way first). CI walks a subset; FAULT_WALK=full (scripts/fault-walk.sh) walks every step and
# prints the step x daemon -> outcome table docs/RELIABILITY.md shows.
source "$(dirname "$0")/lib.sh"
POOL=6
warren_start
TABLE=$T/table
: >"$TABLE"

live_ids() { mgr ListSandboxes 2>/dev/null | grep -oE '\b[0-9a-f]{12}\b' | sort -u || true; }
n_live() { live_ids | grep -c . || true; }
pool_free() {
	busctl --system get-property org.warren.Warren1 /org/warren/Warren1 \
		org.warren.Warren1.Manager PoolFree 2>/dev/null | awk '{print $2}'
}
leaks() { # prints what does not add up (empty: nothing leaked)
	local n veths cgs states bundles records vms
	n=$(n_live)
	vms=$(for id in $(live_ids); do
		busctl --system get-property org.warren.Warren1 "/org/warren/Warren1/sandbox/$id" \
			org.warren.Warren1.Sandbox Backend 2>/dev/null | grep -q microvm && echo "$id"
	done | grep -c . || true)
	veths=$(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -c "^$IFPREFIX" || true)
	cgs=$(find /sys/fs/cgroup/pids"$CGROUP_PARENT" /sys/fs/cgroup"$CGROUP_PARENT" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l)
	states=$(find "$T/netnsd/runsc" -name '*.state' 2>/dev/null | wc -l)
	bundles=$(find "$T/netnsd/bundles" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	records=$(find "$T/netnsd/sandboxes" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	[ "$veths" = "$POOL" ] || echo "veths=$veths"
	[ "$cgs" = "$n" ] || echo "cgroups=$cgs"
	[ "$states" = "$((n - vms))" ] || echo "runsc-states=$states"
	[ "$bundles" = "$n" ] || echo "bundles=$bundles"
	[ "$records" = "$n" ] || echo "records=$records"
	[ "$(pool_free)" = "$((POOL - n))" ] || echo "poolfree=$(pool_free)/$((POOL - n))"
	# an allow-list's nft chain per live sandbox that has one, none for a slot gone free
	local chains lists
	chains=$(nft list chains inet "$NFT_TABLE" 2>/dev/null | grep -c 'chain egress_[0-9]' || true)
	lists=$(for id in $(live_ids); do
		busctl --system get-property org.warren.Warren1 "/org/warren/Warren1/sandbox/$id" \
			org.warren.Warren1.Sandbox Egress 2>/dev/null | grep -q '[0-9]' && echo "$id"
	done | grep -c . || true)
	[ "$chains" = "$lists" ] || echo "egress-chains=$chains/$lists"
	ls -a "$T/images" 2>/dev/null | grep -q '^\.tmp\.' && echo "temp-images"
	pgrep -f "qemu-system.*$T/netnsd/bundles/" >/dev/null &&
		[ "$vms" = 0 ] && echo "qemu-processes"
	true
}

no_leaks() { [ -z "$(leaks)" ]; }

keep=$(create web wait)
keep_pid() { sed -n 's/^pid=//p' "$T/netnsd/sandboxes/$keep"; }
kp=$(keep_pid)
# a tag to restore from
t=$(create web wait)
call "/org/warren/Warren1/sandbox/$t" org.warren.Warren1.Sandbox Snapshot s "walk$K" >/dev/null
warrenctl destroy "$t" >/dev/null
wait_for 20 no_leaks || true
expect "before the walk: nothing leaked ($(leaks | tr '\n' ' '))" test -z "$(leaks)"

restart_daemon() { # restart_daemon NAME [FAULT]: stop it (kill -9 for the gateway) and start again
	local name=$1 fault=${2:-} pid
	pid=$(eval echo "\$PID_$name")
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	case $name in
	netnsd) WARREN_FAULT=$fault start_netnsd ;;
	snapshotd) WARREN_FAULT=$fault start_snapshotd ;;
	gateway) WARREN_FAULT=$fault start_gateway ;;
	supervisor) WARREN_FAULT=$fault start_supervisor ;;
	esac
	wait_for 30 helpers_up || fail "$name did not come back"
}

# walk DAEMON STEP OPERATION...: the operation runs (in the background) while DAEMON has the
# fault; the daemon dies at STEP, is started again, and the checks run.
walk() {
	local daemon=$1 step=$2 where pid out result
	shift 2
	where=$daemon
	[ "$daemon" = spawner ] && where=netnsd
	log "---- $daemon: $step ($*)"
	restart_daemon "$where" "$step"
	pid=$(eval echo "\$PID_$where")
	local fd0=""
	("$@" >"$T/op.out" 2>&1; echo "rc=$?" >>"$T/op.out") &
	local op=$!
	if [ "$step" = none ]; then # no fault point: killed from outside mid-operation
		sleep 1
		kill -9 "$pid"
	fi
	if wait_for 90 sh -c "! kill -0 $pid 2>/dev/null"; then
		[ "$step" = none ] || grep -q "fault point $step reached" "$T/$where.log" ||
			fail "$where died, not at $step"
		wait "$pid" 2>/dev/null || true
		restart_daemon "$where"
		result=died
	else
		result="not reached"
		restart_daemon "$where"
	fi
	wait "$op" 2>/dev/null || true
	out=$(tr '\n' ' ' <"$T/op.out" | cut -c1-160)
	local op_result
	if grep -q 'rc=0' "$T/op.out"; then
		op_result=done
	elif grep -qE 'Error\.[A-Za-z]+' "$T/op.out"; then
		op_result="failed: $(grep -oE 'Error\.[A-Za-z]+' "$T/op.out" | head -1 | cut -d. -f2)"
	else
		op_result="failed: $out"
	fi
	local kept=kept
	{ kill -0 "$kp" && wait_for 20 has_state "$keep" running &&
		curl -fsS --max-time 20 "$(sb_url "$keep")" | grep -q Hello; } || kept=LOST
	# what the operation made (done, failed, or left by the crash) goes the ordinary way; what
	# that way cannot remove is a leak
	for id in $(live_ids); do
		[ "$id" = "$keep" ] || warrenctl destroy "$id" >/dev/null 2>&1 || true
	done
	wait_for 40 no_leaks || true
	local l
	l=$(leaks | tr '\n' ' ')
	log "$daemon $step: daemon $result; operation $op_result; keep $kept; leaks: ${l:-none}"
	printf '| %s | %s | %s | %s | %s | %s |\n' "$daemon" "$step" "$result" "$op_result" "$kept" \
		"${l:-none}" >>"$TABLE"
	# the full walk reports; CI's walk asserts
	[ "${FAULT_WALK:-}" = full ] && return 0
	expect "$daemon $step: the fault point was reached" test "$result" = died
	expect "$daemon $step: the running sandbox is kept (same runtime, answers)" test "$kept" = kept
	expect "$daemon $step: nothing leaked (${l:-none})" test -z "$l"
}

create_op() { create web wait; }
# with an allow-list: its claim is answered once netnsd's spawner loaded the slot's chain
create_list_op() { mgr CreateSandbox sa{sv} web 2 wait b true egress s 203.0.113.7; }
destroy_op() { local id; id=$(create web wait) && warrenctl destroy "$id"; }
destroy_dbus_op() {
	local id
	id=$(create web wait) &&
		call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Destroy
}
freeze_op() {
	call "/org/warren/Warren1/sandbox/$keep" org.warren.Warren1.Sandbox Freeze &&
		call "/org/warren/Warren1/sandbox/$keep" org.warren.Warren1.Sandbox Thaw
}
fork_op() { mgr ForkTag su "walk$K" 3; }
snap_op() {
	local id
	id=$(create web wait) && call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox \
		Snapshot s "w$RANDOM"
}
load_op() { # the gateway killed under requests: every request answered or refused, none wrong
	for _ in $(seq 40); do
		curl -s --max-time 5 "$(sb_url "$keep")" | grep -q Hello || true
	done
}

STEPS="netnsd:claim:create_op supervisor:claim:create_list_op spawner:spawn:create_op spawner:destroy:destroy_op
	netnsd:slot-scrub:destroy_op supervisor:destroy:destroy_dbus_op gateway:none:load_op"
[ "${FAULT_WALK:-}" = full ] && STEPS+=" supervisor:claim:create_op netnsd:freeze:freeze_op spawner:restore:fork_op
	supervisor:fork-child-2:fork_op snapshotd:image-seal:snap_op spawner:checkpoint-write:snap_op"
# FAULT_STEPS="daemon:step:operation ..." walks only those
for s in ${FAULT_STEPS:-$STEPS}; do
	IFS=: read -r d st op <<<"$s"
	walk "$d" "$st" "$op"
done
# A checkpoint in flight: snapshotd dies sealing a gVisor sandbox's image. The spawner restored
# the sandbox in place before answering the checkpoint, so the Snapshot fails with a named error
# and the sandbox keeps running (and answering); no temporary image is left; the next Snapshot
# of it works.
if [ -z "${FAULT_STEPS:-}" ]; then
	log "---- snapshotd: image-seal, the sandbox kept"
	restart_daemon snapshotd image-seal
	p=$(create web wait)
	[ -n "$p" ] || fail "no sandbox to snapshot"
	rc=0
	# dbus-send prints the error's name (busctl only its message)
	out=$(dbus-send --system --print-reply --reply-timeout=120000 --dest=org.warren.Warren1 \
		"/org/warren/Warren1/sandbox/$p" org.warren.Warren1.Sandbox.Snapshot string:"seal$K" 2>&1) || rc=$?
	expect "the Snapshot failed (rc $rc: $out)" test "$rc" != 0
	expect "with a named error" grep -q "Error.SnapshotFailed" <<<"$out"
	expect "snapshotd died at image-seal" wait_for 30 sh -c "! kill -0 $PID_snapshotd 2>/dev/null"
	expect "at that step" grep -q "fault point image-seal reached" "$T/snapshotd.log"
	restart_daemon snapshotd
	expect "the sandbox is running" wait_for 20 has_state "$p" running
	expect "and answers" sh -c "curl -fsS --max-time 20 $(sb_url "$p") | grep -q Hello"
	expect "the next Snapshot of it works" \
		call "/org/warren/Warren1/sandbox/$p" org.warren.Warren1.Sandbox Snapshot s "seal2$K"
	expect "and it answers after that" sh -c "curl -fsS --max-time 20 $(sb_url "$p") | grep -q Hello"
	warrenctl destroy "$p" >/dev/null
	call /org/warren/Warren1 org.warren.Warren1.Manager RemoveTag s "seal2$K" >/dev/null 2>&1 || true
	wait_for 40 no_leaks || true
	expect "nothing leaked ($(leaks | tr '\n' ' '))" test -z "$(leaks)"
fi
log "table:"
cat "$TABLE" >&2
[ -n "${FAULT_TABLE:-}" ] && cp "$TABLE" "$FAULT_TABLE"
true
