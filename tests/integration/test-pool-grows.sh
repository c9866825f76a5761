#!/bin/bash
# Without --pool-size the namespace pool follows demand: it starts at its minimum (plus spare),
# builds slots ahead as creates take them, so it grows past its start, and takes the free ones
# down again once they have been idle, back to where it started. Counted by the host ends of the
# slots' veth pairs (one per built slot) and by netnsd's own status, not the supervisor's cache.
source "$(dirname "$0")/lib.sh"
POOL=dynamic warren_start --pool-min 1 --pool-spare 1 --pool-max 6 --pool-idle-ms 1000
# built_is N: N slots built (N host veths of this test's prefix exist)
built() { ip -o link show | grep -c ": ${IFPREFIX}[0-9]*@" || true; }
built_is() { test "$(built)" = "$1"; }
free_is() { $POKE "$T/netnsd.sock" status | grep -q " pool_size=6 pool_free=$1 "; }

expect "the pool starts with one built, free slot" wait_for 10 free_is 1
expect "one slot built at the start ($(built))" built_is 1
ids=()
for i in 1 2 3; do
	id=$(create web wait) || fail "create $i failed"
	ids+=("$id")
done
for id in "${ids[@]}"; do
	expect "sandbox $id answers" sh -c "curl -fsS --max-time 10 $(sb_url "$id") | grep -q Hello"
done
# 3 claimed + 1 spare
expect "the pool grew past its start: 4 slots built ($(built))" wait_for 10 built_is 4
expect "one of them free, ahead of the next create" wait_for 10 free_is 1
for id in "${ids[@]}"; do
	warrenctl destroy "$id"
done
# (not "4 free": the first slot released may already be taken down before the last is free)
expect "every sandbox is gone" wait_for 30 sh -c "! warrenctl list | grep -q web"
# idle 1 s, looked at every 250 ms: back to min + spare well within 10 s
expect "idle free slots were taken down: back to 1 ($(built))" wait_for 15 built_is 1
expect "netnsd counts it free" wait_for 5 free_is 1
expect "netnsd logged no slot failure" sh -c "! grep -E 'Slot [0-9]+:|Pool stops' $T/netnsd.log"
# the slot left still works
id=$(create web wait) || fail "create after the shrink failed"
expect "a sandbox in the shrunk pool answers" sh -c "curl -fsS --max-time 10 $(sb_url "$id") | grep -q Hello"
