#!/bin/bash
# The supervisor's log lines reach journald with structured fields: a line about a sandbox
# carries SANDBOX_ID=, TEMPLATE= and BACKEND=, so `journalctl SANDBOX_ID=<id>` finds its story.
# journald here is a stand-in on the native socket path (/run/systemd/journal/socket, in a
# private mount namespace of the supervisor's, a tmpfs over /run): what sd_journal_send really
# sends is parsed and checked. Without the journal (the positive control of the fallback) the
# same lines go to stderr, as warren-launch's files keep them.
source "$(dirname "$0")/lib.sh"
start_bus
start_netnsd
start_snapshotd
start_gateway
install -d -o warren -g warren -m 0700 "$T/state"
: >"$T/journal.json"
at_exit 'kill "$(cat "$T/journal.json.pid" 2>/dev/null)" 2>/dev/null'
chmod 0666 "$T/journal.json"
# the supervisor and the listener share a mount namespace with a fresh /run
daemon supervisor unshare --mount --propagation private -- bash -c '
	mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -p /run/systemd/journal || exit 1
	python3 "$1" /run/systemd/journal/socket "$2" &
	echo $! >"$2.pid"
	for _ in $(seq 50); do [ -S /run/systemd/journal/socket ] && break; sleep 0.1; done
	shift 2
	exec "$@"' journal "$SOURCE/tests/helpers/journal-listen.py" "$T/journal.json" \
	setpriv --reuid=warren --regid=warren --init-groups --no-new-privs \
	"$LIBEXEC/warren-supervisor" --state-dir "$T/state" --netnsd-socket "$T/netnsd.sock" \
	--snapshotd-socket "$T/snapshotd.sock" --gateway-socket "$T/gw/gateway.sock" \
	--gateway-url "$GW" --log-journal
wait_for 10 helpers_up || fail "supervisor not up: $(cat "$T/supervisor.log")"
id=$(create web wait)
# entry ID WORD: the journal entry whose message is "Sandbox ID: WORD", as JSON
entry() {
	python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("MESSAGE") == "Sandbox %s: %s" % (sys.argv[2], sys.argv[3]):
        print(json.dumps(e, sort_keys=True)); break' "$T/journal.json" "$1" "$2"
}
expect "the journal got the sandbox's start" wait_for 10 sh -c "[ -n \"\$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get(\"MESSAGE\") == \"Sandbox %s: running\" % sys.argv[2]: print(1)' $T/journal.json $id)\" ]"
e=$(entry "$id" running)
log "entry: $e"
expect "SANDBOX_ID=$id" grep -q "\"SANDBOX_ID\": \"$id\"" <<<"$e"
expect "TEMPLATE=web" grep -q '"TEMPLATE": "web"' <<<"$e"
expect "BACKEND=gvisor" grep -q '"BACKEND": "gvisor"' <<<"$e"
expect "PRIORITY=6 (info)" grep -q '"PRIORITY": "6"' <<<"$e"
expect "SYSLOG_IDENTIFIER=warren-supervisor" grep -q '"SYSLOG_IDENTIFIER": "warren-supervisor"' <<<"$e"
expect "lines not about a sandbox go too (Ready)" grep -q '"MESSAGE": "Ready on the system bus' "$T/journal.json"
grep -q "Sandbox $id: running" "$T/supervisor.log" && fail "the line went to stderr as well"
log "ok: the journal's lines are not written to stderr twice"

# the fallback: a supervisor without the journal writes the same line to stderr
stop_pid "$PID_supervisor"
wait_for 10 sh -c '! busctl --system status org.warren.Warren1' || fail "supervisor did not stop"
start_supervisor
b=$(create web wait)
expect "without journald the line is on stderr" grep -q "supervisor: Sandbox $b: running" "$T/supervisor.log"
grep -q "$b" "$T/journal.json" && fail "the journal got a line with no journal in use"
log "PASS"
