#!/bin/bash
# zstd for tag images: snapshotd measures its disk once (cached, --measure-disk re-measures) and
# compresses tag images only when the disk is slower than --compress-below; warm images never
# (the supervisor commits them with compression NONE; snapshotd does not read the tag's name).
# Here the threshold is set above any disk so the compressed path runs: the tag is smaller, says
# it is compressed, its files are .zst, children restore from it (decompressed once into the
# cache), and RemoveTag drops the cache; snapshotd killed (SIGKILL, at a fault point) while it
# writes an image leaves it absent, the VM running, and the next snapshot works. A microVM's RAM
# is what pays off (gVisor's statefile is already compressed inside).
SNAPSHOTD_OPTS="--compress-below 1000000"
source "$(dirname "$0")/lib.sh"
out=$("$LIBEXEC/warren-snapshotd" --store "$T/measure" --measure-disk)
expect "--measure-disk reports the store disk ($out)" grep -q "MB/s sequential writes" <<<"$out"
expect "and caches it per device" test -s "$T/measure/.disk-speed"
warren_start
# the policy is the request's (CommitImage.compression, set by the supervisor), never the tag's
# name: a warm- tag committed AUTO is compressed here (the threshold is above any disk), a plain
# tag committed NONE is not
out=$("$POKE" "$T/snapshotd.sock" snap-take warm-byname web gvisor auto || true)
expect "a warm- tag committed AUTO is sealed ($out)" grep -q '^ok warm-byname ' <<<"$out"
expect "and compressed: the name is not read" grep -q '^compression=zstd' "$T/images/warm-byname/warren-image"
out=$("$POKE" "$T/snapshotd.sock" snap-take byrequest web gvisor none || true)
expect "a plain tag committed NONE is sealed ($out)" grep -q '^ok byrequest ' <<<"$out"
expect "and not compressed" grep -q '^compression=none' "$T/images/byrequest/warren-image"
for t in warm-byname byrequest; do
	out=$("$POKE" "$T/snapshotd.sock" snap-remove "$t" || true)
	expect "the poked image $t is removed ($out)" test "$out" = ok
done
id=$(mgr CreateSandbox sa{sv} web 3 wait b true backend s microvm start_timeout_ms u 60000 | awk '{print $2}' | tr -d '"')
expect "a microVM runs" test "$(sbprop "$id" State)" = running
warrenctl exec "$id" -- /bin/busybox sh -c 'echo before-zstd > /tmp/marker' || fail "exec"
call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Snapshot s z1 >/dev/null
expect "the disk speed was measured once and cached" test -s "$T/images/.disk-speed"
expect "the header says zstd" grep -q '^compression=zstd' "$T/images/z1/warren-image"
expect "the RAM file is stored compressed" test -s "$T/images/z1/ram.zst" -a ! -e "$T/images/z1/ram"
raw=$(stat -c %s "$T/images/z1/ram.zst")
tags=$(mgr ListTags)
expect "ListTags marks it compressed ($tags)" grep -q '"z1" "web" [0-9]* true' <<<"$tags"
log "RAM: 128 MiB file, $(du -k "$T/images/z1/ram.zst" | cut -f1) KiB compressed"
kids=$(warrenctl fork z1 2)
expect "ForkTag of 2 gave two children ($(echo $kids))" test "$(wc -w <<<"$kids")" = 2
for c in $kids; do
	expect "child $c of the compressed tag answers" wait_for 60 sh -c "curl -fsS --max-time 5 $(sb_url "$c") | grep -q Warren"
	expect "child $c has the parent's state" test "$(warrenctl exec "$c" -- /bin/busybox cat /tmp/marker)" = before-zstd
done
expect "the image was decompressed once into the cache" test "$(ls "$VM_RAM_DIR-images" | grep -c '^z1\.')" = 1
expect "the stored image is untouched" test "$(stat -c %s "$T/images/z1/ram.zst")" = "$raw"
# a truncated compressed file is refused by name
cp -a "$T/images/z1" "$T/images/z2"
truncate -s -100 "$T/images/z2/ram.zst"
out=$(warrenctl fork z2 1 2>&1 || true)
expect "a truncated compressed image is refused ($out)" grep -qi "corrupt or truncated" <<<"$out"
# crash safety: snapshotd restarted with a fault point kills itself (SIGKILL) once part of the
# compressed RAM file is written, before the image is sealed and renamed; the test then knows the
# crash landed mid-write instead of hoping an outside kill -9 did
stop_pid "$PID_snapshotd"
expect "the supervisor sees snapshotd gone" wait_for 10 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager Helpers | grep -q '\"snapshotd\" false'"
WARREN_FAULT=image-write start_snapshotd
expect "snapshotd with the fault point is connected" wait_for 10 helpers_up
set +e
out=$(call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Snapshot s z3 2>&1)
rc=$?
wait "$PID_snapshotd"
st=$?
set -e
expect "the snapshot across the crash failed ($rc: $out)" test "$rc" != 0
expect "snapshotd died of SIGKILL (status $st)" test "$st" = 137
expect "at the image-write fault point" grep -q "fault point image-write reached" "$T/snapshotd.log"
partial=$(ls -d "$T"/images/.tmp.z3.* 2>/dev/null || true)
expect "the crash left a partial image under a temporary name ($partial)" test "$(wc -w <<<"$partial")" = 1
expect "part of it is written (a non-empty .zst)" sh -c "find '$partial' -name '*.zst' -size +0 | grep -q ."
expect "and it is not sealed (no header)" test ! -e "$partial/warren-image"
expect "no z3 under its own name" test ! -e "$T/images/z3"
start_snapshotd
expect "snapshotd is back (no fault point)" wait_for 10 helpers_up
expect "the temporary image was removed at start" sh -c "! ls -a $T/images | grep -q '^.tmp'"
tags=$(mgr ListTags)
expect "z3 is not listed ($tags)" test -z "$(grep -o '"z3"' <<<"$tags" || true)"
expect "the parent VM still runs" test "$(sbprop "$id" State)" = running
expect "and answers" sh -c "curl -fsS --max-time 10 $(sb_url "$id") | grep -q Warren"
warrenctl exec "$id" -- /bin/busybox sh -c 'echo after-crash > /tmp/marker' || fail "exec"
call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Snapshot s z4 >/dev/null
expect "the next snapshot is sealed, compressed" grep -q '^compression=zstd' "$T/images/z4/warren-image"
c4=$(warrenctl fork z4 1)
expect "and restores (one child)" test "$(wc -w <<<"$c4")" = 1
expect "its child answers" wait_for 60 sh -c "curl -fsS --max-time 5 $(sb_url "$c4") | grep -q Warren"
expect "with the state after the crash" test "$(warrenctl exec "$c4" -- /bin/busybox cat /tmp/marker)" = after-crash
kids="$kids $c4"
for c in $id $kids; do warrenctl destroy "$c"; done
warrenctl rmtag z1
warrenctl rmtag z2
warrenctl rmtag z4
expect "RemoveTag drops the decompressed copy" test -z "$(ls "$VM_RAM_DIR-images" 2>/dev/null | grep '^z1\.')"
log "all done"
