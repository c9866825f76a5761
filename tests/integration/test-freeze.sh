#!/bin/bash
# Freeze and thaw: on demand (Freeze/Thaw), by the gateway on the next request (thaw on
# demand), and after the template's idle time.
source "$(dirname "$0")/lib.sh"
warren_start
state() { sbprop "$1" State; }
# kstate ID: the kernel's freezer state of the sandbox's cgroup: FROZEN, THAWED (or FREEZING)
kstate() {
	local v1=/sys/fs/cgroup/freezer$CGROUP_PARENT/$1/freezer.state
	local v2=/sys/fs/cgroup$CGROUP_PARENT/$1/cgroup.events
	if [ -f "$v1" ]; then
		cat "$v1"
	elif [ -f "$v2" ]; then
		grep -q '^frozen 1' "$v2" && echo FROZEN || echo THAWED
	else
		fail "no freezer for sandbox $1 ($v1, $v2)"
	fi
}
# frozen_now ID: Warren and the kernel both say frozen (before a request that must thaw it)
frozen_now() {
	expect "$1 is frozen (State $(state "$1"))" test "$(state "$1")" = frozen
	expect "the kernel holds $1 frozen ($(kstate "$1"))" test "$(kstate "$1")" = FROZEN
}
id=$(create web wait)
expect "the kernel runs it before any freeze ($(kstate "$id"))" test "$(kstate "$id")" = THAWED
call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Freeze
frozen_now "$id"
out=$(warrenctl exec "$id" -- /bin/busybox true 2>&1 || true)
expect "Exec on a frozen sandbox is refused ($out)" grep -q "frozen" <<<"$out"
call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Thaw
expect "Thaw -> running" test "$(state "$id")" = running
expect "the kernel thawed it" test "$(kstate "$id")" = THAWED
expect "answers after Thaw" sh -c "curl -fsS --max-time 5 $(sb_url "$id") | grep -q Hello"
warrenctl freeze "$id"
frozen_now "$id"
# functional claim: the request is answered (curl's 10 s is the only bound; speed is bench/'s)
t0=$(date +%s%N)
expect "a request thaws it and is answered" sh -c "curl -fsS --max-time 10 $(sb_url "$id") | grep -q Hello"
t1=$(date +%s%N)
log "thaw on request took $(((t1 - t0) / 1000000)) ms"
expect "running again" test "$(state "$id")" = running
expect "the kernel thawed it" test "$(kstate "$id")" = THAWED
# idle freeze from the template's idle_ms
mgr AddTemplate ssasqta{sv} -- idleweb /var/lib/warren/templates/web/rootfs 7 /bin/busybox httpd -f -p 8080 -h /www 8080 67108864 1 idle_ms u 1000
id2=$(create idleweb wait)
curl -fsS --max-time 5 "$(sb_url "$id2")" >/dev/null
expect "idle for 1 s -> frozen" wait_for 10 has_state "$id2" frozen
frozen_now "$id2"
# (its State is not checked after: with idle_ms 1000 it may rightly be frozen again by then)
expect "and a request thaws it" sh -c "curl -fsS --max-time 10 $(sb_url "$id2") | grep -q Hello"
