#!/bin/bash
# Snapshots on gVisor: Snapshot(tag) writes a sealed image and the parent goes on; ForkTag
# starts children side by side from the one image, each answering under its own id with the
# parent's state; a corrupt or truncated image is refused by name; RemoveTag; a tag name
# that exists is refused before the sandbox is touched.
source "$(dirname "$0")/lib.sh"
warren_start
id=$(create app wait)
# state inside the sandbox that the children must carry: a file in its memory-backed overlay
warrenctl exec "$id" -- /bin/sh -c 'echo parent-state > /tmp/marker' || fail "exec"
out=$(call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Snapshot s t1)
log "Snapshot: $out"
expect "image sealed with a header" test -f "$T/images/t1/warren-image"
expect "no temporary left" sh -c "! ls -a $T/images | grep -q '^.tmp'"
expect "the parent answers again" wait_for 30 sh -c "curl -fsS --max-time 5 $(sb_url "$id") | grep -q heap_mib"
expect "the parent is running" wait_for 10 sh -c "[ \"\$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox State)\" = 's \"running\"' ]"
log "parent pause: $(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox Timings)"
expect "the parent kept its state" test "$(warrenctl exec "$id" -- /bin/cat /tmp/marker)" = parent-state
tags=$(mgr ListTags)
expect "ListTags shows t1 from $id ($tags)" grep -q "\"t1\" \"app\" .* \"$id\"" <<<"$tags"
out=$(call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Snapshot s t1 2>&1 || true)
expect "an existing tag is refused before the checkpoint ($out)" grep -qi "exists" <<<"$out"
expect "and the parent still runs" test "$(sbprop "$id" State)" = running
busctl --system monitor --match "type='signal',interface='org.warren.Warren1.Manager',member='Progress'" >"$T/progress" 2>&1 &
mon=$!
sleep 0.3
out=$(warrenctl fork t1 3 2>"$T/bar") || fail "fork t1 3: $out $(cat "$T/bar")"
ids=$(ids_in "$out")
log "children: $(echo $ids)"
sleep 0.3
kill $mon
expect "fork reported progress signals" grep -q '"children routed"' "$T/progress"
expect "warrenctl showed the progress (plain lines: stderr is no terminal)" grep -Eq "children routed 3/3|3/3 children routed" "$T/bar"
expect_count "fork t1 3 printed three children and nothing else" 3 "$out"
expect_count "three distinct children, none of them the parent" 3 "$(grep -vx "$id" <<<"$ids" | sort -u)"
for c in $ids; do
	expect "child $c answers under its own id" wait_for 30 sh -c "curl -fsS --max-time 5 $(sb_url "$c") | grep -q heap_mib"
	expect "child $c carries the parent's state" test "$(warrenctl exec "$c" -- /bin/cat /tmp/marker)" = parent-state
done
addrs=$(for c in $ids; do sbprop "$c" Address; done | sort -u | wc -l)
expect "each child has its own slot and address" test "$addrs" = 3
# a corrupt image is refused by name, nothing half-restored
cp -a "$T/images/t1" "$T/images/t2"
sed -i 's/^parent=.*/parent=/' "$T/images/t2/warren-image"
f=$(ls "$T/images/t2" | grep -v warren-image | head -1)
truncate -s -1 "$T/images/t2/$f"
out=$(warrenctl fork t2 1 2>&1 || true)
expect "a truncated image is refused ($out)" grep -qi "corrupt or truncated" <<<"$out"
expect "nothing was started from it" test "$(warrenctl list | grep -c running)" = 4
out=$(warrenctl fork nope 1 2>&1 || true)
expect "an unknown tag is refused by name ($out)" grep -q "no image nope" <<<"$out"
expect "snapshotd is still up" helpers_up
warrenctl rmtag t2
expect "RemoveTag removes it" test ! -e "$T/images/t2"
# BranchSandbox: snapshot + fork while the parent goes on
out=$(mgr BranchSandbox ssu "$id" b1 2)
log "branch: $out"
ids=$(ids_in "$out")
expect "BranchSandbox answers an array of two ($out)" grep -q '^as 2 ' <<<"$out"
expect_count "two distinct children, none of them the parent" 2 "$(grep -vx "$id" <<<"$ids" | sort -u)"
for c in $ids; do
	expect "branch child $c answers" wait_for 30 sh -c "curl -fsS --max-time 5 http://127.0.0.1:$GW_PORT/s/$c/ | grep -q heap_mib"
	expect "branch child $c carries the parent's state" test "$(warrenctl exec "$c" -- /bin/cat /tmp/marker)" = parent-state
done
expect "the branched parent answers" wait_for 30 sh -c "curl -fsS --max-time 5 $(sb_url "$id") | grep -q heap_mib"
