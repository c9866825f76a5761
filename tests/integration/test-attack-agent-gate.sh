#!/bin/bash
# The agent gate: port 49983 (AGENT_PROTO_ENVD_PORT, common/agent-protocol.h) of a sandbox (warren-agent, E2B's envd API: a shell in the sandbox)
# is reachable through the gateway by E2B's routing headers, and the gateway serves every local
# user. It must answer 403 unless the route is the E2B control plane's (agent_api: E2B's own
# access token, checked by the agent) or the request carries the sandbox's own agent token.
#   raw (a stand-in agent on 127.0.0.2:49983, routes pushed with ipc-poke): no token, a wrong
#       one, one of another length, the right one sent twice, another sandbox's token, all 403
#       and nothing reaches the agent; the right token gets through (the positive control) and
#       is not forwarded; an agent_api route needs none; a malformed token in a route push is
#       refused by the gateway;
#   real (gVisor sandboxes, the supervisor; a request that passes the gate gets whatever is
#       behind it, the agent or, in a tree without its mount point, 502; a refused one gets
#       403, and the raw part above shows what passes reaches the agent): the creator reads
#       AgentToken and passes the gate with it; `nobody` (refused by the bus) and a second user of group warren
#       (refused by the supervisor) cannot read it and are refused by the gateway with no token,
#       a guessed one or their own sandbox's; a sandbox created by the E2B control plane's user
#       answers without one; a restarted supervisor keeps each sandbox's token.
source "$(dirname "$0")/lib.sh"
SOCK=$T/gw/gateway.sock
AG=127.0.0.2
ULOG=$T/agent-requests.log
: >"$ULOG"
UPSTREAM_ADDR=$AG python3 "$SOURCE/tests/helpers/upstream.py" 49983 "$ULOG" 2>>"$T/upstream.log" &
PIDS+=($!)
wait_for 10 curl -fsS "http://$AG:49983/" >/dev/null || fail "stand-in agent did not start"
: >"$ULOG"

warren_start
TOK_A=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
TOK_B=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
A=aaaaaaaaaaaa B=bbbbbbbbbbbb E=eeeeeeeeeeee
IPC_POKE_AGENT_TOKEN=$TOK_A $POKE "$SOCK" setroute $A $AG 8080 running | grep -q ok || fail "route A"
IPC_POKE_AGENT_TOKEN=$TOK_B $POKE "$SOCK" setroute $B $AG 8080 running | grep -q ok || fail "route B"
IPC_POKE_AGENT_API=1 $POKE "$SOCK" setroute $E $AG 8080 running | grep -q ok || fail "route E"

# code ID USER [HEADERS...]: the HTTP status of GET /headers on ID's agent port, as USER
# (its body in $T/body, written by root: the user cannot write in $T)
code() {
	local out
	out=$(setpriv --reuid="$2" --regid="$(id -g "$2")" --clear-groups curl -s \
		-w '\n%{http_code}' --max-time 10 -H "E2b-Sandbox-Id: $1" -H 'E2b-Sandbox-Port: 49983' \
		"${@:3}" "$GW/headers")
	sed '$d' <<<"$out" >"$T/body"
	tail -n1 <<<"$out"
}
H=X-Warren-Agent-Token
# the token with its last digit changed (a fixed digit would be the token itself 1 time in 16)
WRONG_A=${TOK_A%?}$(tr 0-9a-f 1-9a-f0 <<<"${TOK_A: -1}")
[ "$WRONG_A" != "$TOK_A" ] || fail "the wrong token is the token"
for u in nobody warren; do
	expect "raw: $u with no token: 403" test "$(code $A $u)" = 403
	expect "raw: $u with a wrong token: 403" test "$(code $A $u -H "$H: $WRONG_A")" = 403
	expect "raw: $u with a prefix of the token: 403" test "$(code $A $u -H "$H: ${TOK_A:0:32}")" = 403
	expect "raw: $u with the token and more: 403" test "$(code $A $u -H "$H: ${TOK_A}00")" = 403
	expect "raw: $u with another sandbox's token: 403" test "$(code $A $u -H "$H: $TOK_B")" = 403
	expect "raw: $u with an empty token: 403" test "$(code $A $u -H "$H;")" = 403
	expect "raw: $u with the token twice: 403" \
		test "$(code $A $u -H "$H: $TOK_A" -H "$H: $TOK_A")" = 403
done
expect "raw: no refused request reached the agent" test ! -s "$ULOG"
expect "raw: the right token gets through (positive control)" \
	test "$(code $A nobody -H "$H: $TOK_A")" = 200
expect "raw: the token is not forwarded to the sandbox" sh -c \
	"grep -qx e2b-sandbox-id $T/body && ! grep -qi x-warren-agent-token $T/body"
expect "raw: the token's header name is case-blind" \
	test "$(code $B nobody -H "x-warren-agent-token: $TOK_B")" = 200
expect "raw: an agent_api route needs no token" test "$(code $E nobody)" = 200
expect "raw: the template's own port stays open without a token" test "$(curl -s -o /dev/null \
	-w '%{http_code}' --max-time 10 -H "E2b-Sandbox-Id: $A" -H 'E2b-Sandbox-Port: 8080' \
	"$GW/")" != 403
for bad in short0123 "${TOK_A}${TOK_A}x" "$(tr a-f A-F <<<"$TOK_A")" "${TOK_A:0:40} ${TOK_A:0:20}"; do
	out=$(IPC_POKE_AGENT_TOKEN=$bad $POKE "$SOCK" setroute $A $AG 8080 running 2>&1 || true)
	expect "raw: the gateway refuses the agent token '$bad' in a route ($out)" \
		grep -qi "agent token" <<<"$out"
done
expect "raw: and keeps the route's token" test "$(code $A nobody -H "$H: $TOK_A")" = 200
$POKE "$SOCK" removeroute $A >/dev/null; $POKE "$SOCK" removeroute $B >/dev/null
$POKE "$SOCK" removeroute $E >/dev/null

# --- real sandboxes, real agents
getent passwd warren-test-op >/dev/null ||
	useradd --system --no-create-home --shell /usr/sbin/nologin -G warren warren-test-op
as() { setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups "${@:2}"; }
token_of() { # token_of USER ID: AgentToken as USER
	as "$1" busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$2" \
		org.warren.Warren1.Sandbox AgentToken 2>&1 | sed -n 's/^s "\(.*\)"$/\1/p'
}
create_as() { # create_as USER: a running web sandbox of USER's
	as "$1" busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager \
		CreateSandbox sa{sv} web 1 wait b true | awk '{print $2}' | tr -d '"'
}
hcode() { # hcode ID USER [HEADERS...]: /health on ID's agent, as USER
	setpriv --reuid="$2" --regid="$(id -g "$2")" --clear-groups curl -s -o /dev/null \
		-w '%{http_code}' --max-time 10 -H "E2b-Sandbox-Id: $1" -H 'E2b-Sandbox-Port: 49983' \
		"${@:3}" "$GW/health"
}
a=$(create_as warren-test-op)
sandbox_id_ok() { [[ $1 =~ ^[0-9a-f]{12}$ ]]; }
sandbox_id_ok "$a" || fail "warren-test-op could not create a sandbox ($a)"
b=$(create_as root)
sandbox_id_ok "$b" || fail "root could not create a sandbox ($b)"
ta=$(token_of warren-test-op "$a")
expect "the creator reads its sandbox's agent token" grep -qE '^[0-9a-f]{64}$' <<<"$ta"
tb=$(token_of root "$b")
expect "root reads its own" grep -qE '^[0-9a-f]{64}$' <<<"$tb"
expect "tokens differ" test "$ta" != "$tb"
expect "root reads another user's sandbox's token too" test "$(token_of root "$a")" = "$ta"
passes() { [ "$1" != 403 ] && [ "$1" != 000 ]; } # through the gate, to the agent or a 502
expect "the creator passes the gate with it (positive control)" \
	passes "$(hcode "$a" warren-test-op -H "$H: $ta")"
out=$(as nobody busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$a" \
	org.warren.Warren1.Sandbox AgentToken 2>&1 || true)
expect "nobody cannot read the token ($out)" grep -qi "denied\|access\|rejected" <<<"$out"
grep -qE '[0-9a-f]{64}' <<<"$out" && fail "nobody read an agent token"
out=$(as warren-test-op busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$b" \
	org.warren.Warren1.Sandbox AgentToken 2>&1 || true)
expect "another user of group warren cannot read root's ($out)" grep -qi "denied" <<<"$out"
grep -qE '[0-9a-f]{64}' <<<"$out" && fail "another user read an agent token"
for u in nobody warren-test-op; do
	expect "$u is refused root's agent with no token" test "$(hcode "$b" $u)" = 403
	expect "$u is refused with a guessed token" test "$(hcode "$b" $u -H "$H: $TOK_A")" = 403
done
expect "warren-test-op's own token does not open root's sandbox" \
	test "$(hcode "$b" warren-test-op -H "$H: $ta")" = 403
expect "root's token opens root's (positive control)" passes "$(hcode "$b" nobody -H "$H: $tb")"

# the E2B control plane's sandboxes keep E2B's own model: no Warren token needed
e=$(create_as warren-e2b)
sandbox_id_ok "$e" || fail "warren-e2b could not create a sandbox ($e)"
expect "an E2B control plane sandbox's agent port needs no Warren token" passes "$(hcode "$e" nobody)"

# a restarted supervisor re-adopts the sandboxes with the same tokens
stop_pid "$PID_supervisor"
start_supervisor
expect "after a restart the token is the same" wait_for 30 sh -c \
	"test \"\$(busctl --system call org.warren.Warren1 /org/warren/Warren1/sandbox/$a org.warren.Warren1.Sandbox AgentToken 2>/dev/null)\" = 's \"$ta\"'"
expect "and still opens the gate" wait_for 30 sh -c "hc=\$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H 'E2b-Sandbox-Id: $a' -H 'E2b-Sandbox-Port: 49983' -H '$H: $ta' $GW/health); [ \$hc != 403 ] && [ \$hc != 000 ] && [ \$hc != 503 ]"
expect "while no token still gets 403" test "$(hcode "$a" nobody)" = 403
for id in "$a" "$b" "$e"; do call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Destroy >/dev/null || true; done
log "PASS"
