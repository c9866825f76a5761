# Shared set-up for Warren's integration tests: a private system-like dbus-daemon with the real
# policy, the four real daemons (installed build) on sockets, namespaces, nftables table, cgroup
# parent, state and gateway port of their own, so a test runs beside a running Warren.
# Every test: source lib.sh; warren_start [netnsd options]; ...; (cleanup runs on exit).
set -euo pipefail
LIBEXEC=${WARREN_LIBEXEC:-/usr/local/libexec/warren}
BUILD=${WARREN_BUILD:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../build" && pwd)}
SOURCE=${WARREN_SOURCE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
POKE=$BUILD/tests/ipc-poke
TEST=$(basename "$0" .sh)
# A small number of this test's own, so names and addresses never meet another test's.
K=$(( $(printf '%s' "$TEST" | cksum | cut -d' ' -f1) % 40 + 10 ))
T=$(mktemp -d /tmp/warren-$TEST.XXXXXX)
chmod 0755 "$T"
# One test at a time per K: two tests whose K meet (40 values for more tests than that), or one
# test run twice at once (a developer's run beside CI's), would share interfaces, cgroups and
# ports and fail each other. The lock is held by a flock process of its own (-o: none of this
# test's children inherit it, so a daemon or sandbox left behind never holds it), released when
# the clean-up kills it or, failing that, within a second of this shell's end.
flock -o "/tmp/warren-test-k$K.lock" sh -c \
	'echo >"$1"; while kill -0 "$2" 2>/dev/null; do sleep 1; done' sh "$T/k-locked" $$ &
K_LOCK_PID=$!
while [ ! -e "$T/k-locked" ]; do sleep 0.1; done
IFPREFIX=wt${K}x
SUBNET=10.$((100 + K)).0.0
NFT_TABLE=warren_t$K
CGROUP_PARENT=/warren-t$K
GW_PORT=$((18300 + K))
GW=http://127.0.0.1:$GW_PORT
GW_METRICS_PORT=$((17300 + K)) # never GW_PORT+1000 or +2000: tests put upstreams there
VM_RAM_DIR=/dev/shm/warren-t$K
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$T/bus.sock
PIDS=()

log() { echo "[$TEST] $*" >&2; }
# fail MESSAGE: the test fails, from wherever it is called. errexit and `exit` end only the
# subshell they run in: a fail inside $(...), a pipeline or a background job would be lost (its
# status swallowed by the command around it), so it also signals the test's own shell ($$ is
# that shell's pid in every subshell), which exits 1 and runs the clean-up.
fail() {
	log "FAIL: $*"
	if [ "$BASHPID" != "$$" ]; then kill -USR1 "$$" 2>/dev/null; fi
	exit 1
}
trap 'exit 1' USR1
# timeout(1) and ^C: exit through the clean-up too (daemons, namespaces, nftables table)
trap 'exit 143' TERM
trap 'exit 130' INT
expect() { # expect DESCRIPTION CMD...: the command must succeed
	local what=$1
	shift
	"$@" || fail "$what"
	log "ok: $what"
}
# wait_for SECONDS CMD...: poll every 0.1 s until CMD succeeds or SECONDS have passed
wait_for() {
	local end=$(($(date +%s) + $1))
	shift
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		[ "$(date +%s)" -ge "$end" ] && return 1
		sleep 0.1
	done
}

start_bus() {
	sed -e "s|<listen>.*</listen>|<listen>unix:path=$T/bus.sock</listen>|" \
		-e "s|<pidfile>.*</pidfile>|<pidfile>$T/bus.pid</pidfile>|" \
		/usr/share/dbus-1/system.conf >"$T/bus.conf"
	dbus-daemon --config-file="$T/bus.conf" --fork --nosyslog
	wait_for 5 test -S "$T/bus.sock" || fail "private dbus-daemon did not start"
}

# DAEMON_NETNS: a named network namespace the daemons are started in (test-cluster.sh runs
# several hosts, each in its own); nsenter execs the daemon, so its pid is the daemon's
daemon() { # daemon NAME CMD...: run in the background, log to $T/NAME.log
	local name=$1
	shift
	if [ -n "${DAEMON_NETNS:-}" ]; then set -- nsenter --net="/run/netns/$DAEMON_NETNS" "$@"; fi
	"$@" >>"$T/$name.log" 2>&1 &
	PIDS+=($!)
	eval "PID_${name}=$!"
}

start_netnsd() {
	# POOL=dynamic: no --pool-size, the test gives the growing pool's options itself
	local pool=(--pool-size "${POOL:-6}")
	[ "${POOL:-}" = dynamic ] && pool=()
	daemon netnsd "$LIBEXEC/warren-netnsd" --socket "$T/netnsd.sock" --peer-users warren \
		"${pool[@]}" --subnet "$SUBNET" --ifname-prefix "$IFPREFIX" \
		--nft-table "$NFT_TABLE" --runtime-dir "$T/netnsd" --cgroup-parent "$CGROUP_PARENT" \
		--image-store "$T/images" --image-cache "$VM_RAM_DIR-images" \
		--vm-ram-dir "$VM_RAM_DIR" "$@"
	wait_for 10 test -S "$T/netnsd.sock" || fail "netnsd did not start: $(cat "$T/netnsd.log")"
}
# the options that name this test's netnsd instance (runtime dir, cgroups, veths, table)
netnsd_instance_opts() {
	echo --subnet "$SUBNET" --ifname-prefix "$IFPREFIX" --nft-table "$NFT_TABLE" \
		--runtime-dir "$T/netnsd" --cgroup-parent "$CGROUP_PARENT"
}
remove_all() {
	# shellcheck disable=SC2046
	timeout 150 "$LIBEXEC/warren-netnsd" --remove-all $(netnsd_instance_opts) >>"$T/netnsd.log" 2>&1
}
start_snapshotd() {
	daemon snapshotd "$LIBEXEC/warren-snapshotd" --socket "$T/snapshotd.sock" --peer-users warren \
		--store "$T/images" --image-cache "$VM_RAM_DIR-images" ${SNAPSHOTD_OPTS:-}
	wait_for 10 test -S "$T/snapshotd.sock" || fail "snapshotd did not start"
}
start_gateway() {
	# as under the units and warren-launch: the socket is made for it (LISTEN_FDS), then it
	# runs as its own user
	install -d -m 0755 "$T/gw"
	daemon gateway warren-launch __sockact "$T/gw/gateway.sock" warren-gateway 0660 -- \
		setpriv --reuid=warren-gateway --regid=warren-gateway --clear-groups --no-new-privs \
		"$LIBEXEC/warren-gateway" --peer-users warren --port "$GW_PORT" \
		--metrics-port "$GW_METRICS_PORT" "$@"
	wait_for 10 test -S "$T/gw/gateway.sock" || fail "gateway did not start"
}
start_supervisor() {
	install -d -o warren -g warren -m 0700 "$T/state"
	daemon supervisor setpriv --reuid=warren --regid=warren --init-groups --no-new-privs \
		"$LIBEXEC/warren-supervisor" --state-dir "$T/state" --netnsd-socket "$T/netnsd.sock" \
		--snapshotd-socket "$T/snapshotd.sock" --gateway-socket "$T/gw/gateway.sock" \
		--gateway-url "$GW" "$@"
	wait_for 10 busctl --system status org.warren.Warren1 ||
		fail "supervisor did not take the bus name: $(cat "$T/supervisor.log")"
	wait_for 10 helpers_up || fail "helpers not connected: $(busctl --system get-property \
		org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager Helpers)"
}
helpers_up() {
	[ "$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1 \
		org.warren.Warren1.Manager Helpers)" = \
		'a(sbs) 3 "netnsd" true "'"$VERSION"'" "snapshotd" true "'"$VERSION"'" "gateway" true "'"$VERSION"'"' ]
}
VERSION=$(grep -m1 -o 'project(warren VERSION [0-9.]*' "$SOURCE/CMakeLists.txt" | cut -d' ' -f3)

warren_start() {
	start_bus
	start_netnsd "$@"
	start_snapshotd
	start_gateway
	start_supervisor
}

stop_pid() {
	local pid=$1
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
}

# at_exit CMD: run CMD (a string, eval'd) first thing in the clean-up, newest first. Tests add
# to the clean-up here rather than replacing the EXIT trap, which would lose the exit status.
EXIT_HOOKS=()
at_exit() { EXIT_HOOKS+=("$1"); }

cleanup() {
	local rc=${1:-$?}
	set +e
	trap '' USR1
	for ((i = ${#EXIT_HOOKS[@]} - 1; i >= 0; i--)); do eval "${EXIT_HOOKS[i]}"; done
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${PIDS[i]}"; done
	# a stopped netnsd leaves its sandboxes for the next one (restart without loss): remove
	# them for good (waits for the spawner's lock)
	[ -n "${PID_netnsd:-}" ] && remove_all
	[ -f "$T/bus.pid" ] && kill "$(cat "$T/bus.pid")" 2>/dev/null
	nft delete table inet "$NFT_TABLE" 2>/dev/null
	for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^$IFPREFIX"); do
		ip link del "$l" 2>/dev/null
	done
	if [ "$rc" != 0 ]; then
		for f in "$T"/*.log; do
			[ -f "$f" ] && { log "--- $f"; tail -n 30 "$f" >&2; }
		done
	fi
	rm -rf "$T" "$VM_RAM_DIR" "$VM_RAM_DIR-images"
	kill "$K_LOCK_PID" 2>/dev/null
	exit "$rc"
}
trap 'cleanup $?' EXIT

# D-Bus helpers
call() { busctl --system call org.warren.Warren1 "$@"; }
mgr() { call /org/warren/Warren1 org.warren.Warren1.Manager "$@"; }
# sbprop ID NAME: prints a sandbox property's value (quotes dropped). A property that cannot be
# read (no such sandbox, no such property, no bus) fails the test: an empty string must mean
# the property is empty, never that the read failed.
sbprop() {
	local out
	out=$(busctl --system get-property org.warren.Warren1 "/org/warren/Warren1/sandbox/$1" \
		org.warren.Warren1.Sandbox "$2" 2>&1) || fail "cannot read $2 of sandbox $1: $out"
	[[ $out == *" "* ]] || fail "unexpected reply for $2 of sandbox $1: $out"
	printf '%s\n' "${out#* }" | tr -d '"'
}
# has_state ID STATE: the sandbox is in STATE now (for wait_for; never fails the test itself)
has_state() {
	[ "$(busctl --system get-property org.warren.Warren1 "/org/warren/Warren1/sandbox/$1" \
		org.warren.Warren1.Sandbox State 2>/dev/null)" = "s \"$2\"" ]
}
ctl() { warrenctl "$@"; }
# create TEMPLATE [wait]: prints the new sandbox's id. A failed CreateSandbox, or a reply
# without a 12-hex id, is logged and returns 1, never an empty id with status 0: `id=$(create
# web)` then stops the test (errexit); a test that expects the failure turns errexit off and
# captures it (`set +e; err=$(create x 2>&1); set -e`), so this does not call fail.
create() {
	local out id
	if [ "${2:-}" = wait ]; then
		out=$(mgr CreateSandbox sa{sv} "$1" 1 wait b true 2>&1) ||
			{ log "CreateSandbox $1 (wait) failed: $out"; return 1; }
	else
		out=$(mgr CreateSandbox sa{sv} "$1" 0 2>&1) ||
			{ log "CreateSandbox $1 failed: $out"; return 1; }
	fi
	id=$(awk '{print $2}' <<<"$out" | tr -d '"')
	[[ $id =~ ^[0-9a-f]{12}$ ]] || { log "CreateSandbox $1 gave no sandbox id: $out"; return 1; }
	echo "$id"
}
# ids_in TEXT: the 12-hex sandbox ids in a D-Bus reply or warrenctl output, one a line
ids_in() { grep -oE '\b[0-9a-f]{12}\b' <<<"$1" || true; }
# expect_count DESCRIPTION N LIST: LIST (one item a line) has exactly N non-empty items. Loops
# over children check this first, so that zero children cannot pass them.
expect_count() {
	local n
	n=$(grep -c . <<<"$3" || true)
	expect "$1 ($n of $2)" test "$n" = "$2"
}
sb_url() { echo "http://$1.warren.localhost:$GW_PORT/"; }
