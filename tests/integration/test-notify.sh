#!/bin/bash
# Readiness: each helper sends READY=1 on NOTIFY_SOCKET once it serves, and logs with <N>
# priority prefixes.
source "$(dirname "$0")/lib.sh"
python3 - "$T/notify.sock" >"$T/notify.out" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(20)
for _ in range(2):
    print(s.recv(4096).decode(), flush=True)
PY
listener=$!
wait_for 5 test -S "$T/notify.sock"
# as systemd's own: any user may send (snapshotd sends READY=1 after dropping to its user)
chmod 0777 "$T/notify.sock"
NOTIFY_SOCKET=$T/notify.sock "$LIBEXEC/warren-snapshotd" --socket "$T/s.sock" --store "$T/images" 2>"$T/snapshotd.log" &
PIDS+=($!)
expect "READY=1 received" wait_for 10 grep -q "READY=1" "$T/notify.out"
expect "the socket serves once READY was sent" sh -c "$POKE $T/s.sock status | grep -q ready=1"
kill -TERM "${PIDS[-1]}"
wait "${PIDS[-1]}" || true
wait $listener || true
expect "STOPPING=1 received" grep -q "STOPPING=1" "$T/notify.out"
expect "log lines carry syslog priorities" grep -q "^<6>snapshotd: Ready" "$T/snapshotd.log"
