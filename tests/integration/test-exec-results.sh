#!/bin/bash
# An exec never loses its result: the real status, or a named error. The caller's time limit
# ends a command with ExecTimedOut (and its process is gone); output over 16 MiB keeps the real
# status and says it was cut; both streams over the limit still answer (a reply over the bus's
# 32 MiB limit would never arrive) and the supervisor stays on the bus; a Snapshot or Freeze
# asked during an exec is refused with BadState and the exec gets its real status; the idle
# freeze waits for the exec's end (then comes). Each has its positive control.
source "$(dirname "$0")/lib.sh"
warren_start
WEB=/var/lib/warren/templates/web/rootfs
mgr AddTemplate ssasqta{sv} -- idler "$WEB" 7 /bin/busybox httpd -f -p 8080 -h /www 8080 \
	67108864 1 idle_ms u 1000
id=$(create web wait)
# options go before the id (podman exec's order)
xsh() {
	local o=()
	while [[ $1 == --timeout=* ]]; do o+=("$1"); shift; done
	warrenctl exec "${o[@]}" "$id" "$@"
}

# real statuses
set +e
xsh -- /bin/busybox sh -c 'exit 7'
st=$?
set -e
expect "Exec gives the command's status ($st)" test "$st" = 7

# the caller's time limit
set +e
out=$(xsh --timeout=1 -- /bin/busybox sleep 30 2>&1)
st=$?
set -e
expect "a command past its limit: ExecTimedOut ($out)" grep -q "ran past its time limit of 1000 ms" <<<"$out"
expect "warrenctl fails ($st)" test "$st" != 0
out=$(busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$id" \
	org.warren.Warren1.Sandbox ExecWithOptions asa{sv} 2 /bin/busybox true 1 timeout_ms u 500 2>&1 || true)
expect "ExecWithOptions answers (status 0 of a quick command: $out)" grep -q '^iayay 0 ' <<<"$out"
out=$(busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$id" \
	org.warren.Warren1.Sandbox ExecWithOptions asa{sv} 2 /bin/busybox true 1 timeout_ms u 0 2>&1 || true)
expect "a limit of 0 is refused ($out)" grep -q "timeout_ms must be" <<<"$out"
out=$(busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$id" \
	org.warren.Warren1.Sandbox ExecWithOptions asa{sv} 3 /bin/busybox sleep 30 1 timeout_ms u 700 2>&1 || true)
expect "the error is named ExecTimedOut ($out)" grep -q "ExecTimedOut\|ran past its time limit" <<<"$out"
# ps works (it lists httpd) and no longer lists the killed command
expect "the timed-out command is gone" wait_for 10 sh -c \
	"out=\$(warrenctl exec $id -- /bin/busybox ps) && echo \"\$out\" | grep -q httpd && ! echo \"\$out\" | grep -q 'sleep 30'"
expect "a command inside its limit gives its status" sh -c \
	"warrenctl exec --timeout=20 $id -- /bin/busybox sh -c 'sleep 1; exit 3'; [ \$? = 3 ]"

# output over the limit: the real status, the output cut at 16 MiB and said so
set +e
xsh -- /bin/busybox sh -c '/bin/busybox yes | /bin/busybox head -c 20000000; exit 5' \
	>"$T/out" 2>"$T/err"
st=$?
set -e
expect "over the limit: the real status ($st)" test "$st" = 5
expect "stdout cut at 16 MiB ($(stat -c %s "$T/out"))" test "$(stat -c %s "$T/out")" = 16777216
expect "and said so on stderr" grep -q "exec output truncated" "$T/err"
# both streams over: the answer still comes, under the bus's message limit
set +e
xsh -- /bin/busybox sh -c '/bin/busybox yes | /bin/busybox head -c 20000000; /bin/busybox yes | /bin/busybox head -c 20000000 >&2; exit 6' \
	>"$T/out" 2>"$T/err"
st=$?
set -e
expect "both streams over: the real status ($st)" test "$st" = 6
total=$(( $(stat -c %s "$T/out") + $(stat -c %s "$T/err") ))
expect "the answer stayed under 32 MiB ($total bytes)" test "$total" -le $((24 << 20))
expect "and the cut is said" grep -q "exec stderr cut" "$T/err"
expect "the supervisor is still on the bus" busctl --system status org.warren.Warren1

# a snapshot or a freeze during an exec: refused by name, the exec keeps its status
xsh -- /bin/busybox sh -c 'sleep 3; exit 4' &
ex=$!
sleep 1
out=$(call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Snapshot s during 2>&1 || true)
expect "Snapshot during an exec: BadState ($out)" grep -q "runs an exec" <<<"$out"
out=$(warrenctl freeze "$id" 2>&1 || true)
expect "Freeze during an exec: BadState ($out)" grep -q "runs an exec" <<<"$out"
set +e
wait "$ex"
st=$?
set -e
expect "the exec got its real status ($st)" test "$st" = 4
expect "after the exec, Freeze works" warrenctl freeze "$id"
warrenctl thaw "$id"
expect "after the exec, Snapshot works" call "/org/warren/Warren1/sandbox/$id" \
	org.warren.Warren1.Sandbox Snapshot s after

# a destroy during an exec: the exec is named interrupted, not given the kill's status
d=$(create web wait)
warrenctl exec "$d" -- /bin/busybox sleep 20 >"$T/dx.out" 2>&1 &
ex=$!
sleep 1
warrenctl destroy "$d"
set +e
wait "$ex"
st=$?
set -e
expect "an exec under a destroy fails ($st)" test "$st" != 0
expect "named ExecInterrupted ($(cat "$T/dx.out"))" grep -q "interrupted: the sandbox was destroyed" "$T/dx.out"

# the idle freeze (idle_ms 1000) waits for an exec to end
i=$(create idler wait)
expect "an idle sandbox is frozen (positive control)" wait_for 20 has_state "$i" frozen
warrenctl thaw "$i"
expect "it runs again" has_state "$i" running
warrenctl exec "$i" -- /bin/busybox sh -c 'sleep 5; exit 9' &
ex=$!
sleep 3.5
expect "idle for 3 s during an exec, it is not frozen" has_state "$i" running
set +e
wait "$ex"
st=$?
set -e
expect "the exec ended with its status ($st)" test "$st" = 9
expect "and then the idle sandbox is frozen" wait_for 20 has_state "$i" frozen
log "PASS"
