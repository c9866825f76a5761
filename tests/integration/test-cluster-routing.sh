#!/bin/bash
# Routing across hosts (docs/MULTIHOST.md) on the three hosts of cluster-lib.sh: any host's
# gateway serves any sandbox of the cluster. A sandbox created on h2 (template app, whose page
# names the sandbox it runs in: the answer proves which one served it) answers through h1's
# gateway by Host, by /s/<id>/ and by E2B's headers; one created later on h3 becomes routable
# through h1 by itself (clusterd's catalog refresh pushes it), and is no longer routed once
# destroyed; an owner record written to etcd is routed within tens of milliseconds (the
# watch), also once the member it watched through is killed; a fork at h1's front door is made
# on its tag's host h3, and refused TagHostFull once h3 is full (AccessDenied for a tag that is
# not clusterd's user's); a client's hop marker is stripped, not obeyed; a forged catalog (a host record in
# etcd naming etcd's own port as its gateway) routes nothing anywhere and leaves the other
# routes working; a user other than clusterd's is refused on the gateway's cluster socket; a
# restarted gateway gets its remote routes again from its clusterd; and once h2 is killed, h1 answers 503 for its sandbox, first because its gateway does not answer,
# then because its lease lapsed and the catalog calls it lost.
source "$(dirname "$0")/cluster-lib.sh"

# a sandbox of template app made on host I's own bus (not placed: the test picks the host)
make_on() {
	ids_in "$(hbus "$1" busctl --system call org.warren.Warren1 /org/warren/Warren1 \
		org.warren.Warren1.Manager CreateSandbox sa{sv} app 1 wait b true)" | head -1
}
destroy_on() {
	hbus "$1" busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$2" \
		org.warren.Warren1.Sandbox Destroy
}
# via HOST ID [CURL ARGS...]: host HOST's gateway asked for sandbox ID by Host; the status,
# the body in $TM/rbody
via() {
	local i=$1 id=$2
	shift 2
	in_ns "h$i" curl -s --max-time 15 -o "$TM/rbody" -w '%{http_code}' \
		-H "Host: $id.warren.localhost:$GW_PORT" "$@" "http://$NET.$i:$GW_PORT/"
}
# serves HOST ID: HOST's gateway answers with sandbox ID's own page
serves() { [ "$(via "$@")" = 200 ] && grep -q "\"sandbox\": *\"$2\"" "$TM/rbody"; }
# not_routed HOST ID: HOST's gateway has no route to ID (its supervisor's routes are in: 404)
not_routed() { [ "$(via "$1" "$2")" = 404 ] && grep -q "no sandbox $2" "$TM/rbody"; }

X=$(make_on 2)
[ -n "$X" ] || fail "no sandbox made on h2"
log "sandbox $X runs on h2"
expect "sandbox $X answers through its own host's gateway" wait_for 60 serves 2 "$X"
expect "sandbox $X answers through h1's gateway, by Host" wait_for 15 serves 1 "$X"
expect "and through h3's" wait_for 15 serves 3 "$X"
st=$(in_ns h1 curl -s --max-time 15 -o "$TM/rbody" -w '%{http_code}' "http://$NET.1:$GW_PORT/s/$X/")
expect "through h1 by /s/<id>/ ($st)" grep -q "\"sandbox\": *\"$X\"" "$TM/rbody"
st=$(in_ns h1 curl -s --max-time 15 -o "$TM/rbody" -w '%{http_code}' -H "E2b-Sandbox-Id: $X" \
	-H "E2b-Sandbox-Port: 8080" "http://$NET.1:$GW_PORT/")
expect "through h1 by E2B's headers ($st)" grep -q "\"sandbox\": *\"$X\"" "$TM/rbody"
st=$(via 1 "$X" -H "X-Warren-Forwarded: $(printf '0%.0s' $(seq 64))")
expect "a client's hop marker is stripped and the request routed as any other ($st)" \
	grep -q "\"sandbox\": *\"$X\"" "$TM/rbody"
expect "the E2B agent port through h1 without the agent token: 403 from h2's gate" \
	test "$(via 1 "$X" -H "E2b-Sandbox-Id: $X" -H "E2b-Sandbox-Port: 49983")" = 403

# --- a sandbox made later is routed by itself; destroyed, it is not ---
ms_now() { echo $(($(date +%s%N) / 1000000)); }
# poll_ms SECONDS CMD...: poll every 20 ms; prints the milliseconds it took, fails after SECONDS
poll_ms() {
	local t0 end=$(($(date +%s) + $1))
	t0=$(ms_now)
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -ge "$end" ] && return 1
		sleep 0.02
	done
	echo $(($(ms_now) - t0))
}
Y=$(make_on 3)
[ -n "$Y" ] || fail "no sandbox made on h3"
log "sandbox $Y runs on h3"
ms=$(poll_ms 30 serves 1 "$Y") || fail "sandbox $Y, made later on h3, never became routable through h1"
log "ok: sandbox $Y, made later on h3, became routable through h1 $ms ms after its create answered (h3 writes its owner record at a tick once its supervisor lists it, usually before the create answers)"
destroy_on 3 "$Y"
ms=$(poll_ms 30 not_routed 1 "$Y") || fail "h1 still routes $Y after its destroy"
log "ok: once destroyed, h1 no longer routes $Y (404), $ms ms after the destroy answered"

# --- the watch: how soon an owner record written to etcd is routed by another host ---
ec() { in_ns e1 etcdctl --endpoints "$ETCD_EPS" "$@"; }
expect "h1's clusterd watches the catalog" grep -q "Watching the catalog from revision" \
	"$TM/h1/clusterd.log"
# an owner record naming a host with no record: h1 routes its sandbox lost (503 naming the
# host) once its watch hears of it, not before (404); and 404 again once it is deleted
lost_at() { [ "$(via "$1" "$2")" = 503 ] && grep -q "$3 is gone" "$TM/rbody"; }
put_ms=() del_ms=()
for n in 1 2 3 4 5; do
	W=$(printf 'c0ffee%06d' "$n")
	ec put "/warren/owners/$W" '{"host":"h8","template":"app"}' >/dev/null
	ms=$(poll_ms 10 lost_at 1 "$W" h8) || fail "h1 never routed the owner record of $W"
	put_ms+=("$ms")
	ec del "/warren/owners/$W" >/dev/null
	ms=$(poll_ms 10 not_routed 1 "$W") || fail "h1 still routes $W after its owner record went"
	del_ms+=("$ms")
done
log "ok: an owner record put in etcd is routed by h1 within ${put_ms[*]} ms (after etcdctl returned), a deleted one unrouted within ${del_ms[*]} ms"

# --- the etcd member h1 watches through is killed: the watch moves to another member ---
WM=$(grep -o "Watching the catalog from revision [0-9]* ([^)]*) on [0-9.:]*" "$TM/h1/clusterd.log" |
	tail -1 | awk '{print $NF}')
VJ=""
for j in 1 2 3; do [ "$NET.$((10 + j)):2379" = "$WM" ] && VJ=$j; done
[ -n "$VJ" ] || fail "cannot tell which etcd member h1 watches through ($WM)"
eval "vpid=\$ETCD_PID_$VJ"
kill -9 "$vpid"
wait "$vpid" 2>/dev/null || true
log "killed etcd member m$VJ, the one h1's watch used"
W=c0ffee000099
at_exit "in_ns e1 etcdctl --endpoints $ETCD_EPS del /warren/owners/$W >/dev/null 2>&1"
# etcdctl itself gives up on its first endpoint when that one is dead: the others only
ALIVE=""
for j in 1 2 3; do [ "$j" != "$VJ" ] && ALIVE+="${ALIVE:+,}$NET.$((10 + j)):2379"; done
# (and while the two left elect a leader, a loaded etcd may time a put out: asked again)
put_alive() { in_ns e1 etcdctl --endpoints "$ALIVE" put "/warren/owners/$W" \
	'{"host":"h8","template":"app"}'; }
wait_for 60 put_alive || fail "etcd did not take a put with m$VJ dead"
ms=$(poll_ms 20 lost_at 1 "$W" h8) || fail "with m$VJ dead, h1 never routed $W"
log "ok: with m$VJ dead, h1's watch went on through another member: $W routed $ms ms after etcd took its put"
expect "h1's clusterd read the catalog again" grep -q "The catalog watch is lost" "$TM/h1/clusterd.log"
del_alive() { in_ns e1 etcdctl --endpoints "$ALIVE" del "/warren/owners/$W"; }
wait_for 60 del_alive || fail "etcd did not take a delete with m$VJ dead"
expect "and unrouted once deleted" wait_for 10 not_routed 1 "$W"
start_etcd "$VJ"
expect "etcd member m$VJ is back" wait_for 60 etcd_healthy

# --- a forged catalog: a host record naming etcd's client port as its gateway ---
FAKE=feedfacecafe
ec put /warren/hosts/h9 "{\"name\":\"h9\",\"gateway\":\"http://$NET.11:2379\"}" >/dev/null
ec put "/warren/owners/$FAKE" '{"host":"h9","template":"app"}' >/dev/null
at_exit "in_ns e1 etcdctl --endpoints $ETCD_EPS del /warren/hosts/h9 /warren/owners/$FAKE >/dev/null 2>&1"
refused() { grep -q "Refused the remote route of sandbox $FAKE" "$TM/h1/gateway.log"; }
expect "h1's gateway refuses the forged route (its target is not a gateway's port)" \
	wait_for 30 refused
expect "the forged sandbox is not routed" not_routed 1 "$FAKE"
expect "and the real remote sandbox still answers through h1" serves 1 "$X"
ec del /warren/hosts/h9 >/dev/null
ec del "/warren/owners/$FAKE" >/dev/null
out=$(in_ns h1 env IPC_POKE_USER=nobody "$POKE" "$TM/h1/gwc/cluster.sock" remoteroutes \
	"$(printf '0%.0s' $(seq 64))" "$FAKE=h2@$NET.2:$GW_PORT")
expect "a user other than clusterd's is refused on the cluster socket ($out)" test "${out%% *}" != ok
expect "and routes nothing" not_routed 1 "$FAKE"

# --- forks across hosts: on the tag's host while it has room, else refused TagHostFull ---
# clusterd forks as its own user, so the tag must be that user's: a sandbox it owns on h3,
# snapshotted by it (as the cluster's own front doors would)
as_cluster() { # as_cluster I CMD...: on host I's bus as warren-cluster
	local i=$1
	shift
	runuser -u warren-cluster -- env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$TM/h$i/bus.sock" "$@"
}
PARENT=$(ids_in "$(as_cluster 3 busctl --system call org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager CreateSandbox sa{sv} app 1 wait b true)" | head -1)
[ -n "$PARENT" ] || fail "no sandbox made on h3 as warren-cluster"
as_cluster 3 busctl --system --timeout=120 call org.warren.Warren1 \
	"/org/warren/Warren1/sandbox/$PARENT" org.warren.Warren1.Sandbox Snapshot s ctag >/dev/null ||
	fail "cannot snapshot $PARENT into tag ctag"
tag_on() { ec get --prefix --keys-only "/warren/tags/$1/" | grep -qx "/warren/tags/$1/$2"; }
wait_for 15 tag_on ctag h3 || {
	as_cluster 3 busctl --system call org.warren.Warren1 /org/warren/Warren1 \
		org.warren.Warren1.Manager ListTags >&2
	ec get --prefix /warren/tags/ >&2
	tail -n 20 "$TM/h3/clusterd.log" >&2
	fail "h3 publishes tag ctag in the tag catalog"
}
log "ok: h3 publishes tag ctag in the tag catalog"
# a tag of another user's (root snapshotted the same sandbox): clusterd may not fork it
# (once the parent runs again after its own snapshot)
snap_root() { hbus 3 busctl --system --timeout=120 call org.warren.Warren1 \
	"/org/warren/Warren1/sandbox/$PARENT" org.warren.Warren1.Sandbox Snapshot s roottag; }
wait_for 60 snap_root || fail "cannot snapshot $PARENT into roottag"
expect "h3 publishes roottag too" wait_for 15 tag_on roottag h3
st=$(fd 2 POST /v1/forks '{"tag":"roottag","count":1,"request_id":"fork-root"}')
expect "a fork of root's tag is refused 403 AccessDenied ($st)" \
	bash -c "[ $st = 403 ] && grep -q '\"error\":\"AccessDenied\"' '$TM/body.2'"
expect "and made nothing (h3 runs its one sandbox)" test "$(local_count 3)" = 1
t0=$(ms_now)
st=$(fd 1 POST /v1/forks '{"tag":"ctag","count":1,"request_id":"fork-1"}')
fork_ms=$(($(ms_now) - t0))
[ "$st" = 201 ] || fail "a fork of ctag at h1's front door: $st $(body 1)"
CHILD=$(jq_ 1 "d['ids'][0]")
expect "the fork at h1's front door was made on the tag's host, h3 ($fork_ms ms)" \
	test "$(jq_ 1 "d['host']")" = h3
runs_on() { ids_in "$(hbus "$1" busctl --system call org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager ListSandboxes)" | grep -qx "$2"; }
expect "h3 runs the child $CHILD" runs_on 3 "$CHILD"
answers_via() { [ "$(via "$1" "$2")" = 200 ]; }
expect "the child answers through h1's gateway" wait_for 30 answers_via 1 "$CHILD"
st=$(fd 2 POST /v1/forks '{"tag":"ctag","count":1,"request_id":"fork-1"}')
expect "a retried fork (same request id, h2's front door) answers 200 ($st)" test "$st" = 200
expect "with the first fork's child" test "$(jq_ 2 "d['ids'][0]") $(jq_ 2 "d['existing']")" = "$CHILD True"
expect "and h3 made no other (2 sandboxes)" test "$(local_count 3)" = 2
st=$(fd 2 POST /v1/forks '{"tag":"ctag","count":1,"request_id":"fork-2"}')
expect "h3 full: a fork of its tag is refused 503 TagHostFull ($st), never made elsewhere" \
	bash -c "[ $st = 503 ] && grep -q '\"error\":\"TagHostFull\"' '$TM/body.2'"
expect "and nothing was made" test "$(local_count 3)" = 2
no_record() { [ -z "$(ec get "/warren/forks/$1")" ]; }
expect "nor recorded for its request id (a retry may try again)" no_record fork-2
st=$(fd 1 POST /v1/forks '{"tag":"nosuchtag","count":1}')
expect "a tag no host has: 404 NoSuchTag ($st)" \
	bash -c "[ $st = 404 ] && grep -q '\"error\":\"NoSuchTag\"' '$TM/body.1'"
expect "a bad fork body: 400" test "$(fd 1 POST /v1/forks '{"tag":"ctag","count":0}')" = 400
expect "no fork without the cluster key: 401" test "$(in_ns h1 curl -s -o /dev/null \
	-w '%{http_code}' -X POST -d '{"tag":"ctag","count":1}' "http://$NET.1:$CPORT/v1/forks")" = 401
expect "nor a host-to-host fork: 401" test "$(in_ns h3 curl -s -o /dev/null -w '%{http_code}' \
	-X POST -d '{"tag":"ctag","count":1,"request_id":"x"}' \
	"http://$NET.3:$CPORT/v1/internal/fork")" = 401

# --- h1's gateway restarted (its clusterd stays): clusterd pushes the table again ---
gw1=$(awk '{print $3}' <<<"$HPIDS_1")
kill -9 "$gw1"
wait "$gw1" 2>/dev/null || true
restart_gateway() {
	local T=$TM/h1 DAEMON_NETNS
	DAEMON_NETNS=$(ns_name h1)
	start_host_gateway
}
restart_gateway
expect "h1's restarted gateway routes h2's sandbox again" wait_for 30 serves 1 "$X"
expect "h1's clusterd saw its gateway go and pushed again" \
	grep -q "pushed again on reconnect" "$TM/h1/clusterd.log"

# --- h2 killed: 503 for its sandbox, not a hang, then lost ---
kill_host 2
st=$(via 1 "$X")
expect "h2 killed: h1 answers 503 for its sandbox at once ($st)" test "$st" = 503
h2_lost() { [ "$(via 1 "$X")" = 503 ] && grep -q "h2 is gone" "$TM/rbody"; }
expect "once h2's lease lapsed, h1 says its host is gone (503)" wait_for 60 h2_lost
h2_lost_at_h3() { [ "$(via 3 "$X")" = 503 ] && grep -q "h2 is gone" "$TM/rbody"; }
expect "h3's gateway says so too" wait_for 30 h2_lost_at_h3
log "PASS"
