#!/bin/bash
# Malformed datagrams to every helper: privileged helpers drop the peer, the gateway answers an
# error; none crashes or leaks fds, and each keeps serving. A wrong peer uid is refused twice
# over: by the socket file's mode (0660, group warren) and, for a uid that the mode lets in,
# by the daemon's own allow-list (SO_PEERCRED against --peer-users): the connection is closed
# unanswered and the daemon logs the refusal, while uid warren, on the same socket with the same
# request, gets its answer.
source "$(dirname "$0")/lib.sh"
warren_start
fds() { ls "/proc/$1/fd" | wc -l; }
gw_pid=$(pgrep -f "warren-gateway --peer-users warren --port $GW_PORT" | head -1)
[ -n "$gw_pid" ] || fail "no gateway process"
as() { # as USER GROUP CMD...: run CMD with that uid and gid and no other group
	local u=$1 g=$2
	shift 2
	setpriv --reuid="$u" --regid="$g" --clear-groups "$@"
}
refusals() { grep -c "refused connection from uid $(id -u nobody) " "$T/$1.log" || true; }
refused_more() { [ "$(refusals "$1")" -gt "$2" ]; } # refused_more DAEMON N: more than N refusals
for d in netnsd snapshotd gateway; do
	case $d in
	netnsd) sock=$T/netnsd.sock pid=$PID_netnsd want=dropped ;;
	snapshotd) sock=$T/snapshotd.sock pid=$PID_snapshotd want=dropped ;;
	gateway) sock=$T/gw/gateway.sock pid=$gw_pid want=error ;;
	esac
	before=$(fds "$pid")
	for mode in garbage badversion badfds truncfd oversize unknown; do
		out=$($POKE "$sock" $mode || true)
		expect "$d: $mode -> $want ($out)" grep -q "^$want" <<<"$out"
	done
	expect "$d still serves after all that" sh -c "$POKE $sock status | grep -q ready=1"
	sleep 0.2
	after=$(fds "$pid")
	expect "$d fd count unchanged ($before -> $after)" test "$before" = "$after"
	expect "$d still running" kill -0 "$pid"
	# the file mode: uid nobody, group nogroup, cannot even connect
	out=$(as nobody nogroup "$POKE" "$sock" status 2>&1 || true)
	expect "$d: the socket's mode refuses nobody:nogroup ($out)" \
		test "$out" = "connect failed Permission denied"
	# the allow-list: uid nobody in group warren passes the mode (the socket is group warren's,
	# 0660), connects, and the daemon closes it without a reply and says why
	expect "$d's socket is group warren's, 0660 ($(stat -c '%G %a' "$sock"))" \
		test "$(stat -c '%G %a' "$sock")" = "warren 660"
	n0=$(refusals "$d")
	out=$(as nobody warren "$POKE" "$sock" status 2>&1 || true)
	expect "$d: uid nobody in group warren is dropped unanswered ($out)" test "$out" = dropped
	expect "$d logs that it refused uid nobody" wait_for 3 refused_more "$d" "$n0"
	# the control: the listed peer uid, same socket, same request, is answered
	out=$(as warren warren "$POKE" "$sock" status 2>&1 || true)
	expect "$d answers uid warren ($out)" grep -q "ready=1" <<<"$out"
done
expect "supervisor still has every helper" helpers_up
# a field the privileged side must refuse: a route for a bad id at the gateway, a bad slot at netnsd
out=$($POKE "$T/gw/gateway.sock" setroute ../../etc 127.0.0.1 80 running)
expect "gateway refuses a bad sandbox id ($out)" grep -q "^error" <<<"$out"
