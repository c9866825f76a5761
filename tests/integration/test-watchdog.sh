#!/bin/bash
# systemd's watchdog (WatchdogSec= in the units): each daemon sends WATCHDOG=1 from its event
# loop at half of WATCHDOG_USEC on NOTIFY_SOCKET, after its lock-down (seccomp allows it); a
# daemon whose loop is stopped sends none (so systemd would restart it); one told the watchdog
# belongs to another pid (WATCHDOG_PID) or given none sends none. The listener stands in for
# systemd: a datagram socket per daemon, every message logged with the daemon's name.
source "$(dirname "$0")/lib.sh"
NOTES=$T/notify.log
: >"$NOTES"
python3 - "$T" snapshotd gateway supervisor control <<'EOF' &
import os, select, socket, sys
d = sys.argv[1]
socks = {}
for name in sys.argv[2:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = f"{d}/notify-{name}.sock"
    s.bind(path)
    os.chmod(path, 0o666)  # the daemons send after dropping to their users, as to systemd's
    socks[s.fileno()] = (name, s)
with open(f"{d}/notify.log", "a", buffering=1) as out:
    while True:
        r, _, _ = select.select(list(socks), [], [])
        for fd in r:
            name, s = socks[fd]
            for line in s.recv(4096).decode(errors="replace").split("\n"):
                out.write(f"{name} {line}\n")
EOF
PIDS+=($!)
wait_for 5 test -S "$T/notify-control.sock" || fail "listener did not start"
count() { grep -c "^$1 $2\$" "$NOTES" || true; }
start_bus
start_netnsd
NOTIFY_SOCKET=$T/notify-snapshotd.sock WATCHDOG_USEC=200000 start_snapshotd
NOTIFY_SOCKET=$T/notify-gateway.sock WATCHDOG_USEC=200000 start_gateway
NOTIFY_SOCKET=$T/notify-supervisor.sock WATCHDOG_USEC=200000 start_supervisor

for d in snapshotd gateway supervisor; do
	expect "$d is ready (READY=1)" wait_for 10 sh -c "grep -q '^$d READY=1' '$NOTES'"
	n0=$(count "$d" WATCHDOG=1)
	sleep 1.5
	n1=$(count "$d" WATCHDOG=1)
	# 100 ms apart: about 15 in 1.5 s; a loaded machine may delay some, never all
	expect "$d keeps its watchdog fed from its loop ($((n1 - n0)) in 1.5 s)" test $((n1 - n0)) -ge 4
done

# a stopped loop stops feeding it (what makes the watchdog worth having)
kill -STOP "$PID_snapshotd"
sleep 0.3
n0=$(count snapshotd WATCHDOG=1)
sleep 1
n1=$(count snapshotd WATCHDOG=1)
kill -CONT "$PID_snapshotd"
expect "a stopped snapshotd sends nothing ($((n1 - n0)) while stopped)" test "$n1" = "$n0"
expect "it feeds it again when it runs" wait_for 5 sh -c "[ \$(grep -c '^snapshotd WATCHDOG=1\$' '$NOTES') -gt $n1 ]"

# controls: a watchdog that names another process, and none at all, give no keep-alives
PID_snapshotd_main=$PID_snapshotd
rm -f "$T/ctl.sock"
NOTIFY_SOCKET=$T/notify-control.sock WATCHDOG_USEC=200000 WATCHDOG_PID=1 \
	daemon ctl1 "$LIBEXEC/warren-snapshotd" --socket "$T/ctl.sock" --store "$T/ctl-images" \
	--reclaim-dir "$T/ctl-reclaim" --image-cache "$T/ctl-cache"
expect "the control daemon is ready" wait_for 10 sh -c "grep -q '^control READY=1' '$NOTES'"
sleep 1
expect "WATCHDOG_PID of another process: no keep-alive" test "$(count control WATCHDOG=1)" = 0
stop_pid "$PID_ctl1"
rm -f "$T/ctl.sock"
NOTIFY_SOCKET=$T/notify-control.sock daemon ctl2 "$LIBEXEC/warren-snapshotd" \
	--socket "$T/ctl.sock" --store "$T/ctl-images" \
	--reclaim-dir "$T/ctl-reclaim" --image-cache "$T/ctl-cache"
expect "the second control daemon is ready" wait_for 10 sh -c "[ \$(grep -c '^control READY=1' '$NOTES') = 2 ]"
sleep 1
expect "no WATCHDOG_USEC: no keep-alive" test "$(count control WATCHDOG=1)" = 0
stop_pid "$PID_ctl2"
expect "snapshotd ($PID_snapshotd_main) still runs" kill -0 "$PID_snapshotd_main"
log "passed"
