#!/bin/bash
# Reclaim of a frozen sandbox into zswap: set-up (swap file + zswap) is idempotent and undone
# exactly; a frozen app sandbox holds much less afterwards, the pages it gave up are in zswap's
# compressed pool, not written to the swap file (the kernel's zswpout/pswpout counters), and
# its heap is intact after thaw; a running sandbox's memory is never touched (refused); after
# UndoReclaim the machine's swap and zswap are as before.
source "$(dirname "$0")/lib.sh"
ZS=/sys/module/zswap/parameters
# swap files cannot live on tmpfs, which /tmp may be: the swap goes under /var/lib/warren
RD=/var/lib/warren/test-reclaim.$$
before_swaps=$(tail -n +2 /proc/swaps | awk '{print $1}' | sort | tr '\n' ' ')
before_zswap="$(cat $ZS/enabled) $(cat $ZS/compressor) $(cat $ZS/max_pool_percent)"
before_swaptotal=$(awk '$1 == "SwapTotal:" {print $2}' /proc/meminfo)
vmstat() { awk -v k="$1" '$1 == k {print $2}' /proc/vmstat; }
restore() {
	set +e
	busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager UndoReclaim >/dev/null 2>&1
	swapoff "$RD/swapfile" 2>/dev/null
	rm -rf "$RD"
	read -r e c p <<<"$before_zswap"
	echo "$e" >$ZS/enabled; echo "$c" >$ZS/compressor; echo "$p" >$ZS/max_pool_percent
}
trap 'rc=$?; restore; cleanup $rc' EXIT
start_bus
start_netnsd
# snapshotd in a mount namespace of its own with its reclaim dir bound onto itself, as
# warren-launch and systemd run it (ReadWritePaths=): the kernel then names an active swap file
# by its path in that namespace, which a restarted snapshotd (a new namespace) cannot see
mkdir -p "$RD"
start_snapshotd_private() {
	rm -f "$T/snapshotd.sock"
	daemon snapshotd unshare --mount --propagation private -- sh -c \
		'mount --bind "$1" "$1" && shift && exec "$@"' sh "$RD" \
		"$LIBEXEC/warren-snapshotd" --socket "$T/snapshotd.sock" --peer-users warren \
		--store "$T/images" --reclaim-dir "$RD" --cgroup-parent "$CGROUP_PARENT"
	wait_for 10 test -S "$T/snapshotd.sock"
}
start_snapshotd_private
start_gateway
start_supervisor
out=$(mgr SetupReclaim tbsu $((256 << 20)) true "" 25)
log "SetupReclaim: $out"
expect "swap file active" grep -q "$RD/swapfile" /proc/swaps
expect "zswap enabled" test "$(cat $ZS/enabled)" = Y
expect "max_pool_percent set" test "$(cat $ZS/max_pool_percent)" = 25
out2=$(mgr SetupReclaim tbsu $((256 << 20)) true "" 25)
expect "set-up again is a no-op" test "$(grep -c "$RD/swapfile" /proc/swaps)" = 1
swaps_now=$(tail -n +2 /proc/swaps | wc -l)
kill -9 "$PID_snapshotd"
wait "$PID_snapshotd" 2>/dev/null || true
start_snapshotd_private
expect "snapshotd reconnected" wait_for 10 helpers_up
expect "set-up after a snapshotd restart keeps the active swap file ($(mgr SetupReclaim tbsu $((256 << 20)) true "" 25 2>&1))" \
	mgr SetupReclaim tbsu $((256 << 20)) true "" 25
expect "no second swap area" test "$(tail -n +2 /proc/swaps | wc -l)" = "$swaps_now"
expect "SwapBytes property" test "$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager SwapBytes | cut -d" " -f2)" -gt $((250 << 20))
expect "warrenctl status shows zswap" sh -c "warrenctl status | grep -q 'zswap on'"

id=$(create app wait)
# snapshotd reclaims as its user with CAP_SYS_ADMIN alone (no CAP_DAC_OVERRIDE): the sandbox's
# reclaim knob was handed to it by the spawner, zswap's parameters were opened before its drop
expect "snapshotd's CapEff is CAP_SYS_ADMIN alone ($(awk '/^CapEff:/ {print $2}' /proc/$PID_snapshotd/status))" \
	test "$(awk '/^CapEff:/ {print $2}' /proc/$PID_snapshotd/status)" = 0000000000200000
knob=/sys/fs/cgroup/memory$CGROUP_PARENT/$id/memory.force_empty
[ -e "$knob" ] || knob=/sys/fs/cgroup$CGROUP_PARENT/$id/memory.reclaim
expect "the sandbox's $(basename "$knob") is warren-snapshotd's" test "$(stat -c %U "$knob")" = warren-snapshotd
curl -fsS --max-time 10 "$(sb_url "$id")touch" >/dev/null
out=$($POKE "$T/snapshotd.sock" reclaim "$id" 2>&1 || true)
expect "reclaim of a running sandbox is refused ($out)" grep -q "not frozen" <<<"$out"
held=$(sbprop "$id" MemoryCurrent)
# pages stored in zswap (zswpout), pages written to a swap device (pswpout), pages zswap wrote
# back to the device (zswpwb): system-wide, and only this test has swap while it holds the lock
zout0=$(vmstat zswpout) pout0=$(vmstat pswpout) zwb0=$(vmstat zswpwb)
warrenctl freeze "$id"
expect "reclaimed after the freeze" wait_for 15 sh -c "[ \$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox ReclaimedBytes | cut -d' ' -f2) -gt 0 ]"
after=$(sbprop "$id" MemoryCurrent)
reclaimed=$(sbprop "$id" ReclaimedBytes)
zout=$(($(vmstat zswpout) - zout0)) pout=$(($(vmstat pswpout) - pout0)) zwb=$(($(vmstat zswpwb) - zwb0))
zswapped=$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ZswappedBytes | cut -d' ' -f2)
log "reclaim: $((reclaimed >> 20)) MiB reclaimed; $((zout * 4 >> 10)) MiB stored in zswap, $((pout * 4 >> 10)) MiB written to the swap file, $((zwb * 4 >> 10)) MiB written back; ZswappedBytes $((zswapped >> 20)) MiB"
# the app's 64 MiB heap is most of what a frozen app sandbox gives up
expect "the reclaimed pages went into zswap (at least 32 MiB stored)" test $((zout * 4096)) -ge $((32 << 20))
expect "zswap holds them now (ZswappedBytes >= 32 MiB)" test "$zswapped" -ge $((32 << 20))
expect "not to the swap file on disk (written $pout pages, written back $zwb, vs $zout in zswap)" test $(((pout + zwb) * 20)) -le "$zout"
log "held $((held >> 20)) MiB before, $((after >> 20)) MiB after reclaim; zswap pool $(($(grep '^Zswap:' /proc/meminfo | awk '{print $2}') / 1024)) MiB"
expect "holds less than a third after reclaim" test $((after * 3)) -lt "$held"
out=$(curl -fsS --max-time 30 "$(sb_url "$id")touch")
log "touch after thaw: $out"
expect "heap intact after thaw (sum of page markers)" grep -q '"sum": 2088960' <<<"$out"
expect "running again" test "$(sbprop "$id" State)" = running
out=$(mgr UndoReclaim)
expect "undo removes the swap file" sh -c "! grep -q $RD/swapfile /proc/swaps && ! test -e $RD/swapfile"
expect "undo restores zswap settings" test "$(cat $ZS/enabled) $(cat $ZS/compressor) $(cat $ZS/max_pool_percent)" = "$before_zswap"
expect "the machine's swaps are as before" test "$(tail -n +2 /proc/swaps | awk '{print $1}' | sort | tr '\n' ' ')" = "$before_swaps"
expect "and its swap total ($before_swaptotal kB)" test "$(awk '$1 == "SwapTotal:" {print $2}' /proc/meminfo)" = "$before_swaptotal"
