#!/bin/bash
# A web sandbox end to end: create (reply at once, then running), page through the gateway by
# Host and by path, properties, Exec, Destroy answered fast, nothing left behind.
source "$(dirname "$0")/lib.sh"
warren_start
wait_for 10 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager PoolFree | grep -qx 'u 6'"
id=$(create web)
log "created $id"
expect "state is starting or running right after create" grep -qE "^(starting|running)$" <<<"$(sbprop "$id" State)"
# reachable through the gateway from the moment of creation: the gateway holds the request
page=$(curl -fsS --max-time 30 "$(sb_url "$id")")
expect "page through Host routing" grep -q "Hello from a Warren sandbox" <<<"$page"
page=$(curl -fsS --max-time 10 "$GW/s/$id/index.html")
expect "page through /s/<id>/ routing" grep -q "Hello from a Warren sandbox" <<<"$page"
wait_for 10 sh -c "[ \"\$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox State)\" = 's \"running\"' ]" || fail "not running"
expect "Template property" test "$(sbprop "$id" Template)" = web
expect "Backend property" test "$(sbprop "$id" Backend)" = gvisor
expect "Address inside the test subnet" grep -q "^10.$((100 + K))\." <<<"$(sbprop "$id" Address)"
expect "URL property" test "$(sbprop "$id" URL)" = "$(sb_url "$id")"
mem=$(sbprop "$id" MemoryCurrent)
expect "MemoryCurrent is non-zero ($mem)" test "$mem" -gt 0
expect "CreatedUSec is set" test "$(sbprop "$id" CreatedUSec)" -gt 0
expect "listed" sh -c "warrenctl list | grep -q $id"
out=$(warrenctl exec "$id" -- /bin/busybox echo hello-from-exec)
expect "Exec returns stdout" test "$out" = hello-from-exec
rc=0; warrenctl exec "$id" -- /bin/busybox sh -c 'echo oops >&2; exit 7' 2>"$T/err" || rc=$?
expect "Exec returns the exit status" test "$rc" = 7
expect "Exec returns stderr" grep -q oops "$T/err"
big=$(warrenctl exec "$id" -- /bin/busybox sh -c 'i=0; while [ $i -lt 20000 ]; do echo line-$i; i=$((i+1)); done' | wc -c)
expect "Exec output above 64 KiB ($big bytes)" test "$big" -gt 65536
cg=$(ls -d /sys/fs/cgroup/*/"${CGROUP_PARENT#/}/$id" 2>/dev/null | head -1)
expect "sandbox cgroup exists" test -n "$cg"
t0=$(date +%s%N)
warrenctl destroy "$id"
t1=$(date +%s%N)
log "Destroy answered in $(((t1 - t0) / 1000000)) ms"
gone() {
	! busctl --system get-property org.warren.Warren1 "/org/warren/Warren1/sandbox/$id" \
		org.warren.Warren1.Sandbox State 2>/dev/null &&
		! ls -d /sys/fs/cgroup/*/"${CGROUP_PARENT#/}/$id" 2>/dev/null | grep -q . &&
		! pgrep -f "runsc.*$id" >/dev/null &&
		[ ! -e "$T/netnsd/bundles/$id" ] && [ ! -e "$T/netnsd/runsc/$id" ] &&
		! grep -q "$id" /proc/mounts
}
expect "no object, cgroup, runsc process, bundle, runsc state or mount left" wait_for 20 gone
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$(sb_url "$id")")
expect "gateway answers 404 for the destroyed sandbox" test "$code" = 404
expect "slot back in the pool" wait_for 10 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager PoolFree | grep -qx 'u 6'"
# the reused slot works again
id2=$(create web wait)
expect "a sandbox in a reused slot answers" sh -c "curl -fsS --max-time 20 $(sb_url "$id2") | grep -q Hello"
