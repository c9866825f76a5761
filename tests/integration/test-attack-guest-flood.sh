#!/bin/bash
# A hostile guest against the host's disk and process table, for real:
#  - an app that writes to stdout without end (busybox yes) beside its server: after some
#    seconds its log on disk is within the cap (runsc.log + one rotated runsc.log.1, 1 MiB each),
#    the flood did reach it (positive control: its lines are there, a rotation happened) and the
#    sandbox still answers through the gateway;
#  - an app that floods, says its last words on stderr and exits: the log ends with the last
#    words, then the sandbox is failed with its exit status as the reason;
#  - a program that cannot start: the reason names runsc's own error (read from the log's tail);
#  - an exec that times out: its process inside the sandbox is killed, not only the client;
#  - a fork bomb inside a sandbox: the pids cgroup stops it at the limit (its `max` event
#    counts), the host still forks and another sandbox still answers.
source "$(dirname "$0")/lib.sh"
POOL=4 warren_start
WEB=/var/lib/warren/templates/web/rootfs
CAP=$((1 << 20))
bundle() { echo "$T/netnsd/bundles/$1"; }
# (a rotation may rename a file between the glob and the read: missing files count 0)
logsize() { { cat "$(bundle "$1")"/runsc.log* 2>/dev/null || true; } | wc -c; }

mgr AddTemplate ssasqta{sv} -- flood "$WEB" 4 /bin/busybox sh -c \
	"/bin/busybox yes warren-flood-line-0123456789abcdef & exec /bin/busybox httpd -f -p 8080 -h /www" \
	8080 67108864 0
id=$(create flood wait)
sleep 12
size=$(logsize "$id")
log "flood: $size bytes of log on disk after 12 s ($(ls -l "$(bundle "$id")" 2>/dev/null | grep runsc.log | awk '{print $5, $9}' | tr '\n' ' ' || true))"
expect "the flood reached the log (positive control)" grep -qs warren-flood-line "$(bundle "$id")/runsc.log" "$(bundle "$id")/runsc.log.1"
expect "the log rotated once at least (the guest wrote more than the cap)" test -s "$(bundle "$id")/runsc.log.1"
expect "the log on disk is at most two caps ($size <= $((2 * CAP)))" test "$size" -le $((2 * CAP))
expect "the whole bundle stays small" test "$(du -sk "$(bundle "$id")" | cut -f1)" -le $((2 * CAP / 1024 + 64))
expect "the flooding sandbox still answers" sh -c "curl -fsS --max-time 10 $(sb_url "$id") | grep -q Hello"
sleep 4
size2=$(logsize "$id")
expect "and its log stays bounded ($size2)" test "$size2" -le $((2 * CAP))
warrenctl destroy "$id"

# floods, then last words, then exits: while it lingers the log on disk ends with the last words
# (the flood beyond the rate was counted, not kept); then the reason is its exit status (its
# bundle goes with its runtime)
mgr AddTemplate ssasqta{sv} -- floodcrash "$WEB" 4 /bin/busybox sh -c \
	"/bin/busybox yes warren-flood-line-0123456789abcdef | /bin/busybox head -c 3000000; echo warren-last-words >&2; sleep 8; exit 7" \
	8080 67108864 0
id=$(create floodcrash)
expect "its last words end the log" wait_for 20 sh -c "tail -c 200 $(bundle "$id")/runsc.log | grep -q warren-last-words"
expect "the flood beyond the rate is counted, not kept" grep -qs "bytes of output not kept" "$(bundle "$id")/runsc.log" "$(bundle "$id")/runsc.log.1"
expect "and the log is within two caps" test "$(logsize "$id")" -le $((2 * CAP))
expect "the app that exits is failed" wait_for 60 sh -c "[ \"\$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox State)\" = 's \"failed\"' ]"
expect "with its exit status as the reason ($(sbprop "$id" Reason))" test "$(sbprop "$id" Reason)" = "its app exited with status 7"
warrenctl destroy "$id"

# cannot start: the reason is runsc's own message, from the log's tail
mgr AddTemplate ssasqta{sv} -- nostart "$WEB" 1 /bin/warren-no-such-program 8080 67108864 0
id=$(create nostart)
expect "a program that cannot start fails the sandbox" wait_for 60 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox State 2>/dev/null | grep -q failed || ! busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox State"
reason=$(sbprop "$id" Reason 2>/dev/null || grep -o "Sandbox $id:.*" "$T/supervisor.log" | tail -1)
expect "with runsc's message naming the program as the reason ($reason)" grep -q "warren-no-such-program" <<<"$reason"
warrenctl destroy "$id" >/dev/null 2>&1 || true

# fork bomb
other=$(create web wait)
bomb=$(create web wait)
cg() { cat "/sys/fs/cgroup/$1$CGROUP_PARENT/$other/$2"; }
expect "a CPU quota of one CPU ($(cg cpu cpu.cfs_quota_us)/$(cg cpu cpu.cfs_period_us))" test "$(cg cpu cpu.cfs_quota_us)" = "$(cg cpu cpu.cfs_period_us)"
expect "memory+swap no higher than memory ($(cg memory memory.memsw.limit_in_bytes))" test "$(cg memory memory.memsw.limit_in_bytes)" = "$(cg memory memory.limit_in_bytes)"

# an exec that outlives its time limit (10 s here) is killed inside the sandbox too, not only
# its `runsc exec` client, and the caller is told by name (ExecTimedOut, not a status)
sleeping() { # sleeping ID: 0 if `sleep 4242` runs in it, 1 if ps ran and shows none, 2 if no ps
	local out
	out=$(warrenctl exec "$1" -- /bin/busybox ps 2>/dev/null) || return 2
	grep -q "PID" <<<"$out" || return 2
	grep -q "sleep 4242" <<<"$out"
}
warrenctl exec --timeout=10 "$other" -- /bin/busybox sleep 4242 >"$T/exec.out" 2>&1 &
ex=$!
sleep 5
expect "the exec's process runs in the sandbox (positive control)" sleeping "$other"
st=0
wait $ex || st=$?
expect "the exec timed out and was killed (status $st: $(cat "$T/exec.out"))" \
	grep -q "ran past its time limit of 10000 ms and was killed" "$T/exec.out"
gone=no
for _ in $(seq 20); do
	r=0
	sleeping "$other" || r=$?
	[ $r = 1 ] && { gone=yes; break; }
	sleep 0.5
done
expect "its process is gone from the sandbox" test $gone = yes

pids=/sys/fs/cgroup/pids$CGROUP_PARENT/$bomb
max=$(cat "$pids/pids.max")
log "sandbox $bomb: pids.max $max, pids.current $(cat "$pids/pids.current") before the bomb"
expect "the sandbox has a pids limit ($max)" test "$max" != max
warrenctl exec "$bomb" -- /bin/busybox sh -c 'b() { b | b & }; b; exit 0' >/dev/null 2>&1 || true
expect "the bomb reaches the pids limit" wait_for 60 sh -c "test \"\$(awk '/max/ {print \$2}' $pids/pids.events 2>/dev/null || echo 0)\" -gt 0 || ! test -d $pids"
if [ -d "$pids" ]; then
	log "pids.current $(cat "$pids/pids.current" 2>/dev/null) of $max, $(cat "$pids/pids.events" 2>/dev/null)"
	expect "never beyond it" test "$(cat "$pids/pids.current" 2>/dev/null || echo 0)" -le "$max"
fi
expect "the host still forks" /bin/true
expect "another sandbox still answers" sh -c "curl -fsS --max-time 20 $(sb_url "$other") | grep -q Hello"
expect "the bombed sandbox is destroyed whole" warrenctl destroy "$bomb"
expect "its cgroup is gone" wait_for 20 test ! -d "$pids"
