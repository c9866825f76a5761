#!/bin/bash
# Freeze and thaw: on demand (Freeze/Thaw), by the gateway on the next request (thaw on
# demand), and after the template's idle time.
source "$(dirname "$0")/lib.sh"
warren_start
state() { sbprop "$1" State; }
id=$(create web wait)
call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Freeze
expect "Freeze -> frozen" test "$(state "$id")" = frozen
fz=$(cat /sys/fs/cgroup/freezer"$CGROUP_PARENT/$id"/freezer.state 2>/dev/null || grep -o 'frozen 1' /sys/fs/cgroup"$CGROUP_PARENT/$id"/cgroup.events)
expect "the kernel says frozen ($fz)" grep -qE "FROZEN|frozen 1" <<<"$fz"
out=$(warrenctl exec "$id" -- /bin/busybox true 2>&1 || true)
expect "Exec on a frozen sandbox is refused ($out)" grep -q "frozen" <<<"$out"
call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Thaw
expect "Thaw -> running" test "$(state "$id")" = running
expect "answers after Thaw" sh -c "curl -fsS --max-time 5 $(sb_url "$id") | grep -q Hello"
warrenctl freeze "$id"
t0=$(date +%s%N)
expect "a request thaws it and is answered" sh -c "curl -fsS --max-time 10 $(sb_url "$id") | grep -q Hello"
t1=$(date +%s%N)
log "thaw on request took $(((t1 - t0) / 1000000)) ms"
expect "running again" test "$(state "$id")" = running
# idle freeze from the template's idle_ms
mgr AddTemplate ssasqta{sv} -- idleweb /var/lib/warren/templates/web/rootfs 7 /bin/busybox httpd -f -p 8080 -h /www 8080 67108864 1 idle_ms u 1000
id2=$(create idleweb wait)
curl -fsS --max-time 5 "$(sb_url "$id2")" >/dev/null
expect "idle for 1 s -> frozen" wait_for 10 sh -c "[ \"\$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$id2 org.warren.Warren1.Sandbox State)\" = 's \"frozen\"' ]"
expect "and a request thaws it" sh -c "curl -fsS --max-time 10 $(sb_url "$id2") | grep -q Hello"
