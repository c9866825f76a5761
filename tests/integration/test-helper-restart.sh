#!/bin/bash
# Helpers that die come back and the supervisor reconnects without losing its state: the
# gateway gets its routes again; a stopped netnsd leaves its sandboxes running and the next one
# adopts them (test-netnsd-restart.sh has the kill -9 cases and both backends).
source "$(dirname "$0")/lib.sh"
warren_start
id=$(create web wait)
kill -9 "$PID_gateway"
wait "$PID_gateway" 2>/dev/null || true
expect "supervisor notices the gateway is gone" wait_for 5 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager Helpers | grep -q '\"gateway\" false'"
start_gateway
expect "supervisor reconnects" wait_for 10 helpers_up
expect "the new gateway got the route again" wait_for 5 sh -c "curl -fsS --max-time 5 $(sb_url "$id") | grep -q Hello"
kill -9 "$PID_snapshotd"
wait "$PID_snapshotd" 2>/dev/null || true
start_snapshotd
expect "snapshotd reconnected" wait_for 10 helpers_up
expect "sandbox state kept" test "$(sbprop "$id" State)" = running
kill -TERM "$PID_netnsd"
wait "$PID_netnsd" 2>/dev/null || true
expect "netnsd stopped: the sandbox still answers through the gateway" \
	sh -c "curl -fsS --max-time 10 $(sb_url "$id") | grep -q Hello"
start_netnsd
expect "netnsd reconnected" wait_for 10 helpers_up
expect "the new netnsd adopted the sandbox" grep -q "Adopting sandbox $id " "$T/netnsd.log"
expect "it is still running" wait_for 10 has_state "$id" running
expect "and answers" sh -c "curl -fsS --max-time 10 $(sb_url "$id") | grep -q Hello"
expect "a new sandbox works" sh -c "curl -fsS --max-time 20 $(sb_url "$(create web wait)") | grep -q Hello"
