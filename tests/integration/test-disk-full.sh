#!/bin/bash
# Disk full: the image store is a small loop-mounted ext4 file system. A snapshot that
# cannot fit is refused before the sandbox is touched (SnapshotFailed naming the free space and
# what it needs), the sandbox keeps running (the same runtime, answering), no partial image
# remains; after space is freed the next snapshot of the same sandbox works (the positive
# control), and so does one of a small sandbox while the big one is refused.
source "$(dirname "$0")/lib.sh"
STORE_MB=96
# the store, mounted before snapshotd opens it
truncate -s ${STORE_MB}M "$T/store.img"
mkfs.ext4 -q -F "$T/store.img"
install -d "$T/images"
mount -o loop "$T/store.img" "$T/images"
at_exit "umount -l '$T/images' 2>/dev/null"
chown warren-snapshotd:warren-snapshotd "$T/images"
chmod 0700 "$T/images"
rmdir "$T/images/lost+found" 2>/dev/null || true
SNAPSHOTD_OPTS="--cgroup-parent $CGROUP_PARENT" warren_start

snap() { call "/org/warren/Warren1/sandbox/$1" org.warren.Warren1.Sandbox Snapshot s "$2" 2>&1; }
runtime_pid() { sed -n 's/^pid=//p' "$T/netnsd/sandboxes/$1"; }
no_partial() { ! ls -a "$T/images" | grep -q '^\.tmp\.'; }

# 1. an app sandbox (~80 MiB of memory) does not fit in the 96 MiB store at all
big=$(create app wait)
pid=$(runtime_pid "$big")
set +e
out=$(snap "$big" big1)
set -e
log "snapshot of the big sandbox: $out"
expect "refused" grep -q "^Call failed: Snapshot big1: " <<<"$out"
expect "the error names the free space and the need" grep -q "image store has .* MiB free; this snapshot needs about" <<<"$out"
expect "the sandbox keeps running" has_state "$big" running
expect "the same runtime" test "$(runtime_pid "$big")" = "$pid"
expect "it answers" sh -c "curl -fsS --max-time 20 $(sb_url "$big") >/dev/null"
expect "no partial image remains" no_partial

# 2. a small sandbox fits (positive control), then the store is filled and it does not
small=$(create web wait)
expect "a small sandbox's snapshot fits" sh -c "busctl --system call org.warren.Warren1 /org/warren/Warren1/sandbox/$small org.warren.Warren1.Sandbox Snapshot s small1 >/dev/null"
expect "the small sandbox answers after it" wait_for 20 sh -c "curl -fsS --max-time 5 $(sb_url "$small") | grep -q Hello"
avail=$(df -m --output=avail "$T/images" | tail -1 | tr -d ' ')
fallocate -l "$(( (avail - 8) ))M" "$T/images/filler"
log "store filled: $(df -m --output=avail "$T/images" | tail -1 | tr -d ' ') MiB free"
pid=$(runtime_pid "$small")
set +e
out=$(snap "$small" small2)
set -e
log "snapshot in a full store: $out"
expect "full store: refused, saying why" grep -q "image store has .* MiB free" <<<"$out"
expect "full store: the sandbox keeps running, same runtime" sh -c "[ '$(runtime_pid "$small")' = '$pid' ]"
expect "full store: it answers" sh -c "curl -fsS --max-time 20 $(sb_url "$small") | grep -q Hello"
expect "full store: no partial image remains" no_partial
expect "full store: no tag small2" sh -c "! ls '$T/images' | grep -qx small2"

# 3. space freed: the next snapshot works
rm -f "$T/images/filler"
expect "space freed: the next snapshot works" sh -c "busctl --system call org.warren.Warren1 /org/warren/Warren1/sandbox/$small org.warren.Warren1.Sandbox Snapshot s small2 >/dev/null"
expect "its tag is sealed" sh -c "ls '$T/images' | grep -qx small2"
expect "the sandbox answers after it" wait_for 20 sh -c "curl -fsS --max-time 5 $(sb_url "$small") | grep -q Hello"
expect "the big sandbox still runs" has_state "$big" running
