#!/bin/bash
# Sandbox cgroups in a delegated subtree (units/warren-cgroupd.service, Delegate=): with the
# kernel's own cgroup v2 hierarchy, warren-cgroupd started in a cgroup of its own as systemd
# starts a unit's main process moves itself to <unit>/cgroupd, enables the unit's controllers
# for <unit>/sandboxes, locks itself down (no capability, seccomp, no_new_privs) and stops on
# SIGTERM; started in the root cgroup it refuses. Then a whole Warren whose netnsd and
# snapshotd take <unit>/sandboxes as --cgroup-parent, as the units give it: a sandbox's
# runtime lives in <unit>/sandboxes/<id>, freezes and thaws, survives a kill -9 of netnsd and
# is adopted from there, and its cgroup goes when it is destroyed.
source "$(dirname "$0")/lib.sh"
CGD="$LIBEXEC/warren-cgroupd"
[ -x "$CGD" ] || fail "no $CGD"

# the cgroup v2 hierarchy: /sys/fs/cgroup on a pure v2 host, the unified mount of a hybrid one
V2=""
for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	[ "$(stat -fc %T "$d" 2>/dev/null)" = cgroup2fs ] && { V2=$d; break; }
done
[ -n "$V2" ] || { log "SKIP: no cgroup v2 hierarchy"; exit 77; }
UNIT=/warren-t$K-cgroupd.service
# systemd turns a delegated unit's controllers on in its parent (the slice); the parent here is
# the hierarchy's root: turn on what it has, and off again afterwards what was off
added=""
for c in $(cat "$V2/cgroup.controllers"); do
	grep -qw "$c" "$V2/cgroup.subtree_control" && continue
	echo "+$c" >"$V2/cgroup.subtree_control" && added+=" $c"
done
at_exit "for c in $added; do echo -\$c >$V2/cgroup.subtree_control 2>/dev/null; done"
at_exit "rmdir $V2$UNIT/sandboxes/probe $V2$UNIT/sandboxes $V2$UNIT/cgroupd $V2$UNIT 2>/dev/null"
rmdir "$V2$UNIT/sandboxes/probe" "$V2$UNIT/sandboxes" "$V2$UNIT/cgroupd" "$V2$UNIT" 2>/dev/null || true
mkdir "$V2$UNIT"
log "cgroup v2 at $V2, controllers for the unit: $(cat "$V2$UNIT/cgroup.controllers")"

# 1. Refused outside a cgroup of its own (the test shell's, a root cgroup here or a test
# runner's): only when this shell is in the root cgroup can it be shown
if grep -qx '0::/' /proc/self/cgroup && ! grep -q ':name=systemd:/.' /proc/self/cgroup; then
	rc=0
	out=$("$CGD" 2>&1) || rc=$?
	expect "started in the root cgroup, it refuses (exit $rc: $out)" test "$rc" = 1
	expect "and says why" grep -q "Not in a cgroup of its own" <<<"$out"
fi

# 2. Started as systemd starts a delegated unit's main process: in the unit's own cgroup
daemon cgroupd sh -c "echo \$\$ >$V2$UNIT/cgroup.procs && exec $CGD --cgroup-root $V2 --print-parent"
expect "it names the sandboxes' parent" wait_for 10 grep -qx "$UNIT/sandboxes" "$T/cgroupd.log"
P=$PID_cgroupd
expect "it moved itself to <unit>/cgroupd" grep -qx "0::$UNIT/cgroupd" /proc/$P/cgroup
expect "the unit's cgroup holds no process" test -z "$(cat "$V2$UNIT/cgroup.procs")"
ctrls=$(tr ' ' '\n' <"$V2$UNIT/cgroup.controllers" | sort | paste -sd' ')
sub() { tr ' ' '\n' <"$1/cgroup.subtree_control" | sort | paste -sd' '; }
expect "the unit's controllers are on for its children ($ctrls)" test "$(sub "$V2$UNIT")" = "$ctrls"
expect "<unit>/sandboxes exists" test -d "$V2$UNIT/sandboxes"
expect "and its children get them too" test "$(sub "$V2$UNIT/sandboxes")" = "$ctrls"
# a sandbox's cgroup in it takes a process and has each controller's files
mkdir "$V2$UNIT/sandboxes/probe"
sleep 60 &
SLEEP=$!
at_exit "kill $SLEEP 2>/dev/null"
expect "a process goes into <unit>/sandboxes/probe" sh -c "echo $SLEEP >$V2$UNIT/sandboxes/probe/cgroup.procs"
for c in $ctrls; do
	expect "<unit>/sandboxes/probe has $c's files" sh -c "ls $V2$UNIT/sandboxes/probe/$c.* >/dev/null"
done
if [ -n "$ctrls" ]; then
	# why it moved: cgroup v2 refuses a process in a cgroup whose children have controllers
	expect "the kernel refuses a process in the unit's own cgroup now" \
		sh -c "! echo $SLEEP >$V2$UNIT/cgroup.procs 2>/dev/null"
fi
kill $SLEEP
wait $SLEEP 2>/dev/null || true
rmdir "$V2$UNIT/sandboxes/probe"
status() { awk -v k="$2:" '$1 == k {print $2}' /proc/"$1"/status; }
expect "it keeps no capability (CapEff $(status $P CapEff))" test "$(status $P CapEff)" = 0000000000000000
expect "nor any in its bounding set" test "$(status $P CapBnd)" = 0000000000000000
expect "it runs under seccomp" test "$(status $P Seccomp)" = 2
expect "with no_new_privs" test "$(status $P NoNewPrivs)" = 1
kill -TERM $P
rc=0
wait $P || rc=$?
expect "SIGTERM stops it cleanly (exit $rc)" test "$rc" = 0

# 3. A Warren whose sandboxes live in <unit>/sandboxes, as netnsd's and snapshotd's units say
CGROUP_PARENT=$UNIT/sandboxes
SNAPSHOTD_OPTS="--cgroup-parent $CGROUP_PARENT"
warren_start
a=$(create web wait)
[ -n "$a" ] || fail "no sandbox"
pid=$(sed -n 's/^pid=//p' "$T/netnsd/sandboxes/$a")
in_cgroup() { # the runtime is in <unit>/sandboxes/<id> (v2: the one hierarchy; v1: each of these)
	local c
	if [ "$V2" = /sys/fs/cgroup ]; then
		grep -qx "0::$CGROUP_PARENT/$a" /proc/"$pid"/cgroup
		return
	fi
	for c in memory pids freezer; do
		grep -qE "^[0-9]+:$c:$CGROUP_PARENT/$a\$" /proc/"$pid"/cgroup || return 1
	done
}
expect "the runtime ($pid) is in $CGROUP_PARENT/$a" in_cgroup
expect "it answers through the gateway" curl -fsS --max-time 20 "$(sb_url "$a")" -o /dev/null
call "/org/warren/Warren1/sandbox/$a" org.warren.Warren1.Sandbox Freeze
expect "it freezes" has_state "$a" frozen
expect "and wakes on a request" curl -fsS --max-time 20 "$(sb_url "$a")" -o /dev/null
kill -9 "$PID_netnsd"
wait "$PID_netnsd" 2>/dev/null || true
start_netnsd
expect "the restarted netnsd adopted it from $CGROUP_PARENT" wait_for 30 grep -q "Adopting sandbox $a " "$T/netnsd.log"
expect "the helpers are back" wait_for 30 helpers_up
expect "the same runtime, still in its cgroup" in_cgroup
expect "it answers after the restart" curl -fsS --max-time 20 "$(sb_url "$a")" -o /dev/null
ctl destroy "$a" >/dev/null
gone() { ! find /sys/fs/cgroup -path "*$CGROUP_PARENT/$a" -type d 2>/dev/null | grep -q .; }
expect "destroyed: its cgroup is gone in every hierarchy" wait_for 10 gone
# what runsc made above it in the v1 hierarchies (empty now), then the unit's own
for d in /sys/fs/cgroup/*"$UNIT" "$V2$UNIT"; do
	rmdir "$d/sandboxes" "$d/cgroupd" "$d" 2>/dev/null || true
done
expect "no cgroup of the unit is left" sh -c "! ls -d /sys/fs/cgroup/*$UNIT $V2$UNIT 2>/dev/null"
log "PASS"
