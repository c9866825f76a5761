#!/bin/bash
# A sandbox that fails to start answers HTTP at once with 502 and its reason, whatever the
# reason's length: the gateway used to refuse a route whose reason was over 200 bytes, so the
# route stayed "starting" and clients waited for a 504 at the start timeout. A short reason
# (an app that exits) is the positive control of the same path.
source "$(dirname "$0")/lib.sh"
warren_start
WEB=/var/lib/warren/templates/web/rootfs
mgr AddTemplate ssasqta{sv} -- quits "$WEB" 4 /bin/busybox sh -c "exit 3" 8080 67108864 0
q=$(create quits)
expect "the quitting sandbox fails" wait_for 30 has_state "$q" failed
out=$(curl -s -w ' %{http_code}' --max-time 15 "$(sb_url "$q")" || true)
expect "a short reason: 502 with it ($out)" grep -q "exited with status 3.* 502$" <<<"$(echo $out)"
# a start that fails with a reason longer than the gateway's old bound: 502 at once
long=/bin/$(printf 'x%.0s' $(seq 300))
mgr AddTemplate ssasqta{sv} -- broken "$WEB" 1 "$long" 8080 67108864 0
b=$(create broken)
expect "the broken sandbox fails" wait_for 30 has_state "$b" failed
reason=$(sbprop "$b" Reason)
expect "with a long reason (${#reason} bytes)" test "${#reason}" -gt 200
out=$(curl -s -w ' %{http_code}' --max-time 15 "$(sb_url "$b")" || true)
expect "the gateway answers 502 with the reason at once ($out)" grep -q "xxxxxxxxxx.* 502$" <<<"$(echo $out)"
log "PASS"
