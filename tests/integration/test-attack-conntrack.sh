#!/bin/bash
# A tenant leaves more host conntrack entries than one ctnetlink dump of the scrub collects
# (256): when its slot is released, none of them may stay for the slot's next owner. Positive
# control: the entries were there (conntrack -L) before the release.
source "$(dirname "$0")/lib.sh"
POOL=1 start_netnsd
wait_for 10 sh -c "$POKE $T/netnsd.sock status | grep -q pool_free=1"
$POKE "$T/netnsd.sock" claim-hold >"$T/claim" &
holder=$!
PIDS+=($holder)
wait_for 5 test -s "$T/claim" || fail "claim"
read -r slot addr _ <"$T/claim"
# 1000 UDP flows from the host to the sandbox address, each its own conntrack entry
python3 -c 'import socket,sys
for i in range(1000):
    s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", (sys.argv[1], 9999)); s.close()' "$addr"
n=$(conntrack -L -d "$addr" 2>/dev/null | grep -c "dst=$addr" || true)
expect "the tenant's flows are in the host's conntrack table ($n)" test "$n" -gt 600
kill -TERM $holder
wait $holder || true
expect "the slot went back" wait_for 10 sh -c "$POKE $T/netnsd.sock status | grep -q pool_free=1"
n=$(conntrack -L -d "$addr" 2>/dev/null | grep -c "dst=$addr" || true)
expect "none of them stay after the release ($n left)" test "$n" = 0
