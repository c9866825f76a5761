#!/bin/bash
# kill -9 of the supervisor: a new one re-adopts the sandboxes still running and marks the one
# that died meanwhile failed, giving back what it held.
source "$(dirname "$0")/lib.sh"
warren_start
a=$(create web wait)
b=$(create web wait)
kill -9 "$PID_supervisor"
wait "$PID_supervisor" 2>/dev/null || true
# b dies while nobody supervises. All of its processes get SIGKILL in one go and a process that
# is already gone is no error: once runsc's sandbox process dies its gofer exits by itself, and
# `xargs kill` on a list read earlier then failed with ESRCH, which (errexit, the loop's last
# command) ended the test with status 1 and no FAIL line -- the one failure seen in a full run.
b_procs() {
	cat /sys/fs/cgroup/pids"$CGROUP_PARENT/$b"/cgroup.procs \
		/sys/fs/cgroup"$CGROUP_PARENT/$b"/cgroup.procs 2>/dev/null || true
}
procs=$(b_procs)
expect "b has processes to kill ($(echo $procs))" test -n "$procs"
# shellcheck disable=SC2086 # a list of pids
kill -9 $procs 2>/dev/null || true
expect "b's processes are dead" wait_for 10 sh -c "[ -z \"\$(cat /sys/fs/cgroup/pids$CGROUP_PARENT/$b/cgroup.procs /sys/fs/cgroup$CGROUP_PARENT/$b/cgroup.procs 2>/dev/null)\" ]"
start_supervisor
expect "a is re-adopted and running" wait_for 10 sh -c "[ \"\$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$a org.warren.Warren1.Sandbox State)\" = 's \"running\"' ]"
expect "a still answers" sh -c "curl -fsS --max-time 10 $(sb_url "$a") | grep -q Hello"
# the cgroup the new supervisor reads a's memory from is the one netnsd named when it listed a
# (the supervisor composes no cgroup path of its own)
mem=$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$a \
	org.warren.Warren1.Sandbox MemoryCurrent | awk '{print $2}')
expect "a's memory is read from its cgroup after the restart ($mem bytes)" test "${mem:-0}" -gt 1000000
# the new supervisor got a's namespace fd back from netnsd (a gVisor checkpoint ends the
# runtime and its restore into a's slot must show that fd): a can be snapshotted, goes on after
# it, and the tag forks
out=$(call "/org/warren/Warren1/sandbox/$a" org.warren.Warren1.Sandbox Snapshot s readopted 2>&1) ||
	fail "Snapshot of the re-adopted sandbox: $out"
log "Snapshot of the re-adopted sandbox: $out"
expect "a answers after its snapshot" wait_for 20 sh -c "curl -fsS --max-time 5 $(sb_url "$a") | grep -q Hello"
child=$(mgr ForkTag su readopted 1 | grep -o '"[0-9a-f]\{12\}"' | tr -d '"')
expect "a child of that tag answers" wait_for 30 sh -c "curl -fsS --max-time 5 $(sb_url "$child") | grep -q Hello"
call "/org/warren/Warren1/sandbox/$child" org.warren.Warren1.Sandbox Destroy >/dev/null
# netnsd gives the fd only for the slot the named sandbox runs in (a hostile peer as warren)
slot=$(sed -n "s/^slot=//p" "$T/state/sandboxes/$a")
# runsc's sandbox process (the sentry) is the one in the slot's namespace, not its gofer
pid_a=$(for p in $(cat /sys/fs/cgroup/pids"$CGROUP_PARENT/$a"/cgroup.procs); do
	grep -qa "^runsc-sandbox" /proc/"$p"/cmdline && echo "$p"; done 2>/dev/null | head -1 || true)
poke_ns() { setpriv --reuid=warren --regid=warren --init-groups "$POKE" "$T/netnsd.sock" slot-ns "$@" 2>&1 || true; }
expect "a's slot ($slot) and a process ($pid_a) are known" test -n "$slot" -a -n "$pid_a"
if :; then
	out=$(poke_ns "$a" "$slot")
	expect "the right id and slot give a's namespace ($out)" test "$out" = "ns $(stat -L -c %i /proc/"$pid_a"/ns/net)"
	out=$(poke_ns "$a" $((slot + 1)))
	expect "another slot is refused ($out)" grep -q "^error -2 " <<<"$out"
	out=$(poke_ns ../../x "$slot")
	expect "a malformed id is refused ($out)" grep -q "^error -2 " <<<"$out"
	out=$(poke_ns ffffffffffff "$slot")
	expect "an unknown id is refused ($out)" grep -q "^error -2 " <<<"$out"
fi
expect "b is failed" wait_for 10 sh -c "[ \"\$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$b org.warren.Warren1.Sandbox State)\" = 's \"failed\"' ]"
log "b: $(sbprop "$b" Reason)"
expect "b's slot went back" wait_for 10 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager PoolFree | grep -qx 'u 5'"
expect "b's runtime is gone" sh -c "! test -e $T/netnsd/bundles/$b"
expect "a new sandbox works after the restart" sh -c "curl -fsS --max-time 20 $(sb_url "$(create web wait)") | grep -q Hello"
