#!/bin/bash
# Routing across hosts, the gateway's part (docs/MULTIHOST.md), with no etcd and no sandbox: two
# gateways on loopback addresses of their own (A 127.0.0.1, B 127.0.0.3, one port) stand for two
# hosts, stand-in sandboxes (upstream.py) answer with the headers they got, and the remote routes
# are pushed on A's cluster socket as warren-clusterd would (ipc-poke). Shown:
#   a sandbox local to B answers through A, named by Host, by /s/<id>/ and by E2B's headers, with
#   its Host unchanged and no hop marker reaching it; a client's marker (bogus) is stripped and
#   the request routed; the real marker (a forwarded request) is served from local routes only,
#   so two gateways with stale tables answer 503 instead of bouncing a request; B's agent gate
#   still holds through the hop (403 without the token, the token never reaches the sandbox);
#   a local route wins over a remote one; a lost host is 503 at once, a dead gateway 503;
#   a removed route is 404;
# and what a hostile peer meets: the supervisor's user sending remote routes on the supervisor's
# socket, another user on the cluster socket, and clusterd's own user pushing a route to an
# address outside --cluster-net or to another port are all refused, and nothing reaches the
# address it named.
source "$(dirname "$0")/lib.sh"
P=$GW_PORT
A=127.0.0.1 B=127.0.0.3 UP=127.0.0.4
UPPORT=$((GW_PORT + 1000))
LOCALPORT=$((GW_PORT + 2000))
S=5aaaaaaaaaa1 L=5aaaaaaaaaa2 Q=5aaaaaaaaaa3 G=5aaaaaaaaaa4 F=5aaaaaaaaaa5 W=5aaaaaaaaaa6
TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') # the cluster's hop token
AGTOK=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')  # G's agent token, on B

# the stand-in sandboxes: B's (its template port and its agent port) and one local to A
up() { # up NAME PORT
	UPSTREAM_NAME=$1 UPSTREAM_ADDR=$UP python3 "$SOURCE/tests/helpers/upstream.py" "$2" \
		"$T/up-$1.log" 2>>"$T/upstream.log" &
	PIDS+=($!)
	wait_for 10 curl -fsS "http://$UP:$2/" >/dev/null || fail "upstream $1 did not start"
	: >"$T/up-$1.log"
}
up b "$UPPORT"
up agent 49983
up a "$LOCALPORT"

gw() { # gw NAME ADDR: a gateway with a cluster socket, as the units start it
	install -d -m 0755 "$T/$1"
	install -d -o warren-gateway -m 0755 "$T/$1/c"
	daemon "gw$1" warren-launch __sockact "$T/$1/gateway.sock" warren-gateway 0660 -- \
		setpriv --reuid=warren-gateway --regid=warren-gateway --clear-groups --no-new-privs \
		"$LIBEXEC/warren-gateway" --peer-users warren --listen "$2" --port "$P" \
		--metrics-port 0 --cluster-socket "$T/$1/c/cluster.sock" \
		--cluster-user warren-cluster --cluster-net 127.0.0.0/24
	wait_for 10 test -S "$T/$1/c/cluster.sock" || fail "gateway $1 did not start"
}
gw a $A
gw b $B
$POKE "$T/b/gateway.sock" setroute $S $UP "$UPPORT" running | grep -q ok || fail "B's route S"
IPC_POKE_AGENT_TOKEN=$AGTOK $POKE "$T/b/gateway.sock" setroute $G $UP "$UPPORT" running |
	grep -q ok || fail "B's route G"
# push ARGS...: a remote routes table on A's cluster socket, as clusterd's user
push() { IPC_POKE_USER=warren-cluster $POKE "$T/a/c/cluster.sock" remoteroutes "$TOKEN" "$@"; }
# unknown GATEWAY_ADDR ID: the gateway does not route ID: 404, or 503 "not known yet" (no
# supervisor holds a connection to these gateways: they never count their routes complete)
unknown() {
	local st
	st=$(get "$1" "$2" /hv)
	{ [ "$st" = 404 ] || [ "$st" = 503 ]; } && grep -qE "no sandbox|not known yet" "$T/body"
}
# get GATEWAY_ADDR ID PATH [CURL ARGS...]: the HTTP status; the body in $T/body
get() {
	local addr=$1 id=$2 path=$3
	shift 3
	curl -s --max-time 10 -o "$T/body" -w '%{http_code}' -H "Host: $id.warren.localhost:$P" \
		"$@" "http://$addr:$P$path"
}

# --- hostile peers first: nothing is routed after them ---
out=$(IPC_POKE_USER=warren $POKE "$T/a/gateway.sock" remoteroutes "$TOKEN" "$F=h2@$UP:$UPPORT")
expect "the supervisor's user cannot send remote routes on its socket ($out)" \
	grep -q '^error' <<<"$out"
for u in warren nobody; do
	out=$(IPC_POKE_USER=$u $POKE "$T/a/c/cluster.sock" remoteroutes "$TOKEN" "$F=h2@$B:$P")
	expect "user $u is refused on the cluster socket ($out)" test "${out%% *}" != ok
done
# a forged catalog record: that route is left out, the others of the table still route
refused() { grep -c "Refused the remote route of sandbox $F" "$T/gwa.log"; }
push "$F=h2@$UP:$UPPORT" >/dev/null
expect "a route to a sandbox's address and port (not a gateway's port) is refused" \
	test "$(refused)" = 1
push "$F=h2@10.9.9.9:$P" >/dev/null
expect "a route outside --cluster-net is refused" test "$(refused)" = 2
out=$(push "$F=h2@$B:$P" "bad-id=h2@$B:$P")
expect "a table with a malformed id is refused whole ($out)" grep -q '^error -22' <<<"$out"
out=$(push "$F=H_2@$B:$P")
expect "a table with a malformed host name is refused ($out)" grep -q '^error -22' <<<"$out"
expect "after them, A does not know the forged sandbox" unknown $A $F
if grep -q . "$T/up-b.log"; then fail "a forged route reached the address it named"; fi
log "ok: nothing reached the forged routes' addresses"

# --- remote routes: S, G and the loop's Q on B, L lost, W on A itself ---
out=$(push "$S=h2@$B:$P" "$G=h2@$B:$P" "$Q=h2@$B:$P" "$L=h3@lost" "$W=h2@$B:$P" \
	"$F=h9@$UP:$UPPORT")
expect "clusterd's user pushes a table, one route of it forged ($out)" test "$out" = ok
expect "the forged one is refused" test "$(refused)" = 3
st=$(curl -s --max-time 10 -o "$T/body" -w '%{http_code}' "http://$A:$P/s/$F/forged")
expect "and not routed ($st)" grep -qE "no sandbox|not known yet" "$T/body"
if grep -q forged "$T/up-b.log"; then fail "the forged route reached the address it named"; fi
expect "B's sandbox answers through A by Host" test "$(get $A $S /hv)" = 200
expect "the answer is B's sandbox's" grep -qx "upstream=b" "$T/body"
expect "its Host is the client's, unchanged" grep -qx "host: $S.warren.localhost:$P" "$T/body"
if grep -qi "^x-warren-forwarded" "$T/body"; then fail "the hop marker reached the sandbox"; fi
log "ok: the hop marker did not reach the sandbox"
st=$(curl -s --max-time 10 -o "$T/body" -w '%{http_code}' "http://$A:$P/s/$S/hv")
expect "by /s/<id>/ through A ($st)" bash -c "[ $st = 200 ] && grep -qx upstream=b '$T/body'"
st=$(curl -s --max-time 10 -o "$T/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $S" \
	-H "E2b-Sandbox-Port: $UPPORT" "http://$A:$P/hv")
expect "by E2B's headers through A ($st)" bash -c "[ $st = 200 ] && grep -qx upstream=b '$T/body'"
expect "a client's marker (not the cluster's token) is stripped and the request routed" \
	test "$(get $A $S /hv -H 'X-Warren-Forwarded: bogus')" = 200
if grep -qi "bogus" "$T/body"; then fail "a client's marker reached the sandbox"; fi
expect "a forwarded request to a sandbox B runs is served by B" \
	test "$(get $B $S /hv -H "X-Warren-Forwarded: $TOKEN")" = 200
# B was never given the token (no clusterd of its own here): it treats the marker as a client's
expect "and the marker does not reach the sandbox" bash -c "! grep -qi '$TOKEN' '$T/body'"
expect "a forwarded request is served from local routes only (A: 503, never proxied again)" \
	test "$(get $A $S /hv -H "X-Warren-Forwarded: $TOKEN")" = 503

# stale tables both ways: B thinks Q is on A, A thinks Q is on B
out=$(IPC_POKE_USER=warren-cluster $POKE "$T/b/c/cluster.sock" remoteroutes "$TOKEN" "$Q=h1@$A:$P")
expect "B takes a table saying Q is on A ($out)" test "$out" = ok
expect "A and B both routing Q to the other: 503, no loop" test "$(get $A $Q /hv)" = 503
expect "its message says why" grep -q "served only from local routes" "$T/body"
expect "and from B's side too" test "$(get $B $Q /hv)" = 503

# B's agent gate through the hop
st=$(get $A $G /hv -H "E2b-Sandbox-Id: $G" -H "E2b-Sandbox-Port: 49983")
expect "G's agent port through A without its token: B's gate answers 403 ($st)" test "$st" = 403
if grep -q . "$T/up-agent.log"; then fail "a request without the agent token reached the agent"; fi
st=$(get $A $G /hv -H "E2b-Sandbox-Id: $G" -H "E2b-Sandbox-Port: 49983" -H "X-Warren-Agent-Token: ${AGTOK//?/0}")
expect "with a wrong token: 403 ($st)" test "$st" = 403
st=$(get $A $G /hv -H "E2b-Sandbox-Id: $G" -H "E2b-Sandbox-Port: 49983" -H "X-Warren-Agent-Token: $AGTOK")
expect "with its token: B lets it through to the agent ($st)" \
	bash -c "[ $st = 200 ] && grep -qx upstream=agent '$T/body'"
expect "and the token does not reach the agent" bash -c "! grep -qi '$AGTOK' '$T/body'"

# a lost host, a local route over a remote one
expect "a sandbox of a lost host: 503 at once" test "$(get $A $L /hv)" = 503
expect "saying its host is gone" grep -q "h3 is gone" "$T/body"
$POKE "$T/a/gateway.sock" setroute $W $UP "$LOCALPORT" running | grep -q ok || fail "A's route W"
expect "a local route wins over the remote one" \
	bash -c "[ \$(curl -s -o '$T/body' -w '%{http_code}' -H 'Host: $W.warren.localhost' http://$A:$P/hv) = 200 ] && grep -qx upstream=a '$T/body'"
out=$(push "$S=h2@$B:$P" "$G=h2@$B:$P" "$W=h2@$B:$P")
expect "a push naming W again leaves A's own route ($out)" bash -c "[ '$out' = ok ] && \
	curl -s -H 'Host: $W.warren.localhost' http://$A:$P/hv | grep -qx upstream=a"
out=$(IPC_POKE_USER=warren-cluster $POKE "$T/a/c/cluster.sock" remoteroutes "$TOKEN")
expect "an empty table removes every remote route ($out)" unknown $A $S
expect "and leaves the local one" test "$(get $A $W /hv)" = 200

# B's gateway gone: 503 from A, not a hang
push "$S=h2@$B:$P" | grep -q ok || fail "push S again"
expect "S answers through A again" test "$(get $A $S /hv)" = 200
stop_pid "$PID_gwb"
expect "with B's gateway gone, A answers 503 for S" test "$(get $A $S /hv)" = 503
expect "saying B's gateway did not accept" grep -q "did not accept" "$T/body"
log "PASS"
