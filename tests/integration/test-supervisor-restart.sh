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
expect "b is failed" wait_for 10 sh -c "[ \"\$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$b org.warren.Warren1.Sandbox State)\" = 's \"failed\"' ]"
log "b: $(sbprop "$b" Reason)"
expect "b's slot went back" wait_for 10 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager PoolFree | grep -qx 'u 5'"
expect "b's runtime is gone" sh -c "! test -e $T/netnsd/bundles/$b"
expect "a new sandbox works after the restart" sh -c "curl -fsS --max-time 20 $(sb_url "$(create web wait)") | grep -q Hello"
