#!/bin/bash
# Sandbox lifetimes (SetTimeout, supervisor/lifetime.c): a sandbox is destroyed ("kill") or
# frozen ("pause") when its lifetime ends; EndUSec and TimeoutAction tell it before; 0 clears
# it; bad input and other users are refused; a lifetime outlives a kill -9 of the supervisor and
# still ends after the re-adoption.
source "$(dirname "$0")/lib.sh"
warren_start
u=warren-test-op
getent passwd "$u" >/dev/null ||
	useradd --system --no-create-home --shell /usr/sbin/nologin -G warren "$u"
as() { setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups "${@:2}"; }
sbcall() { # sbcall ID METHOD [SIGNATURE ARGS...]
	local id=$1
	shift
	call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox "$@"
}
now_usec() { echo $(($(date +%s%N) / 1000)); }
listed() { mgr ListSandboxes | grep -q "\"$1\""; }
answers() { curl -fsS --max-time 10 "$(sb_url "$1")" | grep -q Hello; }

# --- kill: EndUSec and TimeoutAction before, gone after
a=$(create web wait)
expect "no lifetime at first ($(sbprop "$a" EndUSec))" test "$(sbprop "$a" EndUSec)" = 0
t0=$(now_usec)
sbcall "$a" SetTimeout ts 3 kill
t1=$(now_usec)
end=$(sbprop "$a" EndUSec)
expect "EndUSec is 3 s after the call ($end, call at $t0..$t1)" \
	test "$end" -ge $((t0 + 3000000)) -a "$end" -le $((t1 + 3000000))
expect "TimeoutAction is kill" test "$(sbprop "$a" TimeoutAction)" = kill
expect "its record is on disk" grep -qx "$end kill" "$T/state/lifetimes/$a"
expect "ps --json shows the lifetime" sh -c "warrenctl ps --json | grep -q '\"end_usec\":$end,\"timeout_action\":\"kill\"'"
expect "inspect shows EndUSec" sh -c "warrenctl inspect $a | grep -q '\"EndUSec\":$end'"
expect "it still runs before its end" answers "$a"
expect "after its end it is gone from ListSandboxes" wait_for 15 sh -c "! busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListSandboxes | grep -q '\"$a\"'"
expect "and from warrenctl ps" sh -c "! warrenctl ps --quiet | grep -qx $a"
expect "its lifetime record went with it" wait_for 5 test ! -e "$T/state/lifetimes/$a"
expect "it no longer answers" sh -c "! curl -fsS --max-time 5 $(sb_url "$a") | grep -q Hello"

# --- pause (through warrenctl, by a prefix of the id): frozen after, a request thaws it
b=$(create web wait)
expect "warrenctl timeout --pause" warrenctl timeout "${b:0:8}" 3 --pause
expect "TimeoutAction is pause" test "$(sbprop "$b" TimeoutAction)" = pause
expect "it runs before its end" has_state "$b" running
expect "after its end it is paused (frozen)" wait_for 15 has_state "$b" frozen
expect "the lifetime is over: EndUSec 0" test "$(sbprop "$b" EndUSec)" = 0
expect "and TimeoutAction empty" test -z "$(sbprop "$b" TimeoutAction)"
expect "its record is gone" test ! -e "$T/state/lifetimes/$b"
expect "it is still listed" listed "$b"
expect "a request through the gateway resumes it" answers "$b"
expect "running again" has_state "$b" running
expect "Freeze/Thaw still work on it" sh -c "busctl --system call org.warren.Warren1 /org/warren/Warren1/sandbox/$b org.warren.Warren1.Sandbox Freeze && busctl --system call org.warren.Warren1 /org/warren/Warren1/sandbox/$b org.warren.Warren1.Sandbox Thaw"
expect "and it answers" answers "$b"

# --- set, then clear with 0: nothing happens at the old end
sbcall "$b" SetTimeout ts 3 kill
expect "a lifetime is set" test "$(sbprop "$b" EndUSec)" != 0
sbcall "$b" SetTimeout ts 0 ""
expect "SetTimeout 0 clears EndUSec" test "$(sbprop "$b" EndUSec)" = 0
expect "and its record" test ! -e "$T/state/lifetimes/$b"
sleep 5
expect "after the old end it still runs" has_state "$b" running
expect "and answers" answers "$b"
# a later SetTimeout replaces the earlier one (30 s, then 3: ends at 3)
sbcall "$b" SetTimeout ts 30 kill
sbcall "$b" SetTimeout ts 4 pause
expect "the last SetTimeout wins (pause)" test "$(sbprop "$b" TimeoutAction)" = pause

# --- bad input
refused() { # refused WHAT PATTERN OUTPUT: the supervisor's InvalidArgument message
	grep -q "$2" <<<"$3" || fail "$1 was not refused: $3"
	log "ok: $1 refused ($3)"
}
bad_action="'kill' or 'pause'"
refused "action boom" "$bad_action" "$(sbcall "$b" SetTimeout ts 10 boom 2>&1 || true)"
refused "action empty with seconds" "$bad_action" "$(sbcall "$b" SetTimeout ts 10 '' 2>&1 || true)"
refused "seconds past 30 days" "30 days" "$(sbcall "$b" SetTimeout ts 2592001 kill 2>&1 || true)"
refused "seconds 2^64-1" "30 days" "$(sbcall "$b" SetTimeout ts 18446744073709551615 kill 2>&1 || true)"
refused "a control character in the action" "control character" "$(sbcall "$b" SetTimeout ts 10 $'kill\n' 2>&1 || true)"
out=$(warrenctl timeout "$b" 99999999999 2>&1 || true)
expect "warrenctl passes the supervisor's refusal on ($out)" grep -q "30 days" <<<"$out"
out=$(warrenctl timeout "$b" 5s 2>&1 || true)
expect "warrenctl refuses a non-number ($out)" grep -q "SECONDS must be a number" <<<"$out"
expect "the pause lifetime is unchanged by the refusals" test "$(sbprop "$b" TimeoutAction)" = pause
expect "30 days exactly is accepted" sbcall "$b" SetTimeout ts 2592000 kill
expect "back to a short pause" sbcall "$b" SetTimeout ts 60 pause

# --- another member of group warren may not set (or clear) it
out=$(as "$u" busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$b" \
	org.warren.Warren1.Sandbox SetTimeout ts 1 kill 2>&1 || true)
grep -q "AccessDenied\|Access denied\|not yours" <<<"$out" || fail "another user's SetTimeout was not refused: $out"
log "ok: another user's SetTimeout refused ($out)"
out=$(as "$u" busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$b" \
	org.warren.Warren1.Sandbox SetTimeout ts 0 "" 2>&1 || true)
grep -q "AccessDenied\|Access denied\|not yours" <<<"$out" || fail "another user's clear was not refused: $out"
expect "the lifetime is still pause in ~60 s" test "$(sbprop "$b" TimeoutAction)" = pause
sleep 2
expect "and the sandbox runs" has_state "$b" running
# the owner of its own sandbox may
c=$(as "$u" busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager \
	CreateSandbox sa{sv} web 1 wait b true | awk '{print $2}' | tr -d '"')
[[ $c =~ ^[0-9a-f]{12}$ ]] || fail "$u could not create a sandbox ($c)"
expect "$u sets the lifetime of its own sandbox" as "$u" busctl --system call org.warren.Warren1 \
	"/org/warren/Warren1/sandbox/$c" org.warren.Warren1.Sandbox SetTimeout ts 600 kill

# --- kill -9 of the supervisor with lifetimes pending: re-armed after the re-adoption
sbcall "$b" SetTimeout ts 8 kill
sbcall "$c" SetTimeout ts 600 pause
end_c=$(sbprop "$c" EndUSec)
d=$(create web wait)
sbcall "$d" SetTimeout ts 600 kill
kill -9 "$PID_supervisor"
wait "$PID_supervisor" 2>/dev/null || true
# d's record is forged meanwhile (its end written as a far future, then garbage): refused on
# load, d has no lifetime (the supervisor's own directory, read strictly all the same)
echo "99999999999999999 kill" >"$T/state/lifetimes/$d"
chown warren:warren "$T/state/lifetimes/$d"
echo "x" >"$T/state/lifetimes/ffffffffffff"
start_supervisor
expect "b is re-adopted" wait_for 15 has_state "$b" running
expect "b's lifetime is back ($(sbprop "$b" TimeoutAction))" test "$(sbprop "$b" TimeoutAction)" = kill
expect "c's lifetime is back with its end" test "$(sbprop "$c" EndUSec)" = "$end_c"
expect "d's forged record is refused" test "$(sbprop "$d" EndUSec)" = 0
expect "and removed" test ! -e "$T/state/lifetimes/$d"
expect "a record of no sandbox is removed" test ! -e "$T/state/lifetimes/ffffffffffff"
expect "b is destroyed at its end after the restart" wait_for 20 sh -c "! busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListSandboxes | grep -q '\"$b\"'"
expect "c still runs" has_state "$c" running
expect "d still runs" has_state "$d" running

# an end that passed while no supervisor ran fires at once after the re-adoption
sbcall "$d" SetTimeout ts 2 kill
kill -9 "$PID_supervisor"
wait "$PID_supervisor" 2>/dev/null || true
sleep 4
start_supervisor
expect "d, expired while the supervisor was down, is destroyed once re-adopted" wait_for 15 sh -c "! busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListSandboxes | grep -q '\"$d\"'"
expect "c still runs" wait_for 10 has_state "$c" running
expect "c answers" answers "$c"
