#!/bin/bash
# zstd for tag images: snapshotd measures its disk once (cached, --measure-disk re-measures) and
# compresses tag images only when the disk is slower than --compress-below; warm images never.
# Here the threshold is set above any disk so the compressed path runs: the tag is smaller, says
# it is compressed, its files are .zst, children restore from it (decompressed once into the
# cache), and RemoveTag drops the cache; snapshotd killed -9 mid-write leaves the image whole or
# absent. A microVM's RAM is what pays off (gVisor's statefile is
# already compressed inside).
SNAPSHOTD_OPTS="--compress-below 1000000"
source "$(dirname "$0")/lib.sh"
out=$("$LIBEXEC/warren-snapshotd" --store "$T/measure" --measure-disk)
expect "--measure-disk reports the store disk ($out)" grep -q "MB/s sequential writes" <<<"$out"
expect "and caches it per device" test -s "$T/measure/.disk-speed"
warren_start
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
# crash safety: snapshotd killed -9 while it compresses and seals an image
call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Snapshot s z3 >/dev/null 2>&1 &
snap=$!
if wait_for 30 sh -c "ls -d $T/images/.tmp.z3.*/ram.zst"; then
	kill -9 "$PID_snapshotd"
	log "snapshotd killed while it wrote $(ls -a $T/images | grep '^.tmp' | tr '\n' ' ')"
else
	log "the image was sealed before the kill could land; killing snapshotd anyway"
	kill -9 "$PID_snapshotd"
fi
wait "$PID_snapshotd" 2>/dev/null || true
wait "$snap" 2>/dev/null || true
start_snapshotd
expect "snapshotd is back" wait_for 10 helpers_up
expect "no temporary image is left" sh -c "! ls -a $T/images | grep -q '^.tmp'"
if [ -e "$T/images/z3" ]; then
	expect "z3 is whole: it restores" sh -c "c=\$(warrenctl fork z3 1) && warrenctl destroy \$c"
else
	log "z3 is absent"
fi
expect "the parent VM still runs" test "$(sbprop "$id" State)" = running
for c in $id $kids; do warrenctl destroy "$c"; done
warrenctl rmtag z1
warrenctl rmtag z2
warrenctl rmtag z3 2>/dev/null || true
expect "RemoveTag drops the decompressed copy" test -z "$(ls "$VM_RAM_DIR-images" 2>/dev/null | grep '^z1\.')"
log "all done"
