#!/bin/bash
# Each daemon's seccomp allow-list: an allowed call works after lock-down, a forbidden one
# kills the process (SIGSYS); --seccomp-debug names it; --dump-seccomp prints the filter with
# its argument rules. Every rule of every filter: test-attack-containment.sh.
source "$(dirname "$0")/lib.sh"
for d in netnsd snapshotd gateway supervisor clusterd cgroupd; do
	bin=$LIBEXEC/warren-$d
	args=(--socket "$T/$d-probe.sock")
	[ $d = supervisor ] && args=(--state-dir "$T/state-$d" --templates-dir /var/lib/warren/templates)
	rc=0
	"$bin" "${args[@]}" --seccomp-probe allowed >"$T/out" 2>&1 || rc=$?
	expect "$d: allowed call works under the filter (rc $rc)" test "$rc" = 0
	rc=0
	"$bin" "${args[@]}" --seccomp-probe forbidden >"$T/out" 2>&1 || rc=$?
	expect "$d: ptrace kills it with SIGSYS (rc $rc)" test "$rc" = $((128 + 31))
	rc=0
	"$bin" "${args[@]}" --seccomp-debug --seccomp-probe forbidden >"$T/out" 2>&1 || rc=$?
	expect "$d: --seccomp-debug names the call" grep -q "forbidden syscall ptrace" "$T/out"
	"$bin" --dump-seccomp >"$T/pfc"
	expect "$d: --dump-seccomp prints a filter with kill default" grep -q "action KILL_PROCESS" "$T/pfc"
	expect "$d: the filter allows read" grep -q "syscall \"read\"" "$T/pfc"
done
# the running daemons work under their filters: the status test and every other test use them
warren_start
expect "daemons serve under their filters" helpers_up
for p in $PID_netnsd $PID_snapshotd; do
	expect "pid $p runs with a seccomp filter" grep -qE "^Seccomp:\s+2" "/proc/$p/status"
done
# argument rules are in the compiled filters: netnsd opens only without O_CREAT|O_TRUNC|O_TMPFILE
# (and @file-read alone also without O_WRONLY|O_RDWR: tests/unit/test-seccomp.c), unshare only
# CLONE_NEWNET; the gateway opens no file at all
"$LIBEXEC/warren-netnsd" --dump-seccomp >"$T/pfc"
expect "netnsd: openat only with O_CREAT|O_TRUNC|O_TMPFILE clear" \
	sh -c "grep -A3 '\"openat\"' $T/pfc | grep -q '& 0x00400240 == 0'"
expect "netnsd: unshare only with CLONE_NEWNET" \
	sh -c "grep -A3 '\"unshare\"' $T/pfc | grep -q '& 0xbfffffff == 0'"
"$LIBEXEC/warren-gateway" --dump-seccomp >"$T/pfc"
expect "gateway: no open or openat rule" sh -c "! grep -qE '\"open(at)?\"' $T/pfc"
