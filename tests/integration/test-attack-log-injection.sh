#!/bin/bash
# Log injection by a compromised supervisor: a protobuf peer as uid
# warren hands netnsd an image directory whose name holds a newline and a syslog priority
# prefix. The spawner refuses it and logs why, with the path; 0.2.0's logger wrote the path raw,
# so the name became a line of its own -- under systemd a journal entry of any priority, in
# the launcher's log files a line that reads as a daemon's. What must hold: every log line the
# daemons write is one line, with control characters escaped (\xNN), so the forged text appears
# only inside the refusal's own line. Positive control: the refusal is logged, path included.
source "$(dirname "$0")/lib.sh"

warren_start
poke() { IPC_POKE_USER=warren "$POKE" "$T/netnsd.sock" "$@" 2>&1 || true; }
TAG="FORGED$RANDOM$RANDOM"
EVIL="$T/evil
<0>warren-netnsd: $TAG"
install -d -o warren -g warren -m 0755 "$EVIL"
ROOTFS=/var/lib/warren/templates/web/rootfs
out=$(poke restore 0000000ee201 "$EVIL" "$ROOTFS" gvisor 8080 128)
log "restore from a directory named with a newline: $out"
grep -q '^error \|^dropped' <<<"$out" || fail "the restore was not refused: $out"
expect "no log line of netnsd's starts with the forged text" \
	bash -c "! grep -q '^<0>warren-netnsd: $TAG' '$T/netnsd.log'"
expect "the refusal is logged, with the path (positive control)" \
	grep -q "Restore of 0000000ee201 refused: .*$TAG" "$T/netnsd.log"
expect "the forged text is inside the refusal's line, its newline escaped" \
	grep -q "Restore of 0000000ee201 refused: .*evil\\\\x0a<0>warren-netnsd: $TAG" "$T/netnsd.log"
expect "netnsd is up" sh -c "kill -0 $PID_netnsd && '$POKE' '$T/netnsd.sock' status | grep -q ready=1"
log "PASS"
