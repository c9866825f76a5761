#!/bin/bash
# The gateway against a real upstream: routing by Host and path, keep-alive, bodies both ways
# (sized and chunked), Upgrade tunnels, limits (431, 400), unknown ids (404), failed routes
# (502 + reason), starting routes (held, retried, 504 at the timeout), and a hung upstream that
# does not hold up anyone else.
source "$(dirname "$0")/lib.sh"
start_gateway
UP=$((GW_PORT + 1000))
python3 "$SOURCE/tests/helpers/upstream.py" "$UP" &
PIDS+=($!)
wait_for 10 curl -fsS "http://127.0.0.1:$UP/" || fail "upstream did not start"
SOCK=$T/gw/gateway.sock
route() { # route ID ADDR PORT STATE [TIMEOUT [REASON]]: SetRoute, which must be answered ok
	local out
	out=$($POKE "$SOCK" setroute "$@" || true)
	[ "$out" = ok ] || fail "setroute $*: $out"
}
A=aaaaaaaaaaaa
B=bbbbbbbbbbbb
expect "route A set" grep -q ok <<<"$($POKE "$SOCK" setroute $A 127.0.0.1 "$UP" running)"
expect "route B set" grep -q ok <<<"$($POKE "$SOCK" setroute $B 127.0.0.1 "$UP" running)"
expect "Host routing" grep -q "hello path=/x" <<<"$(curl -fsS "http://$A.warren.localhost:$GW_PORT/x")"
expect "path routing strips /s/<id>" grep -q "hello path=/y?z=1" <<<"$(curl -fsS "$GW/s/$A/y?z=1")"
expect "bare /s/<id> becomes /" grep -q "hello path=/$" <<<"$(curl -fsS "$GW/s/$A")"
# no supervisor stays connected here (this test speaks for it one request at a time), so an
# unknown id may still exist: 503 with Retry-After, never 404 (test-gateway-resync.sh has the
# 404 once a supervisor's routes are in)
hdr=$(curl -s -o /dev/null -D - "$GW/s/cccccccccccc/")
expect "unknown sandbox, no supervisor: 503" grep -q '^HTTP/1.1 503' <<<"$hdr"
expect "with Retry-After" grep -qi '^Retry-After: 1' <<<"$hdr"
code=$(curl -s -o /dev/null -w '%{http_code}' "$GW/")
expect "no sandbox named: 404" test "$code" = 404
n=$(curl -s -o /dev/null -o /dev/null -w '%{num_connects}\n' "$GW/s/$A/1" "$GW/s/$A/2" | awk '{s += $1} END {print s}')
expect "keep-alive: two requests, one connection ($n)" test "$n" = 1
n=$(curl -s -o /dev/null -o /dev/null -w '%{num_connects}\n' "$GW/s/$A/1" "$GW/s/$B/2" | awk '{s += $1} END {print s}')
expect "per-request routing on one client connection ($n)" test "$n" = 1
# the upstream pool: a client that asks for `Connection: close` leaves its clean upstream
# connection to the next client of the same sandbox (nginx's `upstream { keepalive; }`); the
# hop-by-hop `Connection: close` is not forwarded, the client's own connection is still closed
p1=$(curl -fsS -H "Connection: close" "$GW/s/$A/peer")
p2=$(curl -fsS -H "Connection: close" "$GW/s/$A/peer")
expect "Connection: close is not forwarded ($p1)" grep -q "connection=-" <<<"$p1"
expect "the next client reuses the idle upstream connection ($p1 / $p2)" \
	test "${p1%% *}" = "${p2%% *}"
n=$(curl -s -o /dev/null -o /dev/null -w '%{num_connects}\n' -H "Connection: close" \
	"$GW/s/$A/1" "$GW/s/$A/2" | awk '{s += $1} END {print s}')
expect "the client's own connection is closed after Connection: close ($n connects)" test "$n" = 2
# any route change (a freeze, a checkpoint) closes the pooled connections: a sandbox about to be
# checkpointed must have no open connection
route $A 127.0.0.1 "$UP" frozen
route $B 127.0.0.1 "$UP" frozen # (B's connections go to the same upstream port)
est=$(ss -Htn state established "dport = :$UP" | wc -l)
expect "no upstream connection open once the routes are frozen ($est)" test "$est" = 0
route $A 127.0.0.1 "$UP" running
route $B 127.0.0.1 "$UP" running
p3=$(curl -fsS "$GW/s/$A/peer")
expect "after the route change a new upstream connection ($p2 / $p3)" test "${p2%% *}" != "${p3%% *}"
# a hostile sandbox's late, unasked-for answer on a pooled connection never reaches the next
# client: the idle connection is closed as soon as it speaks
out=$(curl -fsS -H "Connection: close" "$GW/s/$A/late-extra")
expect "the late-extra answer itself ($out)" test "$out" = first
sleep 2 # the late answer comes 0.5 s after the first (not a speed claim: just after it)
out=$(curl -fsS -H "Connection: close" "$GW/s/$A/after-late")
expect "the next client gets its own answer, not the late one ($out)" \
	test "$out" = "hello path=/after-late"
head -c 5000000 /dev/urandom >"$T/big"
curl -fsS --data-binary @"$T/big" "$GW/s/$A/echo" -o "$T/big.back"
expect "5 MB sized body both ways intact" cmp "$T/big" "$T/big.back"
curl -fsS -H "Transfer-Encoding: chunked" --data-binary @"$T/big" "$GW/s/$A/echo" -o "$T/big.back2"
expect "chunked request body intact" cmp "$T/big" "$T/big.back2"
expect "chunked response passes" test "$(curl -fsS "$GW/s/$A/chunked")" = "one-two-three"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 20000 /dev/zero | tr '\0' a)" "$GW/s/$A/")
expect "20 KB header: 431" test "$code" = 431
out=$(printf 'GET / HTTP/1.1\r\nBad Header: x\r\n\r\n' | nc -q 2 127.0.0.1 "$GW_PORT" | head -1)
expect "malformed request: 400 ($out)" grep -q " 400 " <<<"$out"
out=$(python3 - "$GW_PORT" "$A" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(("GET /ws HTTP/1.1\r\nHost: %s.warren.localhost\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n" % sys.argv[2]).encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
s.sendall(b"ping-through-tunnel")
got = b""
while len(got) < 19:
    got += s.recv(100)
print(head.split(b"\r\n")[0].decode(), got.decode())
PY
)
expect "Upgrade tunnel echoes ($out)" grep -q "101.*ping-through-tunnel" <<<"$out"
# a hung upstream request does not hold up the others
# (functional, not a speed claim: the 20 are answered while the hung one is still open; the
# upstream holds /hang for 30 s and curl gives up after 20, so a gateway that served the 20 only
# after the hung one would find it gone)
curl -s --max-time 20 "$GW/s/$A/hang" >/dev/null &
hung=$!
sleep 0.5
expect "the /hang request is in flight" kill -0 "$hung"
t0=$(date +%s%N)
for i in $(seq 20); do
	out=$(curl -fsS --max-time 15 "$GW/s/$B/q$i") || fail "request $i beside the hung one"
	[ "$out" = "hello path=/q$i" ] || fail "request $i beside the hung one: $out"
done
t1=$(date +%s%N)
expect "20 requests answered beside a hung one, which is still open ($(((t1 - t0) / 1000000)) ms)" kill -0 "$hung"
kill $hung 2>/dev/null || true
# failed route: 502 with the reason
route $B 127.0.0.1 "$UP" failed 0 "its app exited with status 3"
out=$(curl -s -w ' %{http_code}' "$GW/s/$B/")
expect "failed route: 502 with reason ($out)" grep -q "exited with status 3.* 502" <<<"$(echo $out)"
# starting route to a closed port: held, retried, 504 at the start timeout
C=cccccccccccc
FREE=$((GW_PORT + 2000))
route $C 127.0.0.1 "$FREE" starting 1000
t0=$(date +%s%N)
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$GW/s/$C/")
t1=$(date +%s%N)
expect "starting route that never answers: 504" test "$code" = 504
# held, not refused at once: the 504 comes no sooner than the route's start timeout (the hold
# starts when the gateway reads the request, after curl's clock started). No upper bound here
# but curl's 10 s: speed belongs in bench/.
expect "the 504 came after the 1 s start timeout ($(((t1 - t0) / 1000000)) ms)" test $(((t1 - t0) / 1000000)) -ge 1000
# starting route whose app comes up while the request is held
route $C 127.0.0.1 "$FREE" starting 10000
curl -s --max-time 10 "$GW/s/$C/late" >"$T/late" 2>&1 &
late=$!
sleep 0.7
expect "the request is held while nothing listens (not answered yet)" kill -0 "$late"
listening=$(ss -Hltn "sport = :$FREE")
expect "nothing listens on the app's port yet" test -z "$listening"
python3 "$SOURCE/tests/helpers/upstream.py" "$FREE" &
PIDS+=($!)
wait "$late" || fail "held request: curl failed: $(cat "$T/late")"
expect "held request answered once the app is up ($(cat "$T/late"))" grep -q "hello path=/late" "$T/late"
# a route whose runtime is not up yet is not probed: its app answering changes nothing until
# SetRoute says the runtime runs
D=dddddddddddd
route $D 127.0.0.1 "$FREE" booting 1500
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$GW/s/$D/")
expect "a booting route is held and times out although a server listens ($code)" test "$code" = 504
route $D 127.0.0.1 "$FREE" starting 10000
out=$(curl -s --max-time 10 "$GW/s/$D/up")
expect "once its runtime is up it is probed and answers ($out)" grep -q "hello path=/up" <<<"$out"
expect "remove route" grep -q ok <<<"$($POKE "$SOCK" removeroute $C)"
code=$(curl -s -o /dev/null -w '%{http_code}' "$GW/s/$C/")
expect "removed route: not routed (503: no supervisor connected)" test "$code" = 503
