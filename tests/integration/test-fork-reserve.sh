#!/bin/bash
# A fork of many children tells netnsd how many creates are coming (pool_reserve) before its
# image is opened, so a growing pool builds their slots at once instead of one spare at a time
# behind the claims. A hostile peer (uid warren, what a compromised supervisor can send)
# announcing 2^31 creates, or 2^32-1 again and again, gets at most the pool's max built and
# netnsd keeps answering; the reservation lapses unclaimed and the idle policy takes the slots
# down again. Then ForkTag of 12 on a pool that keeps 1 spare: every child answers.
source "$(dirname "$0")/lib.sh"
POOL=dynamic warren_start --pool-min 1 --pool-spare 1 --pool-max 16 --pool-idle-ms 1000 --debug
# built: slots built now (host veths of this test's prefix, one per built slot)
built() { ip -o link show | grep -c ": ${IFPREFIX}[0-9]*@" || true; }
built_is() { test "$(built)" = "$1"; }
free_is() { $POKE "$T/netnsd.sock" status | grep -q " pool_size=16 pool_free=$1 "; }
poke() { IPC_POKE_USER=warren "$POKE" "$T/netnsd.sock" "$@" 2>&1 || true; }
# at_most_max SECONDS: sampled every 0.1 s, never more than 16 slots built
at_most_max() {
	local end=$(($(date +%s) + $1)) n
	while [ "$(date +%s)" -lt "$end" ]; do
		n=$(built)
		[ "$n" -le 16 ] || { log "$n slots built"; return 1; }
		sleep 0.1
	done
}

expect "the pool starts with one built, free slot" wait_for 10 free_is 1

# ---- a hostile announcement ----
out=$(poke pool-reserve 2147483648)
expect "2^31 creates announced: bounded by the pool's max ($out)" test "$out" = "reserved 16 target 16"
out=$(poke pool-reserve 4294967295)
expect "2^32-1 more do not stack past it ($out)" test "$out" = "reserved 16 target 16"
out=$(poke pool-reserve 0)
expect "a reservation of 0 is refused ($out)" grep -q "^error -22 " <<<"$out"
for i in $(seq 20); do poke pool-reserve 4294967295 >/dev/null; done
expect "netnsd keeps answering" sh -c "$POKE $T/netnsd.sock status | grep -q ready=1"
expect "the reserved slots are built at once ($(built))" wait_for 20 built_is 16
expect "never more than the max built" at_most_max 3
expect "nothing failed building them" sh -c "! grep -E 'Slot [0-9]+:|Pool stops' $T/netnsd.log"
# a reservation lasts the idle time, at least 10 s; then idle 1 s, looked at every 250 ms
expect "unclaimed, it lapses and the slots go: back to 1 ($(built))" wait_for 30 built_is 1
expect "netnsd logged the lapse" grep -q "reservation of 16 creates lapsed unclaimed" "$T/netnsd.log"

# ---- a real fork of 12 with one spare slot ----
id=$(create web wait) || fail "create failed"
expect "the parent answers" wait_for 30 sh -c "curl -fsS --max-time 5 $(sb_url "$id") | grep -q Hello"
out=$(call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Snapshot s f1)
log "Snapshot: $out"
expect "the parent answers again" wait_for 30 sh -c "curl -fsS --max-time 5 $(sb_url "$id") | grep -q Hello"
out=$(warrenctl fork f1 12 2>"$T/bar") || fail "fork f1 12: $out $(cat "$T/bar")"
ids=$(ids_in "$out")
expect_count "fork f1 12 gave twelve distinct children" 12 "$(grep -vx "$id" <<<"$ids" | sort -u)"
expect "the supervisor announced the 12 creates before the image was opened" \
	grep -q "Pool: 12 creates announced" "$T/netnsd.log"
for c in $ids; do
	expect "child $c answers" wait_for 30 sh -c "curl -fsS --max-time 5 $(sb_url "$c") | grep -q Hello"
done
addrs=$(for c in $ids; do sbprop "$c" Address; done | sort -u | wc -l)
expect "each child has its own slot and address" test "$addrs" = 12
expect "still never more than the max built ($(built))" at_most_max 2
expect "netnsd logged no slot failure" sh -c "! grep -E 'Slot [0-9]+:|Pool stops' $T/netnsd.log"
# a single child announces nothing: a spare slot takes it
n=$(grep -c 'creates announced' "$T/netnsd.log")
out=$(warrenctl fork f1 1 2>&1) || fail "fork f1 1: $out"
c=$(ids_in "$out")
expect "the single child answers" wait_for 30 sh -c "curl -fsS --max-time 5 $(sb_url "$c") | grep -q Hello"
expect "a fork of one sent no reservation" test "$(grep -c 'creates announced' "$T/netnsd.log")" = "$n"
