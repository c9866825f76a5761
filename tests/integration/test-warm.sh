#!/bin/bash
# Warm templates: the first create of a warm template starts cold and Warren takes the
# template's image (tag warm-<name>) from a sandbox of its own; later creates restore it. With
# standby=1 one more is kept restored ahead, invisible, and a create takes it at once.
# Compression is forced on (the threshold above any disk), so "warm images are never compressed"
# is tested against a tag image of the same run that is.
SNAPSHOTD_OPTS="--compress-below 1000000"
source "$(dirname "$0")/lib.sh"
warren_start
mgr AddTemplate ssasqta{sv} -- warmweb /var/lib/warren/templates/web/rootfs 7 /bin/busybox httpd -f -p 8080 -h /www 8080 67108864 1 warm b true
a=$(create warmweb wait)
expect "the first create starts cold" test -z "$(sbprop "$a" Image)"
expect "the warm image appears" wait_for 60 sh -c "busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListTags | grep -q warm-warmweb"
expect "the warming sandbox is gone" wait_for 20 sh -c "[ \$(warrenctl list | grep -c warmweb) = 1 ]"
b=$(create warmweb wait)
expect "the next create restores the warm image" test "$(sbprop "$b" Image)" = warm-warmweb
expect "and answers" sh -c "curl -fsS --max-time 10 $(sb_url "$b") | grep -q Hello"
log "warm create timings: $(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$b org.warren.Warren1.Sandbox Timings)"
# a tag image of the same template, same snapshotd: compressed (the positive control)
call "/org/warren/Warren1/sandbox/$a" org.warren.Warren1.Sandbox Snapshot s wz1 >/dev/null
tags=$(mgr ListTags)
expect "with compression forced on, a tag image is compressed ($tags)" grep -q '"wz1" "warmweb" [0-9]* true' <<<"$tags"
expect "its header says zstd and its files are .zst" sh -c "grep -q '^compression=zstd' $T/images/wz1/warren-image && ls $T/images/wz1 | grep -q '\.zst$'"
expect "warm images are not compressed" grep -q '"warm-warmweb" "warmweb" [0-9]* false' <<<"$tags"
expect "its header says none and no file is .zst" sh -c "grep -q '^compression=none' $T/images/warm-warmweb/warren-image && ! ls $T/images/warm-warmweb | grep -q '\.zst$'"
# the snapshotted sandbox is restored from wz1 in place: the tag can go once it runs again
expect "the snapshotted sandbox runs again" wait_for 30 sh -c "[ \"\$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$a org.warren.Warren1.Sandbox State)\" = 's \"running\"' ]"
expect "its tag is removed" wait_for 20 warrenctl rmtag wz1
warrenctl rmtag warm-warmweb
c=$(create warmweb wait)
expect "without its image a create is cold again" test -z "$(sbprop "$c" Image)"
expect "and the image is taken again" wait_for 60 sh -c "busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListTags | grep -q warm-warmweb"
expect "nor is the one taken again" wait_for 10 grep -q '^compression=none' "$T/images/warm-warmweb/warren-image"

# standby sandboxes: restored ahead from the warm image, invisible until a create takes one
# the pool has 6 slots; a warming sandbox listed here may be gone by its destroy
for s in $(warrenctl list | tail -n +2 | cut -d' ' -f1); do warrenctl destroy "$s" || true; done
mgr AddTemplate ssasqta{sv} -- sbweb /var/lib/warren/templates/web/rootfs 7 /bin/busybox httpd -f -p 8080 -h /www 8080 67108864 2 warm b true standby u 1
d=$(create sbweb wait)
expect "the warm image of sbweb appears" wait_for 60 sh -c "busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListTags | grep -q warm-sbweb"
expect "its warming sandbox is gone" wait_for 20 sh -c "[ \$(warrenctl list | grep -c sbweb) = 1 ]"
e=$(create sbweb wait)
expect "a create restores it (and a standby is restored behind it)" test "$(sbprop "$e" Image)" = warm-sbweb
expect "the standby is not listed" wait_for 20 sh -c "[ \$(warrenctl list | grep -c sbweb) = 2 ]"
expect "nor on the bus" test "$(busctl --system tree org.warren.Warren1 | grep -c sandbox/)" = "$(warrenctl list | tail -n +2 | wc -l)"
sleep 1 # the standby's restore
t0=$(date +%s%N)
f=$(create sbweb)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect "the next create takes the standby and answers at once" sh -c "curl -fsS --max-time 10 $(sb_url "$f") | grep -q Hello"
log "create from a standby: $ms ms to the reply (one restore is ~200 ms)"
expect "it is running already" test "$(sbprop "$f" State)" = running
expect "it was taken from the standby sandboxes (supervisor log)" grep -q "Sandbox $f: taken from the standby sandboxes of sbweb" "$T/supervisor.log"
expect "restored from the warm image" test "$(sbprop "$f" Image)" = warm-sbweb
expect "it is listed now" wait_for 5 sh -c "warrenctl list | grep -q $f"
expect "another standby is restored behind it" wait_for 30 sh -c "[ \$(ls $T/state/sandboxes | wc -l) -gt \$(warrenctl list | tail -n +2 | wc -l) ]"

# RemoveTemplate: never a built-in one, not while a sandbox of it exists; then it goes with its
# standby sandboxes and its warm image
set +e
err=$(mgr RemoveTemplate s web 2>&1)
expect "a built-in template cannot be removed ($err)" grep -q "built in" <<<"$err"
err=$(mgr RemoveTemplate s sbweb 2>&1)
expect "a template in use cannot be removed ($err)" grep -q "uses template sbweb" <<<"$err"
set -e
for s in $(warrenctl list | awk '$2 == "sbweb" {print $1}'); do warrenctl destroy "$s"; done
expect "only the standby is left" wait_for 10 sh -c "[ \$(ls $T/state/sandboxes | wc -l) = \$(( \$(warrenctl list | tail -n +2 | wc -l) + 1 )) ]"
expect "RemoveTemplate removes it" wait_for 20 warrenctl rmtemplate sbweb
expect "it is not listed any more" sh -c "! warrenctl templates | grep -q sbweb"
expect "its state file is gone" test ! -e "$T/state/templates/sbweb"
expect "its standby sandbox is gone" wait_for 10 sh -c "[ \$(ls $T/state/sandboxes | wc -l) = \$(warrenctl list | tail -n +2 | wc -l) ]"
expect "its warm image is gone" wait_for 10 sh -c "! warrenctl tags | grep -q warm-sbweb"
# (the D-Bus call itself: lib.sh's create() fails the whole test on an error, from any subshell)
set +e
err=$(mgr CreateSandbox sa{sv} sbweb 0 2>&1)
set -e
expect "a create of it now says there is no such template ($err)" grep -q "NoSuchTemplate\|No template\|no template" <<<"$err"
