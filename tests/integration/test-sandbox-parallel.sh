#!/bin/bash
# Creates run side by side: four at once all answer through the gateway.
source "$(dirname "$0")/lib.sh"
POOL=6 warren_start
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
