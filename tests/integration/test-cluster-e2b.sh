#!/bin/bash
# The E2B front door on a cluster (docs/MULTIHOST.md) on the three hosts of cluster-lib.sh, each
# running warren-e2b-api with --cluster (its clusterd places, its catalog says where a sandbox
# is). The published, unmodified e2b SDK is pointed at h1's control plane and h1's gateway only
# (tests/e2b/cluster.mjs): its creates land on more than one host (checked over each host's own
# bus), commands run and files move in each sandbox, wherever it is, through h1's gateway; list
# merges every host's; getInfo, setTimeout, pause/connect and kill of another host's sandbox
# work through h1. Then what a client must not do: reach a host's control plane as a peer
# without the peer token (none, a wrong one, the cluster key itself, two), make a peer's request
# be forwarded again; and the cluster key never leaves clusterd and e2b-api (not in an answer).
# Last, two front doors (h2, h3) creating at once, forwarding to each other, fill the cluster
# (two on every host), a seventh create is refused 503 (full), and h1 lists and kills all six.
E2B_CLUSTER=1
source "$(dirname "$0")/cluster-lib.sh"
E2B_TEMPLATE=base
source "$(dirname "$0")/e2b-lib.sh"
[ -x /var/lib/warren/templates/base/rootfs/usr/bin/python3 ] ||
	fail "the base template is not built (warren-template-build base)"

E2B_KEY=$(warrenctl apikey create cluster-test --api-keys "$KEYS")
grep -qE '^e2b_[0-9a-f]{40}$' <<<"$E2B_KEY" || fail "no API key"
# host I's control plane: the status; the body in $TM/e2b.out
api() { # api I CURL ARGS... (the path last)
	local i=$1
	shift
	in_ns "h$i" curl -s --max-time 60 -o "$TM/e2b.out" -w '%{http_code}' "${@:1:$#-1}" \
		"http://$NET.$i:$E2B_PORT${*: -1}"
}
e2b_published() { fd 1 GET /v1/sandboxes >/dev/null && jq_ 1 "' '.join(sorted(h for h, r in \
	d['hosts'].items() if r.get('e2b') == 'http://$NET.%s:$E2B_PORT' % h[1:]))" | grep -qx 'h1 h2 h3'; }
expect "each host publishes its E2B control plane in its host record" wait_for 30 e2b_published

# --- the SDK through h1 only ---
RUN=run$$
OUT=$TM/sdk.out
rc=0
(cd "$E2B_DIR" && in_ns h1 env E2B_API_URL="http://$NET.1:$E2B_PORT" \
	E2B_SANDBOX_URL="http://$NET.1:$GW_PORT" E2B_API_KEY="$E2B_KEY" TEMPLATE=base RUN=$RUN \
	COUNT=4 timeout 400 node cluster.mjs >"$OUT" 2>&1) || rc=$?
sed 's/^/  sdk /' "$OUT" >&2
[ $rc = 0 ] || fail "the SDK script failed ($rc)"
read -r -a IDS < <(sed -n 's/^ids: //p' "$OUT")
LEFT=$(sed -n 's/^left: //p' "$OUT")
expect "four sandboxes were made" test "${#IDS[@]}" = 4

# which host ran each: its own supervisor's list (the killed ones are gone by now; the one left
# is checked here, and each host's E2B log names the ones it created)
declare -A HOST_OF
for id in "${IDS[@]}"; do
	for i in 1 2 3; do
		grep -q "Sandbox $id created from base" "$TM/h$i/e2b.log" && HOST_OF[$id]=h$i
	done
	log "sandbox $id was created on ${HOST_OF[$id]:-?}"
	[ -n "${HOST_OF[$id]:-}" ] || fail "no host's control plane created $id"
done
HOSTS_USED=$(printf '%s\n' "${HOST_OF[@]}" | sort -u | tr '\n' ' ')
expect "the creates through h1 landed on more than one host ($HOSTS_USED)" \
	test "$(printf '%s\n' "${HOST_OF[@]}" | sort -u | wc -l)" -ge 2
expect "h1's control plane forwarded the creates it did not keep" \
	grep -q "created on host h[23]" "$TM/h1/e2b.log"
expect "the sandbox left ($LEFT) runs on ${HOST_OF[$LEFT]}, as its own supervisor says" \
	grep -q "$LEFT" <<<"$(hbus "${HOST_OF[$LEFT]#h}" busctl --system call org.warren.Warren1 /org/warren/Warren1 \
		org.warren.Warren1.Manager ListSandboxes)"
for id in "${IDS[@]}"; do
	[ "$id" = "$LEFT" ] && continue
	hi=${HOST_OF[$id]#h}
	expect "killed through h1, $id is gone from ${HOST_OF[$id]}'s supervisor" bash -c "! \
		DBUS_SYSTEM_BUS_ADDRESS=unix:path=$TM/h$hi/bus.sock busctl --system call \
		org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListSandboxes \
		| grep -q $id"
done
# the checks below need a sandbox of another host: the one left, or one created with curl
# through h1 (h1 has two slots: a third create at most is placed elsewhere)
host_of() {
	local i
	for i in 1 2 3; do grep -q "Sandbox $1 created from base" "$TM/h$i/e2b.log" && echo "$i"; done
	return 0
}
REMOTE=$LEFT
for try in 1 2 3 4; do
	[ "$(host_of "$REMOTE")" != 1 ] && break
	log "sandbox $REMOTE is h1's: another one for the remote checks (try $try)"
	api 1 -H "X-API-Key: $E2B_KEY" -X DELETE "/sandboxes/$REMOTE" >/dev/null
	st=$(api 1 -H "X-API-Key: $E2B_KEY" -H 'Content-Type: application/json' \
		-d '{"templateID":"base","timeout":300}' /sandboxes)
	[ "$st" = 201 ] || fail "create with curl through h1: $st $(cat "$TM/e2b.out")"
	REMOTE=$(python3 -c "import json; print(json.load(open('$TM/e2b.out'))['sandboxID'])")
done
lh=$(host_of "$REMOTE")
if [ -z "$lh" ] || [ "$lh" = 1 ]; then fail "no sandbox of another host for the remote checks"; fi
log "remote checks on sandbox $REMOTE of h$lh"

# --- the peer routes are closed to clients ---
PEER=$(printf 'warren-e2b-peer\n%s' "$KEY" | sha256sum | cut -d' ' -f1)
# a peer's request carries the SHA-256 of its client's API key, checked by the owner
CK=$(printf '%s' "$E2B_KEY" | sha256sum | cut -d' ' -f1)
rh=$lh
expect "another host's control plane without any key: 401" \
	test "$(api "$rh" "/sandboxes/$REMOTE")" = 401
expect "with a wrong peer token: 401" \
	test "$(api "$rh" -H "X-Warren-E2b-Peer: $(printf '0%.0s' $(seq 64))" "/sandboxes/$REMOTE")" = 401
expect "with the cluster key itself as the peer token: 401" \
	test "$(api "$rh" -H "X-Warren-E2b-Peer: $KEY" "/sandboxes/$REMOTE")" = 401
expect "a wrong peer token with a valid API key: 401 (not taken for a client's request)" \
	test "$(api 1 -H "X-API-Key: $E2B_KEY" -H "X-Warren-E2b-Peer: x" "/sandboxes/$REMOTE")" = 401
expect "two peer tokens, the right one among them: 401" \
	test "$(api "$rh" -H "X-Warren-E2b-Peer: $PEER" -H "X-Warren-E2b-Peer: $PEER" \
		"/sandboxes/$REMOTE")" = 401
expect "the right peer token without the client's key digest: 401" \
	test "$(api "$rh" -H "X-Warren-E2b-Peer: $PEER" "/sandboxes/$REMOTE")" = 401
expect "the right peer token for a client key unknown to the owner: 403" \
	test "$(api "$rh" -H "X-Warren-E2b-Peer: $PEER" -H "X-Warren-E2b-Client-Key: $(printf \
		'e2b_%040d' 0 | sha256sum | cut -d' ' -f1)" "/sandboxes/$REMOTE")" = 403
expect "the right peer token and a known client key open the owner's own record (200)" \
	test "$(api "$rh" -H "X-Warren-E2b-Peer: $PEER" -H "X-Warren-E2b-Client-Key: $CK" \
		"/sandboxes/$REMOTE")" = 200
expect "a peer's request to a host that does not hold the sandbox is not forwarded again (404)" \
	test "$(api 1 -H "X-Warren-E2b-Peer: $PEER" -H "X-Warren-E2b-Client-Key: $CK" \
		"/sandboxes/$REMOTE")" = 404
expect "a client's request for it through h1 is (200)" \
	test "$(api 1 -H "X-API-Key: $E2B_KEY" "/sandboxes/$REMOTE")" = 200
expect "a malformed id through h1: 404, nothing asked of the cluster" \
	test "$(api 1 -H "X-API-Key: $E2B_KEY" "/sandboxes/..%2f..%2fv1")" = 404
expect "a peer's list is this host's only, with the start times for the merge" \
	test "$(api "$rh" -H "X-Warren-E2b-Peer: $PEER" -H "X-Warren-E2b-Client-Key: $CK" \
		"/v2/sandboxes")" = 200
expect "  (it has the remote sandbox and _startedUsec)" \
	python3 -c "import json,sys; d=json.load(open('$TM/e2b.out')); \
	sys.exit(not any(s['sandboxID']=='$REMOTE' and '_startedUsec' in s for s in d))"
expect "a client's list through h1 has it without _startedUsec" \
	test "$(api 1 -H "X-API-Key: $E2B_KEY" "/v2/sandboxes")" = 200
expect "  (merged, the internal field taken off)" \
	python3 -c "import json,sys; d=json.load(open('$TM/e2b.out')); \
	sys.exit(not any(s['sandboxID']=='$REMOTE' for s in d) or any('_startedUsec' in s for s in d))"
for i in 1 2 3; do
	expect "the cluster key is in no log of h$i's control plane" bash -c "! grep -qF '$KEY' '$TM/h$i/e2b.log'"
done
expect "nor in any answer the SDK saw" bash -c "! grep -qF '$KEY' '$OUT'"
raw_status() { # raw_status I URI: the status line's code for a GET of URI, sent byte for byte
	in_ns "h$1" python3 -c "import os,socket,sys
s = socket.create_connection(('$NET.$1', $E2B_PORT), 10)
s.sendall(b'GET ' + os.fsencode(sys.argv[1]) + b' HTTP/1.1\\r\\nHost: x\\r\\n' +
          b'X-API-Key: $E2B_KEY\\r\\nConnection: close\\r\\n\\r\\n')
print(s.recv(4096).split(b' ')[1].decode())" "$2"
}
expect "a request URI with a control byte is refused before it could be forwarded (400)" \
	test "$(raw_status 1 "/sandboxes/$REMOTE?a=$(printf '\001')")" = 400
expect "  and one with a byte >= 0x80 (400)" \
	test "$(raw_status 1 "/v2/sandboxes?metadata=$(printf '\351')")" = 400
expect "a create without a template is refused at the front door (400)" \
	test "$(api 1 -H "X-API-Key: $E2B_KEY" -H 'Content-Type: application/json' -d '{}' /sandboxes)" = 400
expect "a create of an unknown template: 404 from the host it was placed on" \
	test "$(api 1 -H "X-API-Key: $E2B_KEY" -H 'Content-Type: application/json' \
		-d '{"templateID":"no-such-template"}' /sandboxes)" = 404

# --- the last one killed with curl through h1 ---
expect "kill the remote sandbox $REMOTE through h1 (204)" \
	test "$(api 1 -H "X-API-Key: $E2B_KEY" -X DELETE "/sandboxes/$REMOTE")" = 204
gone_left() { ! hbus "$lh" busctl --system call org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager ListSandboxes | grep -q "$REMOTE"; }
expect "and it is gone from its host" wait_for 15 gone_left

# --- two front doors at once, forwarding to each other, until the cluster is full ---
# (each host's pool has two slots: six creates fill the cluster, one on every slot)
two_free() { [ "$(pool_free "$1")" = 2 ]; }
for i in 1 2 3; do expect "h$i's pool has both slots free again" wait_for 60 two_free "$i"; done
create_at() { # create_at I N: a create through host I's control plane, as job N
	in_ns "h$1" curl -s --max-time 150 -o "$TM/c.$2" -w '%{http_code}' -H "X-API-Key: $E2B_KEY" \
		-H 'Content-Type: application/json' -d '{"templateID":"base","timeout":300}' \
		"http://$NET.$1:$E2B_PORT/sandboxes" >"$TM/c.$2.code"
}
jobs_=()
for n in 1 2 3 4 5 6; do
	create_at $((2 + n % 2)) "$n" &
	jobs_+=($!)
done
for j in "${jobs_[@]}"; do wait "$j" || true; done
FILLED=()
for n in 1 2 3 4 5 6; do
	code=$(cat "$TM/c.$n.code")
	expect "create $n through h$((2 + n % 2)), while the other front door creates too: 201 ($code)" \
		test "$code" = 201
	FILLED+=("$(python3 -c "import json; print(json.load(open('$TM/c.$n'))['sandboxID'])")")
done
USED=$(for id in "${FILLED[@]}"; do host_of "$id"; done | sort | uniq -c | awk '{print $1"xh"$2}' | tr '\n' ' ')
expect "the six landed two on every host ($USED)" test "$USED" = "2xh1 2xh2 2xh3 "
st=$(api 1 -H "X-API-Key: $E2B_KEY" -H 'Content-Type: application/json' \
	-d '{"templateID":"base"}' /sandboxes)
expect "a seventh create through h1: the cluster is full (503: $(cat "$TM/e2b.out"))" test "$st" = 503
expect "every one listed through h1" test "$(api 1 -H "X-API-Key: $E2B_KEY" "/v2/sandboxes")" = 200
expect "  (six)" python3 -c "import json,sys; d=json.load(open('$TM/e2b.out')); \
	sys.exit(sorted(s['sandboxID'] for s in d) != sorted('${FILLED[*]}'.split()))"
for id in "${FILLED[@]}"; do
	expect "kill $id (h$(host_of "$id")) through h1" \
		test "$(api 1 -H "X-API-Key: $E2B_KEY" -X DELETE "/sandboxes/$id")" = 204
done
log "PASS"
