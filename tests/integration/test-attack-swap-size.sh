#!/bin/bash
# A compromised supervisor (a protobuf peer as uid warren) asks snapshotd for a swap file of the
# largest size it takes (4x RAM): 0.2.0 wrote it whatever the free space, filling the disk that
# also holds the image store (and blocking snapshotd's loop while it wrote). What must hold: a
# swap file larger than half the free space is refused before a byte is written, and snapshotd
# stays up. Positive control: a size within the bound passes the check and is written (on this
# tmpfs swapon itself then fails, which is the kernel's refusal, not Warren's bound).
# The reclaim directory is a 256 MiB tmpfs of the test's own, so a broken build fills only that.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/reclaim"
mount -t tmpfs -o size=256M,mode=0700 tmpfs "$T/reclaim"
at_exit "umount -l '$T/reclaim'"
chown warren-snapshotd:warren-snapshotd "$T/reclaim"
SNAPSHOTD_OPTS="--reclaim-dir $T/reclaim" start_snapshotd
pw() { setpriv --reuid=warren --regid=warren --clear-groups "$POKE" "$T/snapshotd.sock" "$@" 2>&1 || true; }
used_max() { # used_max CMD...: run CMD, print its output and the most KiB the tmpfs held meanwhile
	local f=$T/used max=0 u
	: >"$f"
	(while :; do df -k --output=used "$T/reclaim" | tail -1 >>"$f"; sleep 0.01; done) &
	local w=$!
	"$@"
	kill "$w"; wait "$w" 2>/dev/null
	for u in $(cat "$f"); do [ "$u" -gt "$max" ] && max=$u; done
	echo "max-used-kib $max"
}
mem=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
out=$(used_max pw snap-swap $((mem * 1024 * 4)))
log "a swap file of 4x RAM on a 256 MiB filesystem: $out"
expect "it is refused for the free space" grep -q "^error .*more than half the free space" <<<"$out"
expect "before anything was written" grep -q "^max-used-kib [0-9]\{1,3\}$" <<<"$out"
expect "snapshotd is up" sh -c "kill -0 $PID_snapshotd && setpriv --reuid=warren --regid=warren --clear-groups '$POKE' '$T/snapshotd.sock' status | grep -q ready=1"
out=$(used_max pw snap-swap $((64 << 20)))
log "a swap file of 64 MiB there (positive control): $out"
expect "it passes the bound" bash -c "! grep -q 'free space' <<<'$out'"
expect "and was written whole: what refused it is swapon on a tmpfs" \
	grep -q "^error .*swapfile: Invalid argument" <<<"$out"
expect "nothing is left behind" test -z "$(ls -A "$T/reclaim")"
log "PASS"
