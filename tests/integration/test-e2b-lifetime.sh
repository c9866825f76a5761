#!/bin/bash
# E2B lifetimes are the supervisor's (SetTimeout): the published e2b SDK's timeoutMs, setTimeout
# and onTimeout pause, checked from both sides: what the SDK sees (tests/e2b/lifetime.mjs), and
# EndUSec/TimeoutAction/State over D-Bus. One enforcer: with warren-e2b-api stopped (SIGSTOP)
# the supervisor still ends the sandbox on time.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/e2b-lib.sh"
warren_start
start_e2b
E2BPID=$(pgrep -f "warren-e2b-api --listen 127.0.0.1:$E2B_PORT" | head -1)
[ -n "$E2BPID" ] || fail "no warren-e2b-api process"
KEY=$(warrenctl apikey create lifetime --api-keys "$KEYS")
export E2B_API_URL=$API E2B_SANDBOX_URL=$GW E2B_API_KEY=$KEY
SYNC=$T/sync
mkdir -p "$SYNC"
OUT=$T/sdk.out
(cd "$E2B_DIR" && TEMPLATE=$TEMPLATE SYNC_DIR=$SYNC timeout 300 node lifetime.mjs >"$OUT" 2>&1) &
SDK=$!
at_exit "kill -CONT $E2BPID 2>/dev/null || true"
# wait_step NAME: the SDK waits for go-NAME
wait_step() {
	wait_for 120 sh -c "grep -q '^wait: $1\$' '$OUT' || ! kill -0 $SDK"
	grep -q "^wait: $1\$" "$OUT" || { cat "$OUT" >&2; fail "the SDK never reached $1"; }
}
go() { touch "$SYNC/go-$1"; }
now_usec() { echo $(($(date +%s%N) / 1000)); }
gone() { ! busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListSandboxes | grep -q "\"$1\""; }

# --- short: the supervisor holds the 4 s lifetime (kill); it ends it with the control plane
# stopped
wait_step short
S=$(sed -n 's/^short: //p' "$OUT")
end=$(sbprop "$S" EndUSec)
now=$(now_usec)
expect "the supervisor holds its lifetime (EndUSec $end, in $(((end - now) / 1000)) ms)" \
	test "$end" -gt "$now" -a "$end" -le $((now + 4500000))
expect "TimeoutAction kill" test "$(sbprop "$S" TimeoutAction)" = kill
kill -STOP "$E2BPID"
log "warren-e2b-api stopped (SIGSTOP)"
expect "with the control plane stopped, the supervisor ends it at its end" wait_for 15 gone "$S"
expect "not before its end" test "$(now_usec)" -ge "$end"
kill -CONT "$E2BPID"
go short

# --- long: setTimeout moved the supervisor's end
wait_step long
L=$(sed -n 's/^long: //p' "$OUT")
end=$(sbprop "$L" EndUSec)
expect "setTimeout(12 s) reached the supervisor (EndUSec in $(((end - $(now_usec)) / 1000)) ms)" \
	test "$end" -gt $(($(now_usec) + 8000000))
go long

# --- pause: TimeoutAction pause; frozen in Warren at its end; connect gives it a new lifetime
wait_step pause-set
P=$(sed -n 's/^pause: //p' "$OUT")
expect "an onTimeout pause sandbox: TimeoutAction pause" test "$(sbprop "$P" TimeoutAction)" = pause
go pause-set
wait_step pause-frozen
expect "the paused sandbox is frozen in Warren" has_state "$P" frozen
expect "and has no lifetime while paused" test "$(sbprop "$P" EndUSec)" = 0
go pause-frozen
wait_step pause-resumed
expect "resumed: running in Warren" has_state "$P" running
end=$(sbprop "$P" EndUSec)
expect "with a new 60 s lifetime (EndUSec in $(((end - $(now_usec)) / 1000)) ms)" \
	test "$end" -gt $(($(now_usec) + 50000000))
go pause-resumed

wait "$SDK" || { cat "$OUT" >&2; fail "the SDK script failed"; }
sed 's/^/  sdk /' "$OUT" >&2
expect "the SDK script finished" grep -q '^done$' "$OUT"
expect "the control plane keeps no expiry timer of its own (no 'timed out: killed' in its log)" \
	bash -c "! grep -q 'timed out: killed' '$T/e2b.log'"

# --- a request through the gateway thaws a sandbox paused at its end: the control plane
# notices and gives it its timeout again
hdr=(-H "X-API-Key: $KEY" -H 'Content-Type: application/json')
body=$(curl -fsS "${hdr[@]}" -d '{"templateID":"'"$TEMPLATE"'","timeout":4,"autoPause":true}' "$API/sandboxes")
Q=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["sandboxID"])' "$body")
expect "paused at its end" wait_for 20 has_state "$Q" frozen
expect "E2B reports it paused" wait_for 10 sh -c "[ \"\$(curl -fsS -H 'X-API-Key: $KEY' $API/sandboxes/$Q | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"state\"])')\" = paused ]"
expect "a request through the gateway resumes it" sh -c "curl -fsS --max-time 10 $(sb_url "$Q") | grep -q Hello"
expect "E2B reports it running again" wait_for 15 sh -c "[ \"\$(curl -fsS -H 'X-API-Key: $KEY' $API/sandboxes/$Q | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"state\"])')\" = running ]"
expect "with its timeout again in the supervisor" wait_for 10 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$Q org.warren.Warren1.Sandbox TimeoutAction | grep -q pause"
expect "and it is paused at that end again" wait_for 20 has_state "$Q" frozen
log "PASS"
