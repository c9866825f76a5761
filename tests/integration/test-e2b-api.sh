#!/bin/bash
# The E2B control plane (warren-e2b-api) driven by the published, unmodified e2b SDK (npm e2b,
# pinned in tests/e2b/package.json), configured only by E2B_API_URL, E2B_SANDBOX_URL and
# E2B_API_KEY: create with metadata and timeout, getInfo, list by metadata and state with
# pagination, setTimeout and expiry (killed, or paused with onTimeout pause), pause/connect,
# kill, a bad key refused; what the SDK sees is checked against the supervisor over D-Bus. Then
# what must hold against a hostile HTTP client: no key or a revoked key is 401 with E2B's body,
# control characters and oversized strings never reach D-Bus, bodies are bounded, ids in paths
# are only this daemon's own; records survive a kill -9 of the daemon; its lock-down holds.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/e2b-lib.sh"
# a subnet of the host's own (192.88.99.0/24 on a test link): closed to "on", so to allowOut
# too; read when the daemons start. The allow-lists below use TEST-NET-2 and -3, which must not
# be the host's (this machine's LAN is TEST-NET-1, 192.0.2.0/24)
if ip -4 -o addr | grep -qE ' (198\.51\.100|203\.0\.113|192\.88\.99)\.'; then
	fail "a host interface is on 198.51.100/24, 203.0.113/24 or 192.88.99/24: pick other test ranges"
fi
# (a veth pair: this kernel has no dummy links)
ip link add wtesthost0 type veth peer name wtesthost1 || fail "cannot add the test link"
at_exit 'ip link del wtesthost0 2>/dev/null'
ip addr add 192.88.99.1/24 dev wtesthost0 && ip link set wtesthost0 up || fail "cannot set it up"
warren_start
start_e2b

# --- keys: created by root, stored hashed, shown once ---
KEY=$(warrenctl apikey create sdk-test --api-keys "$KEYS")
expect "apikey create prints an e2b_ key" grep -qE '^e2b_[0-9a-f]{40}$' <<<"$KEY"
expect "the key file is root:warren-e2b 0640" \
	test "$(stat -c '%U:%G %a' "$KEYS")" = "root:warren-e2b 640"
expect "the key itself is not in the file (only its SHA-256)" bash -c "! grep -q '${KEY#e2b_}' '$KEYS'"
expect "its SHA-256 is" grep -q "$(printf '%s' "$KEY" | sha256sum | cut -d' ' -f1)" "$KEYS"
expect "apikey is root's only" bash -c "! setpriv --reuid=nobody --regid=nogroup --clear-groups \
	warrenctl apikey list --api-keys '$KEYS' 2>/dev/null"
KEYID=$(warrenctl apikey list --api-keys "$KEYS" | awk '$3 == "sdk-test" {print $1}')
[ -n "$KEYID" ] || fail "apikey list does not show the key"

status() { curl -s -o "$T/body" -w '%{http_code}' "$@"; }
expect "no key: 401" test "$(status "$API/v2/sandboxes")" = 401
expect "401 body is E2B's {code, message}" python3 -c "
import json,sys; b=json.load(open('$T/body')); sys.exit(not (b['code']==401 and b['message']))"
expect "a valid key: 200" test "$(status -H "X-API-Key: $KEY" "$API/v2/sandboxes")" = 200

# --- the SDK, unmodified ---
RUN=run$$
OUT=$T/sdk.out
export E2B_API_URL=$API E2B_SANDBOX_URL=$GW E2B_API_KEY=$KEY
(cd "$E2B_DIR" && TEMPLATE=$TEMPLATE RUN=$RUN PAUSE_HOLD=1500 timeout 300 node control-plane.mjs \
	>"$OUT" 2>&1) &
SDK=$!
# while the SDK holds its sandbox paused, Warren must show it frozen
wait_for 120 grep -q '^paused: ' "$OUT" || { cat "$OUT" >&2; fail "the SDK never paused a sandbox"; }
PAUSED=$(sed -n 's/^paused: //p' "$OUT")
expect "a paused E2B sandbox is frozen in Warren" has_state "$PAUSED" frozen
wait "$SDK" || { cat "$OUT" >&2; fail "the SDK script failed"; }
sed 's/^/  sdk /' "$OUT" >&2
read -r A B C < <(sed -n 's/^ids: //p' "$OUT")
read -r F1 F2 < <(sed -n 's/^forks: //p' "$OUT")
expect "the SDK forked two children" test -n "$F2"
expect "the fork's image tag is removed once its children run" \
	wait_for 20 bash -c "! busctl --system call org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager ListTags | grep -q e2bfork-"
for id in $A $B $C $F1 $F2; do
	expect "sandbox $id is gone from Warren too" bash -c "! busctl --system get-property \
		org.warren.Warren1 /org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox State"
done

# --- end to end with the agent (envd API) in a base sandbox: env vars and the token by /init,
# commands, files, a request without the token refused, pause keeping a process's memory ---
# The agent is the first process of a gVisor sandbox (netnsd's default) whose tree has its
# mount point (warren-template-build makes it); the SDK sends no `secure`, which means true.
[ -x /var/lib/warren/templates/base/rootfs/usr/bin/python3 ] ||
	fail "the base template is not built (warren-template-build base)"
(cd "$E2B_DIR" && TEMPLATE=base timeout 300 node agent.mjs >"$T/agent.out" 2>&1) ||
	{ cat "$T/agent.out" >&2; fail "the SDK's agent script failed"; }
sed 's/^/  sdk /' "$T/agent.out" >&2

# --- a record survives the daemon's kill -9; its lifetime is the one it had ---
hdr=(-H "X-API-Key: $KEY" -H 'Content-Type: application/json')
code=$(status "${hdr[@]}" -d '{"templateID":"'"$TEMPLATE"'","timeout":600,"metadata":{"k":"v"}}' "$API/sandboxes")
[ "$code" = 201 ] || fail "create with curl: $code $(cat "$T/body")"
ID=$(python3 -c "import json; print(json.load(open('$T/body'))['sandboxID'])")
END1=$(curl -fsS "${hdr[@]}" "$API/sandboxes/$ID" | python3 -c 'import json,sys; print(json.load(sys.stdin)["endAt"])')
expect "the state file is the daemon's own, 0600" test "$(stat -c '%U %a' "$T/e2b/sandboxes.json")" = "warren-e2b 600"
kill -KILL "$PID_e2b"
start_e2b
END2=$(curl -fsS "${hdr[@]}" "$API/sandboxes/$ID" | python3 -c 'import json,sys; print(json.load(sys.stdin)["endAt"])')
expect "after a kill -9 and a restart the sandbox keeps its lifetime ($END1)" test "$END1" = "$END2"

# --- allow_internet_access: false creates the sandbox with egress off; true (E2B's default)
# keeps the template's policy, here on (a template with allow_outbound: the positive control) ---
mgr AddTemplate ssasqta{sv} -- e2bout /var/lib/warren/templates/web/rootfs 7 /bin/busybox httpd \
	-f -p 8080 -h /www 8080 67108864 1 allow_outbound b true >/dev/null
egress_of_create() { # egress_of_create JSON-FIELDS: the Egress property of the sandbox made,
	# which is then killed (the state-file checks below count on one record)
	local code id
	code=$(status "${hdr[@]}" -d '{"templateID":"e2bout","timeout":600'"$1"'}' "$API/sandboxes")
	[ "$code" = 201 ] || fail "create ($1): $code $(cat "$T/body")"
	id=$(python3 -c "import json; print(json.load(open('$T/body'))['sandboxID'])")
	sbprop "$id" Egress
	code=$(status -X DELETE "${hdr[@]}" "$API/sandboxes/$id")
	[ "$code" = 204 ] || fail "kill $id: $code"
	wait_for 20 bash -c "! busctl --system get-property org.warren.Warren1 \
		/org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox State" ||
		fail "sandbox $id is not gone from Warren"
}
expect "allow_internet_access true keeps the template's egress (on)" \
	test "$(egress_of_create ',"allow_internet_access":true')" = on
expect "allow_internet_access false: the sandbox's egress is off" \
	test "$(egress_of_create ',"allow_internet_access":false')" = off
# network (E2B's allowOut/denyOut, allowed entries winning): all traffic denied but listed
# addresses is Warren's allow-list; an allowOut alone changes nothing (E2B then allows all)
expect "network denyOut all + allowOut: the sandbox's egress is that allow-list" \
	test "$(egress_of_create ',"network":{"denyOut":["0.0.0.0/0"],"allowOut":["203.0.113.7","198.51.100.0/24"]}')" = "203.0.113.7,198.51.100.0/24"
expect "allow_internet_access false + allowOut: the same" \
	test "$(egress_of_create ',"allow_internet_access":false,"network":{"allowOut":["203.0.113.7"]}')" = 203.0.113.7
# network's other keys pass only when they ask for what Warren does anyway (the positive
# control for the refusals below)
expect "allowOut alone, with what Warren does anyway (public traffic, no rules, no proxy, no host mask), keeps the template's (on)" \
	test "$(egress_of_create ',"network":{"allowOut":["203.0.113.7"],"allowPublicTraffic":true,"rules":{},"egressProxy":null,"maskRequestHost":null}')" = on
# the same through the SDK's own network option (it resolves allowOut/denyOut into the body)
sdk_net=$(cd "$E2B_DIR" && timeout 120 node --input-type=module -e "
import { Sandbox, ALL_TRAFFIC } from 'e2b'
const s = await Sandbox.create('e2bout', { network: { denyOut: [ALL_TRAFFIC], allowOut: ['203.0.113.7', '198.51.100.0/24'] } })
console.log(s.sandboxId)" 2>&1) || fail "the SDK's create with network failed: $sdk_net"
expect "the SDK's network option: allowOut is the sandbox's allow-list" \
	test "$(sbprop "$sdk_net" Egress)" = "203.0.113.7,198.51.100.0/24"
# PUT /sandboxes/{id}/network (the SDK's updateNetwork) replaces the egress, bounded as a
# create's network is: by the template's policy and the host's subnets
upd=$(cd "$E2B_DIR" && timeout 120 node --input-type=module -e "
import { Sandbox, ALL_TRAFFIC } from 'e2b'
await Sandbox.updateNetwork('$sdk_net', { denyOut: [ALL_TRAFFIC], allowOut: ['203.0.113.9'] })
console.log('updated')" 2>&1) || fail "the SDK's updateNetwork failed: $upd"
expect "updateNetwork: the sandbox's egress is the new allow-list" \
	test "$(sbprop "$sdk_net" Egress)" = 203.0.113.9
put_net() { status -X PUT "${hdr[@]}" --data-binary "$2" "$API/sandboxes/$1/network"; }
code=$(put_net "$sdk_net" '{}')
expect "PUT /network {} (every field cleared) answers 204 ($code)" test "$code" = 204
expect "and gives the template's policy back (on)" test "$(sbprop "$sdk_net" Egress)" = on
code=$(put_net "$sdk_net" '{"allow_internet_access":false}')
expect "PUT /network allow_internet_access false: 204 ($code), egress off" \
	test "$code $(sbprop "$sdk_net" Egress)" = "204 off"
for body in '{"denyOut":["0.0.0.0/0"],"allowOut":["192.88.99.7"]}' \
	'{"denyOut":["0.0.0.0/0"],"allowOut":["169.254.169.254"]}' \
	'{"denyOut":["0.0.0.0/0"],"allowOut":["example.com"]}' '{"httpsPorts":[443]}' \
	'{"allow_internet_access":"no"}' '["0.0.0.0/0"]'; do
	code=$(put_net "$sdk_net" "$body")
	expect "PUT /network $body: 400 ($code), egress unchanged" \
		test "$code $(sbprop "$sdk_net" Egress)" = "400 off"
done
# web's egress is off: a PUT may not open what the operator closed; {} keeps it off
code=$(put_net "$ID" '{"denyOut":["0.0.0.0/0"],"allowOut":["203.0.113.7"]}')
expect "PUT /network beyond the template's policy (off): 400 ($code: $(cat "$T/body"))" \
	test "$code $(sbprop "$ID" Egress)" = "400 off"
code=$(put_net "$ID" '{}')
expect "PUT /network {} on it: 204, still off ($code)" test "$code $(sbprop "$ID" Egress)" = "204 off"
code=$(put_net 0123456789abcdef0123 '{}')
expect "PUT /network of an unknown sandbox: 404 ($code)" test "$code" = 404
code=$(status -X DELETE "${hdr[@]}" "$API/sandboxes/$sdk_net")
[ "$code" = 204 ] || fail "kill $sdk_net: $code"
wait_for 20 bash -c "! busctl --system get-property org.warren.Warren1 \
	/org/warren/Warren1/sandbox/$sdk_net org.warren.Warren1.Sandbox State" ||
	fail "sandbox $sdk_net is not gone from Warren"

# --- hostile input: nothing malformed reaches D-Bus; positive controls first ---
bad() { # bad DESCRIPTION EXPECTED-STATUS BODY
	local n0 n1 code
	n0=$(mgr ListSandboxes | awk '{print $2}')
	code=$(status "${hdr[@]}" --data-binary "$3" "$API/sandboxes")
	n1=$(mgr ListSandboxes | awk '{print $2}')
	expect "$1: $2" test "$code" = "$2"
	expect "$1: no sandbox created ($n0 -> $n1)" test "$n0" = "$n1"
}
bad "metadata value with a newline" 400 '{"templateID":"'"$TEMPLATE"'","metadata":{"a":"x\ny"}}'
bad "metadata value with a C1 control" 400 '{"templateID":"'"$TEMPLATE"'","metadata":{"a":"x\u0085y"}}'
bad "metadata key of 129 bytes" 400 '{"templateID":"'"$TEMPLATE"'","metadata":{"'"$(printf 'k%.0s' {1..129})"'":"v"}}'
bad "65 metadata pairs" 400 "{\"templateID\":\"$TEMPLATE\",\"metadata\":{$(for i in $(seq 65); do printf '"k%d":"v",' "$i"; done | sed 's/,$//')}}"
bad "template name with a slash" 400 '{"templateID":"../web"}'
bad "env var name with a space" 400 '{"templateID":"'"$TEMPLATE"'","envVars":{"A B":"x"}}'
bad "timeout beyond the maximum" 400 '{"templateID":"'"$TEMPLATE"'","timeout":86401}'
bad "network.allowOut with a domain name (not supported: refused, not ignored)" 400 '{"templateID":"'"$TEMPLATE"'","network":{"denyOut":["0.0.0.0/0"],"allowOut":["example.com"]}}'
bad "network.allowOut of all traffic (past Warren's deny list)" 400 '{"templateID":"'"$TEMPLATE"'","network":{"denyOut":["0.0.0.0/0"],"allowOut":["0.0.0.0/0"]}}'
bad "network.allowOut of the cloud metadata address" 400 '{"templateID":"'"$TEMPLATE"'","network":{"denyOut":["0.0.0.0/0"],"allowOut":["169.254.169.254"]}}'
bad "network.denyOut of one range (Warren has allow-lists only)" 400 '{"templateID":"'"$TEMPLATE"'","network":{"denyOut":["10.0.0.0/8"]}}'
bad "network.allowOut of 17 entries" 400 '{"templateID":"'"$TEMPLATE"'","network":{"denyOut":["0.0.0.0/0"],"allowOut":['"$(for i in $(seq 17); do printf '"192.0.2.%d",' "$i"; done | sed 's/,$//')"']}}'
bad "network.allowOut with a newline" 400 '{"templateID":"'"$TEMPLATE"'","network":{"denyOut":["0.0.0.0/0"],"allowOut":["1.2.3.4\n"]}}'
# the template's egress is the most a client's network may open: web's is off (checked), so an
# allowOut of public addresses on it would open what the operator closed; a list template's
# entries bound a client's list (e2bout's on took the same allowOut above: the positive control)
mgr GetTemplate s "$TEMPLATE" | grep -q '"egress" s "off"' || fail "$TEMPLATE's egress is not off"
bad "network.allowOut on a template whose egress is off" 400 '{"templateID":"'"$TEMPLATE"'","network":{"denyOut":["0.0.0.0/0"],"allowOut":["203.0.113.7"]}}'
expect "the refusal names the template's policy" grep -q "more than the template's (off)" "$T/body"
bad "network.allowOut of a subnet of this host's (on is closed to it)" 400 '{"templateID":"e2bout","network":{"denyOut":["0.0.0.0/0"],"allowOut":["192.88.99.7"]}}'
expect "the refusal says why" grep -q "overlaps a subnet of this host" "$T/body"
mgr AddTemplate ssasqta{sv} -- e2blist /var/lib/warren/templates/web/rootfs 7 /bin/busybox httpd \
	-f -p 8080 -h /www 8080 67108864 1 egress s 203.0.113.0/24 >/dev/null
bad "network.allowOut beyond a list template's entries" 400 '{"templateID":"e2blist","network":{"denyOut":["0.0.0.0/0"],"allowOut":["203.0.113.7","198.51.100.1"]}}'
mgr RemoveTemplate s e2blist >/dev/null
bad "network not an object" 400 '{"templateID":"'"$TEMPLATE"'","network":["0.0.0.0/0"]}'
# what Warren does not do is refused, not dropped (a security setting silently ignored)
bad "network.allowPublicTraffic false (the gateway asks no traffic token)" 400 '{"templateID":"'"$TEMPLATE"'","network":{"allowPublicTraffic":false}}'
expect "the refusal names the setting and why" grep -q "allowPublicTraffic only true is supported" "$T/body"
bad "network.maskRequestHost (the gateway forwards Host as sent)" 400 '{"templateID":"'"$TEMPLATE"'","network":{"maskRequestHost":"${PORT}-x.example.com"}}'
bad "network.rules (no egress HTTP proxy)" 400 '{"templateID":"'"$TEMPLATE"'","network":{"denyOut":["0.0.0.0/0"],"allowOut":["203.0.113.7"],"rules":{"203.0.113.7":[{"transform":{"headers":{"a":"b"}}}]}}}'
bad "network.egressProxy (no tunnel)" 400 '{"templateID":"'"$TEMPLATE"'","network":{"egressProxy":{"address":"203.0.113.7:1080"}}}'
bad "network with an unknown key" 400 '{"templateID":"'"$TEMPLATE"'","network":{"allowout":["203.0.113.7"]}}'
bad "unknown template" 404 '{"templateID":"nosuchtemplate"}'
bad "duplicate keys" 400 '{"templateID":"'"$TEMPLATE"'","templateID":"app"}'
head -c $((1024 * 1024 + 16)) /dev/zero | tr '\0' ' ' >"$T/big"
expect "a body over 1 MiB is refused" test "$(status "${hdr[@]}" --data-binary @"$T/big" "$API/sandboxes")" = 413
expect "a metadata filter with a control character is refused" \
	test "$(status "${hdr[@]}" "$API/v2/sandboxes?metadata=a%3Dx%250Ay")" = 400
expect "a bad nextToken is refused" test "$(status "${hdr[@]}" "$API/v2/sandboxes?nextToken=x")" = 400
# a sandbox Warren has but E2B did not create is not E2B's
OTHER=$(create "$TEMPLATE")
expect "a sandbox created over D-Bus is not reachable by id" test "$(status "${hdr[@]}" "$API/sandboxes/$OTHER")" = 404
expect "nor killable" test "$(status -X DELETE "${hdr[@]}" "$API/sandboxes/$OTHER")" = 404
expect "and still there" sbprop "$OTHER" State
expect "a path id that is no Warren id is 404" test "$(status "${hdr[@]}" "$API/sandboxes/..%2F..%2Fetc")" = 404
# the state file is validated on load: a record with a bad id is dropped, the good one kept
kill -KILL "$PID_e2b"
python3 - "$T/e2b/sandboxes.json" <<'PY'
import json, sys
p = sys.argv[1]; d = json.load(open(p))
bad = dict(d["sandboxes"][0]); bad["id"] = "../../etc/x"
bad2 = dict(d["sandboxes"][0]); bad2["id"] = "0123456789ab"; bad2["metadata"] = {"a": "x\ny"}
d["sandboxes"] += [bad, bad2]
open(p, "w").write(json.dumps(d))
PY
start_e2b
expect "a damaged state file: the valid record is kept" test "$(status "${hdr[@]}" "$API/sandboxes/$ID")" = 200
expect "the record with control characters is dropped" test "$(status "${hdr[@]}" "$API/sandboxes/0123456789ab")" = 404
expect "the loader said so" grep -q "record 2 dropped" "$T/e2b.log"

# --- revoke: the next request is 401, without a restart ---
warrenctl apikey revoke "$KEYID" --api-keys "$KEYS"
expect "a revoked key: 401" test "$(status "${hdr[@]}" "$API/v2/sandboxes")" = 401
KEY2=$(warrenctl apikey create other --api-keys "$KEYS")
expect "a new key works" test "$(status -H "X-API-Key: $KEY2" "$API/sandboxes/$ID")" = 200
# a key file others could write is not trusted: no key is accepted from it
chmod 0666 "$KEYS"
expect "a world-writable key file: 401" test "$(status -H "X-API-Key: $KEY2" "$API/sandboxes/$ID")" = 401
chmod 0640 "$KEYS"
expect "fixed again: 200" test "$(status -H "X-API-Key: $KEY2" "$API/sandboxes/$ID")" = 200
expect "kill over HTTP" test "$(status -X DELETE -H "X-API-Key: $KEY2" "$API/sandboxes/$ID")" = 204

# --- out of fds: the listener pauses instead of spinning, and serves again afterwards ---
kill "$PID_e2b"
wait "$PID_e2b" 2>/dev/null || true
E2B_WRAP="prlimit --nofile=48:48" start_e2b
E2BPID=$(pgrep -f "warren-e2b-api --listen 127.0.0.1:$E2B_PORT" | head -1)
cpu() { awk '{print $14 + $15}' "/proc/$E2BPID/stat"; }
python3 - "$E2B_PORT" "$T/flood.ready" <<'PY' &
import socket, sys, time
conns = []
for _ in range(100):
    s = socket.socket(); s.connect(("127.0.0.1", int(sys.argv[1]))); conns.append(s)
open(sys.argv[2], "w").close()
time.sleep(4)
PY
FLOOD=$!
wait_for 20 test -e "$T/flood.ready" || fail "the flood did not connect"
c0=$(cpu)
sleep 2
c1=$(cpu)
expect "with its fds exhausted the daemon does not spin ($((c1 - c0)) ticks of CPU in 2 s)" test $((c1 - c0)) -lt 50
wait "$FLOOD" || true
expect "when the flood is gone it answers again" wait_for 20 curl -fsS --max-time 2 "$API/health"

# --- the privilege split: warren-e2b reaches the supervisor's D-Bus API and nothing else ---
reach() { # reach USER SOCKET: USER can connect to the helper socket
	setpriv --reuid="$1" --regid="$1" --clear-groups /usr/bin/python3 -c "
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect(sys.argv[1])" "$2" 2>/dev/null
}
expect "user warren (the supervisor) may connect to netnsd's socket (control)" reach warren "$T/netnsd.sock"
expect "warren-e2b may not connect to netnsd's socket" bash -c "$(declare -f reach); ! reach warren-e2b '$T/netnsd.sock'"
expect "nor to snapshotd's" bash -c "$(declare -f reach); ! reach warren-e2b '$T/snapshotd.sock'"
expect "nor read the supervisor's state" bash -c "! setpriv --reuid=warren-e2b --regid=warren-e2b --clear-groups ls '$T/state' >/dev/null 2>&1"

# --- lock-down: no capabilities, its own user, a filter that kills ---
expect "the daemon runs as warren-e2b" test "$(ps -o user= -p "$(pgrep -P "$PID_e2b" -f warren-e2b-api || echo "$PID_e2b")" | tr -d ' ')" = warren-e2b
p=$(pgrep -f "warren-e2b-api --listen 127.0.0.1:$E2B_PORT" | head -1)
expect "no capabilities (CapEff 0)" grep -q "^CapEff:[[:space:]]*0000000000000000$" "/proc/$p/status"
expect "seccomp filter on" grep -q "^Seccomp:[[:space:]]*2$" "/proc/$p/status"
# (output to a pipe: glibc asks a character device such as /dev/null whether it is a terminal)
out=$(setpriv --reuid=warren-e2b --regid=warren-e2b --clear-groups "$LIBEXEC/warren-e2b-api" \
	--seccomp-probe allowed) || fail "an allowed call after lock-down killed it"
expect "an allowed call passes the filter" grep -q "allowed survived" <<<"$out"
set +e
out=$(setpriv --reuid=warren-e2b --regid=warren-e2b --clear-groups "$LIBEXEC/warren-e2b-api" \
	--seccomp-probe forbidden 2>&1)
rc=$?
set -e
expect "a forbidden call (ptrace) is killed by the filter ($rc)" test "$rc" = $((128 + 31))
log "PASS"
