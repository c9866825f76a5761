#!/bin/bash
# The set-up of the cluster tests (test-cluster.sh, test-cluster-routing.sh), sourced after
# nothing else (it sources lib.sh): three etcd members and three Warren hosts, each in a network
# namespace of its own with its own state, bus, ports and pool subnet, joined through
# warren-clusterd and routing across hosts (each gateway listens on its host's address, takes
# remote routes from its clusterd on a cluster socket, --cluster-net the hosts' network); then
# the helpers both tests use (fd: a request to a host's front door, hbus: a host's own bus, ...).
source "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || { log "SKIP: no etcd (Debian etcd-server)"; exit 77; }
command -v nsenter >/dev/null || { log "SKIP: no nsenter"; exit 77; }
TM=$T
POOL=${POOL:-2}
TTL=${TTL:-5}
NET=10.250.$K
CPORT=8303
BR=wt${K}br
KEY=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
install -d -m 0755 "$TM/etc"
printf '%s\n' "$KEY" >"$TM/etc/cluster-key"
chown root:warren-cluster "$TM/etc/cluster-key"
chmod 0640 "$TM/etc/cluster-key"

# the private buses get the policy of this source tree (the warren-cluster user's entry)
start_bus() {
	sed -e "s|<listen>.*</listen>|<listen>unix:path=$T/bus.sock</listen>|" \
		-e "s|<pidfile>.*</pidfile>|<pidfile>$T/bus.pid</pidfile>|" \
		-e "s|</busconfig>|<include>$SOURCE/units/org.warren.Warren1.conf</include></busconfig>|" \
		/usr/share/dbus-1/system.conf >"$T/bus.conf"
	dbus-daemon --config-file="$T/bus.conf" --fork --nosyslog
	wait_for 5 test -S "$T/bus.sock" || fail "private dbus-daemon did not start"
}

# --- the network: a bridge in a namespace of its own (never this one's firewall), one veth
# from it into each host's and member's namespace ---
ns_name() { echo "wt${K}$1"; } # h1..h3, e1..e3; net: the bridge's
ip netns add "$(ns_name net)"
at_exit "ip netns del $(ns_name net) 2>/dev/null"
ip -n "$(ns_name net)" link add "$BR" type bridge
ip -n "$(ns_name net)" link set "$BR" up
make_ns() { # make_ns NAME ADDR
	local ns
	ns=$(ns_name "$1")
	ip netns add "$ns"
	at_exit "ip netns del $ns 2>/dev/null"
	ip -n "$(ns_name net)" link add "v$1" type veth peer name eth0 netns "$ns"
	ip -n "$(ns_name net)" link set "v$1" master "$BR" up
	ip -n "$ns" addr add "$2/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" link set lo up
}
in_ns() { local ns; ns=$(ns_name "$1"); shift; nsenter --net="/run/netns/$ns" "$@"; }

# --- etcd: three members ---
CLUSTER=""
for j in 1 2 3; do CLUSTER+="${CLUSTER:+,}m$j=http://$NET.$((10 + j)):2380"; done
ETCD_EPS=$NET.11:2379,$NET.12:2379,$NET.13:2379
start_etcd() { # start_etcd J: member mJ in its namespace (its data dir kept across restarts)
	local j=$1
	DAEMON_NETNS=$(ns_name "e$j") daemon "etcd$j" etcd --name "m$j" --data-dir "$TM/etcd$j" \
		--listen-client-urls "http://$NET.$((10 + j)):2379" \
		--advertise-client-urls "http://$NET.$((10 + j)):2379" \
		--listen-peer-urls "http://$NET.$((10 + j)):2380" \
		--initial-advertise-peer-urls "http://$NET.$((10 + j)):2380" \
		--initial-cluster "$CLUSTER" --initial-cluster-state new
	eval "ETCD_PID_$j=\$PID_etcd$j"
}
for j in 1 2 3; do
	make_ns "e$j" "$NET.$((10 + j))"
	install -d -m 0700 "$TM/etcd$j"
	start_etcd "$j"
done
etcd_healthy() { in_ns e1 etcdctl --endpoints "$ETCD_EPS" endpoint health; }
expect "etcd's three members are healthy" wait_for 60 etcd_healthy

# --- the hosts ---
# the gateway of the host whose T and DAEMON_NETNS are set: listening on every address of its
# namespace, remote routes from its clusterd (routing across hosts)
start_host_gateway() {
	# the cluster socket's directory is the gateway's: it makes the socket there itself
	install -d -m 0755 -o warren-gateway "$T/gwc"
	start_gateway --listen 0.0.0.0 --cluster-socket "$T/gwc/cluster.sock" \
		--cluster-net "$NET.0/24"
	wait_for 10 test -S "$T/gwc/cluster.sock" || fail "the gateway's cluster socket is missing"
}
# E2B_CLUSTER=1 (test-cluster-e2b.sh): each host also runs warren-e2b-api on its address,
# port E2B_PORT, a front door of the cluster through its clusterd (with the group that reads
# the cluster key), and its clusterd publishes it
E2B_PORT=$((18400 + K))
start_host_e2b() {
	local i=$1 gid
	gid=$(getent group warren-cluster | cut -d: -f3)
	install -d -m 0700 -o warren-e2b -g warren-e2b "$T/e2b"
	daemon e2b setpriv --reuid=warren-e2b --regid=warren-e2b --groups="$gid" --no-new-privs \
		"$LIBEXEC/warren-e2b-api" --listen "$NET.$i:$E2B_PORT" --gateway "127.0.0.1:$GW_PORT" \
		--api-keys "$TM/etc/api-keys" --state-dir "$T/e2b" --ifname-prefix "$IFPREFIX" \
		--cluster "$NET.$i:$CPORT" --cluster-key "$TM/etc/cluster-key"
	wait_for 10 in_ns "h$i" curl -fsS "http://$NET.$i:$E2B_PORT/health" ||
		fail "warren-e2b-api of h$i did not start: $(cat "$T/e2b.log")"
}
# start_host I: host I's daemons in its namespace, with its own directory, bus, veth prefix,
# pool subnet, nftables table and cgroup parent (lib.sh's variables, made local here: the
# functions it calls see them)
start_host() {
	local i=$1
	local T=$TM/h$i IFPREFIX=wt${K}h$i SUBNET=10.17$i.0.0 NFT_TABLE=warren_t${K}h$i
	local CGROUP_PARENT=/warren-t${K}h$i VM_RAM_DIR=/dev/shm/warren-t${K}h$i
	local DAEMON_NETNS DBUS_SYSTEM_BUS_ADDRESS=unix:path=$TM/h$i/bus.sock
	DAEMON_NETNS=$(ns_name "h$i")
	export DBUS_SYSTEM_BUS_ADDRESS
	install -d -m 0755 "$T"
	start_bus
	start_netnsd
	start_snapshotd
	start_host_gateway
	start_supervisor
	daemon clusterd "$LIBEXEC/warren-clusterd" --name "h$i" --listen "$NET.$i:$CPORT" \
		--gateway-url "http://$NET.$i:$GW_PORT" --etcd "$ETCD_EPS" \
		--cluster-key "$TM/etc/cluster-key" --lease-ttl "$TTL" \
		--gateway-socket "$T/gwc/cluster.sock" \
		${E2B_CLUSTER:+--e2b-url "http://$NET.$i:$E2B_PORT"}
	PID_e2b=""
	[ -n "${E2B_CLUSTER:-}" ] && start_host_e2b "$i"
	eval "HPIDS_$i=\"$PID_netnsd $PID_snapshotd $PID_gateway $PID_supervisor $PID_clusterd $PID_e2b\""
	PID_netnsd="" # lib.sh's clean-up knows one host: stop_host does each
}
# stop_host I [SIGNAL]: its daemons and bus (kill -9: a host lost), then what they leave
kill_host() {
	local i=$1 pids
	eval "pids=\$HPIDS_$i"
	# shellcheck disable=SC2086
	kill -9 $pids 2>/dev/null || true
	for p in $pids; do wait "$p" 2>/dev/null || true; done
	[ -f "$TM/h$i/bus.pid" ] && kill -9 "$(cat "$TM/h$i/bus.pid")" 2>/dev/null
	rm -f "$TM/h$i/bus.sock" "$TM/h$i/bus.pid" "$TM/h$i/gw/gateway.sock" "$TM/h$i/netnsd.sock" \
		"$TM/h$i/snapshotd.sock"
	return 0
}
remove_host() {
	local i=$1
	kill_host "$i"
	# shellcheck disable=SC2046
	in_ns "h$i" timeout 150 "$LIBEXEC/warren-netnsd" --remove-all --subnet "10.17$i.0.0" \
		--ifname-prefix "wt${K}h$i" --nft-table "warren_t${K}h$i" \
		--runtime-dir "$TM/h$i/netnsd" --cgroup-parent "/warren-t${K}h$i" \
		>>"$TM/h$i/netnsd.log" 2>&1
	rm -rf "/dev/shm/warren-t${K}h$i" "/dev/shm/warren-t${K}h$i-images"
}
for i in 1 2 3; do
	make_ns "h$i" "$NET.$i"
	at_exit "remove_host $i"
	start_host "$i"
done
unset PID_netnsd

# a request to host I's front door: prints the HTTP status, the body goes to $TM/body.I (or
# $OUT). curl's own limit is far above any answer's: a create that timed out would fail the test.
fd() { # fd I METHOD PATH [BODY]
	local i=$1 m=$2 p=$3
	in_ns "h$i" curl -s --max-time 150 -o "${OUT:-$TM/body.$i}" -w '%{http_code}' -X "$m" \
		-H "X-Warren-Cluster-Key: $KEY" -H 'Content-Type: application/json' \
		${4:+--data "$4"} "http://$NET.$i:$CPORT$p"
}
body() { cat "$TM/body.$1"; }
jq_() { python3 -c "import json,sys; d=json.load(open('$TM/body.$1')); print($2)"; }
hosts_in() { fd "$1" GET /v1/sandboxes >/dev/null && jq_ "$1" "' '.join(sorted(d['hosts']))"; }
three_hosts() { [ "$(hosts_in "$1")" = "h1 h2 h3" ]; }
for i in 1 2 3; do expect "host h$i sees all three hosts" wait_for 60 three_hosts "$i"; done
# host I's own bus
hbus() { local i=$1; shift; DBUS_SYSTEM_BUS_ADDRESS=unix:path=$TM/h$i/bus.sock "$@"; }
local_count() { ids_in "$(hbus "$1" busctl --system call org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager ListSandboxes)" | sort -u | grep -c . || true; }
answers() { # answers HOST ID: the sandbox serves HTTP through its host's gateway
	in_ns "h$1" curl -fsS --max-time 10 -o /dev/null "http://$2.warren.localhost:$GW_PORT/"
}
pool_free() { hbus "$1" busctl --system get-property org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager PoolFree | awk '{print $2}'; }
