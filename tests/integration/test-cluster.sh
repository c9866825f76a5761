#!/bin/bash
# Three Warren hosts joined through a three-member etcd cluster (warren-clusterd,
# docs/MULTIHOST.md), each host and each etcd member in a network namespace of its own with its
# own state, bus, ports and pool subnet: creates at any host's front door are placed and answer
# on the host they landed on; a retried create (same request id, another front door) makes no
# second sandbox; concurrent creates fill the cluster exactly and the one too many is refused
# ClusterFull at once; an etcd follower killed changes nothing; a host killed with kill -9 (all
# of its daemons) has its sandboxes reported lost once its lease lapses and creates go
# elsewhere, and it registers again when it comes back; a host cut off from etcd refuses
# creates, serves what it runs and comes back with it. Then what a hostile HTTP client meets:
# no key or a wrong one is 401, bad bodies are 400 and never reach etcd or D-Bus.
source "$(dirname "$0")/cluster-lib.sh"

# --- creates at each front door, placed and answering ---
declare -A HOST_OF
for i in 1 2 3; do
	st=$(fd "$i" POST /v1/sandboxes "{\"template\":\"web\",\"request_id\":\"first-$i\"}")
	[ "$st" = 201 ] || fail "create at h$i: $st $(body "$i")"
	id=$(jq_ "$i" "d['id']")
	h=$(jq_ "$i" "d['host']")
	HOST_OF[$id]=${h#h}
	log "ok: a create at h$i's front door was placed on $h: $id"
	expect "sandbox $id answers through its host's gateway" wait_for 30 answers "${h#h}" "$id"
	ids_in "$(hbus "${h#h}" busctl --system call org.warren.Warren1 /org/warren/Warren1 \
		org.warren.Warren1.Manager ListSandboxes)" | grep -qx "$id" ||
		fail "sandbox $id is not in $h's supervisor"
done
FIRST=$(fd 2 GET /v1/sandboxes >/dev/null; jq_ 2 "len(d['sandboxes'])")
expect "the cluster list at h2 shows the three sandboxes" test "$FIRST" = 3

# --- a retried create: same request id at another front door, the same sandbox ---
fd 1 POST /v1/sandboxes '{"template":"web","request_id":"first-1"}' >/dev/null
ID1=$(jq_ 1 "d['id']")
st=$(fd 3 POST /v1/sandboxes '{"template":"web","request_id":"first-1"}')
expect "a retried create answers 200 (not 201)" test "$st" = 200
expect "a retried create answers the first create's sandbox" test "$(jq_ 3 "d['id']")" = "$ID1"
total=0
for i in 1 2 3; do total=$((total + $(local_count "$i"))); done
expect "a retried create made no sandbox (3 in all)" test "$total" = 3
# while there is room: a host that does not have the template refuses, nothing is made
expect "an unknown template is 404 NoSuchTemplate, not a sandbox" \
	test "$(fd 1 POST /v1/sandboxes '{"template":"nosuch","request_id":"b3"}')" = 404
expect "and its body names the error" grep -q '"error":"NoSuchTemplate"' "$TM/body.1"

# --- filling the cluster: 4 concurrent creates for 3 free slots, at three front doors ---
FILL=()
for n in 1 2 3 4; do
	i=$(((n - 1) % 3 + 1))
	(OUT=$TM/fill.$n fd "$i" POST /v1/sandboxes \
		"{\"template\":\"web\",\"request_id\":\"fill-$n\"}" >"$TM/fill.$n.status") &
	FILL+=($!)
done
for p in "${FILL[@]}"; do wait "$p" || fail "a fill create's curl failed"; done
ok=0 full=0
for n in 1 2 3 4; do
	st=$(cat "$TM/fill.$n.status")
	if [ "$st" = 201 ]; then
		ok=$((ok + 1))
	elif [ "$st" = 503 ] && grep -q '"error":"ClusterFull"' "$TM/fill.$n"; then
		full=$((full + 1))
	else
		fail "fill create $n: $st $(cat "$TM/fill.$n")"
	fi
done
expect "three of the four concurrent creates were placed ($ok)" test "$ok" = 3
expect "the fourth was refused ClusterFull ($full)" test "$full" = 1
for i in 1 2 3; do expect "host h$i runs $POOL sandboxes, no more" test "$(local_count "$i")" = "$POOL"; done
st=$(fd 2 POST /v1/sandboxes '{"template":"web","request_id":"one-too-many"}')
expect "a create in a full cluster is refused at once: 503 ClusterFull" \
	bash -c "[ $st = 503 ] && grep -q '\"error\":\"ClusterFull\"' '$TM/body.2'"

# --- one etcd member killed (a follower): nothing visible ---
leader=$(in_ns e1 etcdctl --endpoints "$ETCD_EPS" endpoint status -w json |
	python3 -c "import json,sys; s=json.load(sys.stdin)
for m in s:
    if m['Status']['leader'] == m['Status']['header']['member_id']: print(m['Endpoint'])")
for j in 1 2 3; do [ "$NET.$((10 + j)):2379" != "${leader#http://}" ] && { VICTIM=$j; break; }; done
eval "kill -9 \$ETCD_PID_$VICTIM"
log "killed etcd member m$VICTIM (the leader is $leader)"
ID_DEL=$(fd 1 GET /v1/sandboxes >/dev/null; jq_ 1 "[s['id'] for s in d['sandboxes'] if s['host']=='h1'][0]")
hbus 1 busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$ID_DEL" \
	org.warren.Warren1.Sandbox Destroy
slot_free() { [ "$(pool_free "$1")" -ge 1 ]; }
published_free() { fd 1 GET /v1/sandboxes >/dev/null &&
	[ "$(jq_ 1 "d['hosts']['h$1']['free_slots']")" -ge 1 ]; }
expect "h1's slot is free again" wait_for 60 slot_free 1
expect "h1 publishes its free slot" wait_for 30 published_free 1
gone() { fd 1 GET /v1/sandboxes >/dev/null && ! grep -q "$ID_DEL" "$TM/body.1"; }
expect "with two etcd members the destroyed sandbox leaves the catalog" wait_for 30 gone
st=$(fd 3 POST /v1/sandboxes '{"template":"web","request_id":"after-etcd-kill"}')
expect "with two etcd members a create is placed ($st)" test "$st" = 201
expect "on the only host with room, h1" test "$(jq_ 3 "d['host']")" = h1
for i in 1 2 3; do expect "h$i still sees three hosts" three_hosts "$i"; done

# --- a host killed: its sandboxes are reported lost, creates go elsewhere, it comes back ---
H3_IDS=$(fd 1 GET /v1/sandboxes >/dev/null; jq_ 1 "' '.join(s['id'] for s in d['sandboxes'] if s['host']=='h3')")
expect "h3 ran $POOL sandboxes" test "$(wc -w <<<"$H3_IDS")" = "$POOL"
t0=$(date +%s%N)
kill_host 3
lost() {
	fd 1 GET /v1/sandboxes >/dev/null || return 1
	[ "$(jq_ 1 "sum(1 for s in d['sandboxes'] if s['host']=='h3' and s['state']=='lost')")" = "$POOL" ] &&
		[ "$(jq_ 1 "' '.join(sorted(d['hosts']))")" = "h1 h2" ]
}
expect "h3's sandboxes are reported lost once its lease lapsed" wait_for 120 lost
t1=$(date +%s%N)
log "measured: h3 out and its sandboxes lost $(((t1 - t0) / 1000000)) ms after kill -9 (lease $TTL s)"
ID_DEL=$(fd 2 GET /v1/sandboxes >/dev/null; jq_ 2 "[s['id'] for s in d['sandboxes'] if s['host']=='h2'][0]")
hbus 2 busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$ID_DEL" \
	org.warren.Warren1.Sandbox Destroy
expect "h2's slot is free again" wait_for 60 slot_free 2
expect "h2 publishes its free slot" wait_for 30 published_free 2
st=$(fd 1 POST /v1/sandboxes '{"template":"web","request_id":"after-host-kill"}')
expect "with h3 gone a create is placed ($st)" test "$st" = 201
expect "elsewhere than h3 (on h2, the host with room)" test "$(jq_ 1 "d['host']")" = h2
st=$(fd 1 POST /v1/sandboxes '{"template":"web","request_id":"after-host-kill-2"}')
expect "and then the cluster is full: ClusterFull, h3's slots are not counted ($st)" \
	bash -c "[ $st = 503 ] && grep -q ClusterFull '$TM/body.1'"
t0=$(date +%s%N)
start_host 3
expect "h3 registers again when it comes back" wait_for 60 three_hosts 1
t1=$(date +%s%N)
log "measured: h3 registered again $(((t1 - t0) / 1000000)) ms after its daemons were started"
# what h3 still runs is adopted again (running) or was lost with its helpers (gone): either way
# the catalog stops calling it lost
not_lost() { fd 1 GET /v1/sandboxes >/dev/null &&
	[ "$(jq_ 1 "sum(1 for s in d['sandboxes'] if s['state']=='lost')")" = 0 ]; }
expect "h3's old sandboxes are no longer reported lost" wait_for 60 not_lost
log "after h3's return: $(jq_ 1 "[(s['host'], s['state']) for s in d['sandboxes'] if s['id'] in '$H3_IDS'.split()]")"

# --- a host cut off from etcd (its link to the others down, its own front door and gateway
# still reached from inside it): it refuses creates, keeps serving what it runs, drops out of
# the others' view, and comes back into it with its sandboxes when the link returns ---
H2_ID=$(fd 2 GET /v1/sandboxes >/dev/null; jq_ 2 "[s['id'] for s in d['sandboxes'] if s['host']=='h2'][0]")
ip -n "$(ns_name net)" link set vh2 down
cut_off() {
	[ "$(fd 2 POST /v1/sandboxes '{"template":"web","request_id":"while-cut-off"}')" = 503 ] &&
		grep -q '"error":"ClusterUnavailable"' "$TM/body.2"
}
expect "h2 cut off from etcd refuses creates: 503 ClusterUnavailable" wait_for 60 cut_off
expect "h2 still serves its sandbox $H2_ID while cut off" answers 2 "$H2_ID"
two_hosts() { [ "$(hosts_in 1)" = "h1 h3" ]; }
expect "h1 sees h2 gone once its lease lapsed" wait_for 60 two_hosts
h2_lost() { fd 1 GET /v1/sandboxes >/dev/null &&
	[ "$(jq_ 1 "[s['state'] for s in d['sandboxes'] if s['id']=='$H2_ID'][0]")" = lost ]; }
expect "and lists h2's sandbox lost" wait_for 30 h2_lost
ip -n "$(ns_name net)" link set vh2 up
expect "h2 registers again when its link returns" wait_for 60 three_hosts 1
back() {
	st=$(fd 2 POST /v1/sandboxes '{"template":"web","request_id":"after-cut-off"}')
	# placed (201), or placed nowhere because the cluster is full: either way not cut off
	[ "$st" = 201 ] || { [ "$st" = 503 ] && grep -q '"error":"ClusterFull"' "$TM/body.2"; }
}
expect "h2 accepts creates again" wait_for 60 back
h2_listed() { fd 1 GET /v1/sandboxes >/dev/null &&
	[ "$(jq_ 1 "[s['state'] for s in d['sandboxes'] if s['id']=='$H2_ID'][0]")" != lost ]; }
expect "its sandbox is listed again, not lost" wait_for 60 h2_listed
expect "and still answers" answers 2 "$H2_ID"

# --- the etcd leader killed (the follower killed earlier is back first: two of three must
# remain): the election is not visible at the front doors ---
start_etcd "$VICTIM"
all_healthy() { [ "$(in_ns e1 etcdctl --endpoints "$ETCD_EPS" endpoint health 2>&1 | grep -c 'is healthy')" = 3 ]; }
expect "etcd member m$VICTIM is back: three healthy members" wait_for 60 all_healthy
# room for one create, so one of them writes to etcd while it elects
ID_DEL=$(fd 1 GET /v1/sandboxes >/dev/null; jq_ 1 "[s['id'] for s in d['sandboxes'] if s['host']=='h1'][0]")
hbus 1 busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$ID_DEL" \
	org.warren.Warren1.Sandbox Destroy
expect "h1's slot is free again" wait_for 60 slot_free 1
expect "h1 publishes its free slot" wait_for 30 published_free 1
leader=$(in_ns e1 etcdctl --endpoints "$ETCD_EPS" endpoint status -w json |
	python3 -c "import json,sys; s=json.load(sys.stdin)
for m in s:
    if m['Status']['leader'] == m['Status']['header']['member_id']: print(m['Endpoint'])")
for j in 1 2 3; do [ "$NET.$((10 + j)):2379" = "${leader#http://}" ] && LEADER=$j; done
eval "kill -9 \$ETCD_PID_$LEADER"
log "killed the etcd leader m$LEADER ($leader)"
placed=0
for n in 1 2 3; do
	st=$(fd "$n" POST /v1/sandboxes "{\"template\":\"web\",\"request_id\":\"leader-$n\"}")
	[ "$st" = 201 ] && placed=$((placed + 1))
	{ [ "$st" = 201 ] || { [ "$st" = 503 ] && grep -q '"error":"ClusterFull"' "$TM/body.$n"; }; } ||
		fail "a create at h$n right after the leader's death: $st $(body "$n")"
	log "ok: a create at h$n right after the leader's death: $st $(jq_ "$n" "d.get('error') or d['host']")"
done
expect "one of them was placed, in the slot h1 freed ($placed)" test "$placed" = 1
for i in 1 2 3; do expect "h$i still sees three hosts" three_hosts "$i"; done

# --- a hostile client ---
expect "no key: 401" test "$(in_ns h1 curl -s -o /dev/null -w '%{http_code}' \
	"http://$NET.1:$CPORT/v1/sandboxes")" = 401
expect "a wrong key of the right length: 401" test "$(in_ns h1 curl -s -o /dev/null -w '%{http_code}' \
	-H "X-Warren-Cluster-Key: ${KEY//?/a}" "http://$NET.1:$CPORT/v1/sandboxes")" = 401
expect "a forwarded create without the key: 401" test "$(in_ns h1 curl -s -o /dev/null \
	-w '%{http_code}' -X POST --data '{"template":"web","request_id":"x"}' \
	"http://$NET.2:$CPORT/v1/internal/create")" = 401
for bad in '{"template":"../web","request_id":"b1"}' '{"template":"web","request_id":"b/1"}' \
	'{"template":"web","request_id":"'"$(printf 'a%.0s' $(seq 65))"'"}' '{"template":1}' \
	'[1,2]' 'not json' '{"template":"web","template":"web"}' \
	"{\"template\":\"w\\u0000b\",\"request_id\":\"b2\"}"; do
	expect "a bad body is 400: $bad" test "$(fd 1 POST /v1/sandboxes "$bad")" = 400
done
expect "a body over 4 KiB is refused (413)" test "$(fd 1 POST /v1/sandboxes \
	"{\"template\":\"web\",\"request_id\":\"$(head -c 5000 /dev/zero | tr '\0' a)\"}")" = 413
bad_requests() { in_ns h1 etcdctl --endpoints "$ETCD_EPS" get --prefix /warren/requests/b \
	--keys-only | grep -q .; }
if bad_requests; then fail "a refused create left a request record in etcd"; fi
log "ok: none of them left a request record in etcd"
expect "the daemon runs as warren-cluster with no capability" bash -c \
	"grep -q '^CapEff:.0000000000000000' /proc/$PID_clusterd/status && \
	[ \$(stat -c %U /proc/$PID_clusterd) = warren-cluster ]"
log "PASS"
