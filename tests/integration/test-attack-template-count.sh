#!/bin/bash
# A member of group warren adds templates without end: each is a
# record in the supervisor's state directory and in its memory (up to 512 KiB), so 0.2.0's
# AddTemplate let any group member fill the state disk. What must hold: beyond --max-templates,
# AddTemplate is refused, nothing more is saved, and the supervisor still serves. Positive
# control: templates up to the bound are added (and one can be added again after a removal).
source "$(dirname "$0")/lib.sh"

start_bus
start_netnsd
start_snapshotd
start_gateway
start_supervisor --max-templates 4
ROOTFS=/var/lib/warren/templates/web/rootfs
add() { mgr AddTemplate ssasqta{sv} -- "$1" "$ROOTFS" 3 /bin/busybox httpd -f 8080 67108864 0 2>&1; }
count() { mgr ListTemplates | grep -oE '^a[a-z(]*\)? [0-9]+' | awk '{print $NF}'; }
have=$(count)
log "templates at start: $have (bound 4)"
added=0
for i in $(seq 1 8); do
	if out=$(add "flood$i"); then added=$((added + 1)); else last=$out; fi
done
log "added $added of 8; the last refusal: ${last:-none}"
expect "templates up to the bound were added (positive control)" test "$added" -eq $((4 - have))
expect "the rest were refused with the reason" grep -q "most this Warren keeps" <<<"${last:-}"
expect "the supervisor lists 4 templates" test "$(count)" -eq 4
expect "no record beyond the bound was saved" \
	test "$(find "$T/state" -name 'flood*' | wc -l)" -eq $((4 - have))
mgr RemoveTemplate s flood1 >/dev/null
expect "after a removal one can be added again" add again1
log "PASS"
