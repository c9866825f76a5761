#!/bin/bash
# Creates run side by side: four at once all answer through the gateway; and no runsc process
# holds anything of netnsd's but stdio (a fork of 100 once failed on an fd inherited through
# the spawner, and under socket activation that was netnsd's listening socket).
source "$(dirname "$0")/lib.sh"
exec 7>>"$T/inherited-by-netnsd" # as a launcher's stray fd would be
POOL=6 warren_start
exec 7>&-
wait_for 10 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager PoolFree | grep -qx 'u 6'"
t0=$(date +%s%N)
jobs=()
for i in 1 2 3 4; do
	(id=$(create web wait) && curl -fsS --max-time 30 "$(sb_url "$id")" >"$T/page.$i") &
	jobs+=($!)
done
for j in "${jobs[@]}"; do wait "$j" || true; done
t1=$(date +%s%N)
log "4 creates at once answered in $(((t1 - t0) / 1000000)) ms"
for i in 1 2 3 4; do
	expect "sandbox $i answered" grep -q "Hello" "$T/page.$i"
done
expect "four running" test "$(warrenctl list | grep -c running)" = 4
leaks=0
for p in $(pgrep -f "^runsc-(sandbox|gofer) --root=$T/netnsd/runsc"); do
	for f in /proc/$p/fd/*; do
		l=$(readlink "$f" || true)
		[[ $l == "$T/inherited-by-netnsd" || $l == net:* ]] && leaks=$((leaks + 1))
	done
done
expect "no runsc process holds netnsd's fds or a namespace fd ($leaks found)" test "$leaks" = 0
