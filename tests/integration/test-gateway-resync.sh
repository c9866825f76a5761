#!/bin/bash
# Restart without loss, the gateway's side: routes are the supervisor's to give, so
# while the supervisor is away, or a restarted gateway has not got them all yet, a request for a
# sandbox the gateway does not know is answered 503 with Retry-After, never 404 (the sandbox may
# exist) and never routed elsewhere; sandboxes it knows keep answering. Once a supervisor has
# synced, an unknown sandbox is 404 again (the positive control).
source "$(dirname "$0")/lib.sh"
warren_start
id=$(create web wait)
unknown=0123456789ab
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$(sb_url "$1")" || true; }
headers() { curl -s -D - -o /dev/null --max-time 10 "$(sb_url "$1")" || true; }
expect "synced: an unknown sandbox is 404" wait_for 10 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' $(sb_url $unknown))\" = 404 ]"
expect "synced: the sandbox answers" sh -c "curl -fsS --max-time 10 $(sb_url "$id") | grep -q Hello"

kill -9 "$PID_supervisor"
wait "$PID_supervisor" 2>/dev/null || true
expect "supervisor away: the gateway noticed" wait_for 10 grep -q "The supervisor is gone" "$T/gateway.log"
expect "supervisor away: the sandbox still answers" sh -c "curl -fsS --max-time 10 $(sb_url "$id") | grep -q Hello"
c=$(code $unknown)
expect "supervisor away: an unknown sandbox gets 503 ($c)" test "$c" = 503
expect "with Retry-After" sh -c "curl -s -D - -o /dev/null --max-time 10 $(sb_url $unknown) | grep -qi '^Retry-After: 1'"

# a gateway restarted while no supervisor can give it routes: even the real sandbox is 503
kill -9 "$PID_gateway"
wait "$PID_gateway" 2>/dev/null || true
start_gateway
# the socket file outlives a killed gateway: wait until the new one listens on its port
expect "the new gateway listens" wait_for 10 sh -c "curl -s -o /dev/null --max-time 2 http://127.0.0.1:$GW_PORT/"
c=$(code "$id")
expect "new gateway, no supervisor: the sandbox is 503, not 404 ($c)" test "$c" = 503
expect "with Retry-After" sh -c "curl -s -D - -o /dev/null --max-time 10 $(sb_url "$id") | grep -qi '^Retry-After: 1'"

start_supervisor
expect "supervisor back: the route is pushed again and the sandbox answers" \
	wait_for 10 sh -c "curl -fsS --max-time 5 $(sb_url "$id") | grep -q Hello"
expect "synced again: an unknown sandbox is 404" \
	wait_for 10 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' $(sb_url $unknown))\" = 404 ]"
