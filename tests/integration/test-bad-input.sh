#!/bin/bash
# Malformed datagrams to every helper: privileged helpers drop the peer, the gateway answers an
# error; none crashes or leaks fds, and each keeps serving. A wrong peer uid is refused.
source "$(dirname "$0")/lib.sh"
warren_start
fds() { ls "/proc/$1/fd" | wc -l; }
gw_pid=$(pgrep -f "warren-gateway --peer-users warren --port $GW_PORT" | head -1)
for d in netnsd snapshotd gateway; do
	case $d in
	netnsd) sock=$T/netnsd.sock pid=$PID_netnsd want=dropped ;;
	snapshotd) sock=$T/snapshotd.sock pid=$PID_snapshotd want=dropped ;;
	gateway) sock=$T/gw/gateway.sock pid=$gw_pid want=error ;;
	esac
	before=$(fds "$pid")
	for mode in garbage badversion badfds truncfd oversize unknown; do
		out=$($POKE "$sock" $mode)
		expect "$d: $mode -> $want ($out)" grep -q "^$want" <<<"$out"
	done
	expect "$d still serves after all that" sh -c "$POKE $sock status | grep -q ready=1"
	sleep 0.2
	after=$(fds "$pid")
	expect "$d fd count unchanged ($before -> $after)" test "$before" = "$after"
	expect "$d still running" kill -0 "$pid"
	out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$POKE" "$sock" status 2>&1 || true)
	expect "$d refuses uid nobody ($out)" grep -qE "dropped|connect failed|failed" <<<"$out"
done
expect "supervisor still has every helper" helpers_up
# a field the privileged side must refuse: a route for a bad id at the gateway, a bad slot at netnsd
out=$($POKE "$T/gw/gateway.sock" setroute ../../etc 127.0.0.1 80 running)
expect "gateway refuses a bad sandbox id ($out)" grep -q "^error" <<<"$out"
