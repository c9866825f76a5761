#!/bin/bash
# Console logs: a sandbox's program prints to stdout and stderr; `warrenctl logs` shows both,
# `logs -f` follows lines printed later, a snapshot keeps them (the parent's log after its
# restore, and a fork child starts with the parent's log and goes on with its own), a guest
# that floods its stdout stays within the ring (the drop is counted in the log) while another
# sandbox keeps answering, and only the sandbox's creator and root may read them: another
# member of group warren is refused by the supervisor and `nobody` by the D-Bus policy (the
# creator reading its own is the positive control). The log of a program that ended outlives
# its runtime.
source "$(dirname "$0")/lib.sh"
RING=65536
warren_start --log-size "$RING"
WEB=/var/lib/warren/templates/web/rootfs
HTTPD='/bin/busybox httpd -f -p 8080 -h /www'
# prints on stdout and stderr, then a tick every 0.3 s, and serves
mgr AddTemplate ssasqta{sv} -- talker "$WEB" 4 /bin/busybox sh -c \
	"echo hello-stdout; echo hello-stderr >&2; (i=0; while :; do i=\$((i+1)); echo tick-\$i; sleep 0.3; done) & exec $HTTPD" \
	8080 67108864 0
# writes 64 MiB to its stdout as fast as it can, then serves
mgr AddTemplate ssasqta{sv} -- flood "$WEB" 4 /bin/busybox sh -c \
	"(/bin/busybox yes flood-flood-flood-flood-flood-flood-flood | /bin/busybox head -c 67108864; echo flood-done) & exec $HTTPD" \
	8080 67108864 0

a=$(create talker wait)
expect "stdout is in the log" wait_for 10 sh -c "warrenctl logs $a | grep -qx hello-stdout"
expect "stderr is in the log" sh -c "warrenctl logs $a | grep -qx hello-stderr"
expect "ticks come" wait_for 10 sh -c "warrenctl logs $a | grep -q '^tick-3$'"

# -f: lines printed after the call come through the same pipe
last=$(warrenctl logs "$a" | grep -o '^tick-[0-9]*' | tail -1 | cut -d- -f2)
warrenctl logs -f "$a" >"$T/follow" &
follower=$!
expect "logs -f shows what was there" wait_for 10 grep -qx hello-stdout "$T/follow"
expect "logs -f follows new lines (after tick-$last)" wait_for 10 grep -qx "tick-$((last + 3))" "$T/follow"
expect "logs -f is still running" kill -0 "$follower"
kill "$follower"; wait "$follower" 2>/dev/null || true

# snapshot: the parent's log survives its restore; a fork child starts with it
call "/org/warren/Warren1/sandbox/$a" org.warren.Warren1.Sandbox Snapshot s lg >/dev/null ||
	fail "snapshot"
expect "the image carries the log" test -s "$T/images/lg/console.log"
expect "the parent answers again" wait_for 30 curl -fsS --max-time 5 -o /dev/null "$(sb_url "$a")"
expect "the parent's log kept its first lines" sh -c "warrenctl logs $a | grep -qx hello-stdout"
expect "and says it was restored" sh -c "warrenctl logs $a | grep -qx '\[warren: restored from a snapshot\]'"
out=$(warrenctl fork lg 1 2>/dev/null) || fail "fork: $out"
child=$(ids_in "$out")
expect_count "one child" 1 "$child"
expect "the child answers" wait_for 30 curl -fsS --max-time 5 -o /dev/null "$(sb_url "$child")"
expect "the child's log starts with the parent's" sh -c "warrenctl logs $child | grep -qx hello-stdout"
# the child's own output: ticks after the restore marker
expect "the child's log goes on with its own output" wait_for 10 sh -c \
	"warrenctl logs $child | sed -n '/restored from a snapshot/,\$p' | grep -q '^tick-'"

# ownership: root created these; warren (in group warren, may call methods) is not the owner
out=$(setpriv --reuid=warren --regid=warren --init-groups warrenctl logs "$a" 2>&1 || true)
expect "another member of group warren is refused ($out)" grep -q "creator" <<<"$out"
grep -q hello <<<"$out" && fail "another user read the log"
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups warrenctl logs "$a" 2>&1 || true)
expect "nobody is refused by the bus ($out)" grep -qi "denied\|access\|rejected" <<<"$out"
grep -q hello <<<"$out" && fail "nobody read the log"
# positive control: warren's own sandbox is warren's to read
out=$(setpriv --reuid=warren --regid=warren --init-groups busctl --system call org.warren.Warren1 \
	/org/warren/Warren1 org.warren.Warren1.Manager CreateSandbox sa{sv} talker 1 wait b true)
w=$(awk '{print $2}' <<<"$out" | tr -d '"')
[[ $w =~ ^[0-9a-f]{12}$ ]] || fail "warren could not create a sandbox: $out"
expect "its creator reads its log" wait_for 10 sh -c \
	"setpriv --reuid=warren --regid=warren --init-groups warrenctl logs $w | grep -qx hello-stdout"
out=$(warrenctl logs "$w") || fail "root reads warren's sandbox's log"
expect "root reads any" grep -qx hello-stdout <<<"$out"

# a program that ends: its log outlives its runtime
mgr AddTemplate ssasqta{sv} -- crasher "$WEB" 4 /bin/busybox sh -c \
	"echo dying-words; echo last-gasp >&2; sleep 1; exit 3" 8080 67108864 0
x=$(create crasher)
expect "the crasher fails" wait_for 30 has_state "$x" failed
expect "its log is still there after its runtime is gone" wait_for 10 sh -c \
	"warrenctl logs $x | grep -qx dying-words && warrenctl logs $x | grep -qx last-gasp"
out=$(setpriv --reuid=warren --regid=warren --init-groups warrenctl logs "$x" 2>&1 || true)
expect "and still its owner's only ($out)" grep -q "creator" <<<"$out"

# flood: 64 MiB of output; the log stays within the ring and says what it dropped
f=$(create flood wait)
expect "the flood ran to its end" wait_for 120 sh -c "warrenctl logs $f | grep -q flood-done"
size=$(warrenctl logs "$f" | wc -c)
expect "the flood's log is within the ring ($size <= $RING bytes)" test "$size" -le "$RING"
expect "and not empty ($size)" test "$size" -gt $((RING / 2))
expect "the drop is counted in the log" sh -c "warrenctl logs $f | grep -q 'bytes of output not kept'"
for i in $(seq 10); do
	curl -fsS --max-time 10 -o /dev/null "$(sb_url "$a")" || fail "request $i to $a during the flood"
done
log "ok: another sandbox answered 10 requests beside the flood"
spawner=$(pgrep -P "$PID_netnsd" | head -1)
rss=$(awk '/VmRSS/ {print $2}' "/proc/$spawner/status")
expect "the spawner stayed small (${rss} KiB RSS)" test "$rss" -lt 65536

log "PASS"
