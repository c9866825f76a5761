#!/bin/bash
# Restart without loss: kill -9 of netnsd, of its spawner, or of both leaves every
# sandbox running, on both backends: a gVisor sandbox running, one frozen, and a QEMU microVM
# keep their runtimes (same pids), slots (veths), cgroups and nftables rules; they answer
# through the gateway while netnsd is down, the restarted netnsd adopts them (ListSandboxes),
# the supervisor re-syncs (running stays running, frozen stays frozen and thaws on a request),
# and exec, snapshot and destroy work on adopted sandboxes afterwards. Nothing leaks: veths =
# pool size, one cgroup, one runsc state and one bundle per live sandbox.
# Hostile records: a record naming a process that is not the sandbox (a `sleep` of the test's,
# outside the sandbox cgroup), a symlinked record, a record naming another sandbox's slot, and
# a runtime directory others may write are all refused; the process named is not touched.
source "$(dirname "$0")/lib.sh"
POOL=6
warren_start

vm_create() {
	local out
	for attempt in 1 2; do
		out=$(mgr CreateSandbox sa{sv} web 3 wait b true backend s microvm start_timeout_ms u 60000 2>&1) &&
			{ echo "$out" | awk '{print $2}' | tr -d '"'; return 0; }
		log "microVM create attempt $attempt failed: $out"
	done
	return 1
}
a=$(create web wait)
b=$(create web wait)
v=$(vm_create) || fail "no microVM came up"
call "/org/warren/Warren1/sandbox/$b" org.warren.Warren1.Sandbox Freeze
expect "b is frozen" has_state "$b" frozen

runtime_pid() { # the runtime's pid as the spawner's record says
	sed -n 's/^pid=//p' "$T/netnsd/sandboxes/$1"
}
pa=$(runtime_pid "$a")
pb=$(runtime_pid "$b")
pv=$(runtime_pid "$v")
expect "each sandbox has a record ($pa $pb $pv)" test -n "$pa" -a -n "$pb" -a -n "$pv"
expect "the records are root's 0600" test "$(stat -c %U:%a "$T/netnsd/sandboxes/$a")" = root:600
spawner_pid() { pgrep -P "$PID_netnsd" -x netnsd-spawner | head -1; }

answers() { # answers ID WORD: the sandbox answers through the gateway
	curl -fsS --max-time 20 "$(sb_url "$1")" | grep -q "$2"
}
all_alive() {
	kill -0 "$pa" && kill -0 "$pb" && kill -0 "$pv"
}
no_leaks() { # veths = the pool; cgroups, runsc states and bundles = the live sandboxes
	local n_sb=$1 veths cgs states bundles
	veths=$(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -c "^$IFPREFIX" || true)
	cgs=$(find /sys/fs/cgroup/pids"$CGROUP_PARENT" /sys/fs/cgroup"$CGROUP_PARENT" -mindepth 1 \
		-maxdepth 1 -type d 2>/dev/null | wc -l)
	states=$(find "$T/netnsd/runsc" -name '*.state' | wc -l)
	bundles=$(find "$T/netnsd/bundles" -mindepth 1 -maxdepth 1 | wc -l)
	log "veths $veths (pool $POOL), cgroups $cgs, runsc states $states, bundles $bundles (sandboxes $n_sb)"
	[ "$veths" = "$POOL" ] && [ "$cgs" = "$n_sb" ] && [ "$bundles" = "$n_sb" ] &&
		[ "$states" = "$((n_sb - 1))" ] # the microVM has no runsc state
}
after_restart() { # after_restart WHAT: netnsd came back; everything as before
	local what=$1
	expect "$what: netnsd reconnected" wait_for 30 helpers_up
	expect "$what: the runtimes are the same processes" all_alive
	RESTARTS=$((RESTARTS + 1))
	expect "$what: netnsd adopted all three" adopted_each "$RESTARTS" "$a" "$b" "$v"
	expect "$what: a is running" wait_for 10 has_state "$a" running
	expect "$what: v is running" wait_for 10 has_state "$v" running
	expect "$what: b is still frozen" has_state "$b" frozen
	expect "$what: a answers through the gateway" answers "$a" Hello
	expect "$what: v answers through the gateway" answers "$v" Warren
	expect "$what: nothing leaked, nothing lost" no_leaks 3
	expect "$what: a new sandbox can still be created and destroyed" \
		sh -c "id=\$(busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager CreateSandbox 'sa{sv}' web 1 wait b true | awk '{print \$2}' | tr -d '\"') && curl -fsS --max-time 20 http://\$id.warren.localhost:$GW_PORT/ | grep -q Hello && warrenctl destroy \$id >/dev/null"
	expect "$what: and leaves nothing" wait_for 20 no_leaks 3
}
RESTARTS=0
adopted_each() { # adopted_each N ID...: netnsd's log says N times that it adopted each
	local n=$1 id
	shift
	for id in "$@"; do
		[ "$(grep -c "Adopting sandbox $id " "$T/netnsd.log")" = "$n" ] || return 1
	done
}
expect "before: nothing leaked" no_leaks 3

# ---- 1. kill -9 of netnsd ----
sp=$(spawner_pid)
kill -9 "$PID_netnsd"
wait "$PID_netnsd" 2>/dev/null || true
expect "the spawner exits after netnsd (its commands done)" wait_for 20 sh -c "! kill -0 $sp"
expect "netnsd down: the runtimes keep running" all_alive
expect "netnsd down: a still answers through the gateway" answers "$a" Hello
expect "netnsd down: v still answers through the gateway" answers "$v" Warren
start_netnsd
after_restart "kill -9 netnsd"

# ---- 2. kill -9 of the spawner alone ----
old=$PID_netnsd
kill -9 "$(spawner_pid)"
expect "netnsd exits when its spawner dies" wait_for 20 sh -c "! kill -0 $old"
wait "$old" 2>/dev/null || true
expect "spawner killed: the runtimes keep running" all_alive
start_netnsd
after_restart "kill -9 spawner"

# ---- 3. kill -9 of both ----
sp=$(spawner_pid)
kill -9 "$PID_netnsd" "$sp"
wait "$PID_netnsd" 2>/dev/null || true
expect "both killed: the runtimes keep running" all_alive
start_netnsd
after_restart "kill -9 both"

# ---- adopted sandboxes work as before ----
expect "a request thaws the frozen b" answers "$b" Hello
expect "b is running" wait_for 10 has_state "$b" running
expect "exec in adopted a" sh -c "warrenctl exec $a -- /bin/busybox echo adopted-ok | grep -q adopted-ok"
# the console (a FIFO the guest holds open read-write) is drained again by the new spawner:
# what the guest's program writes to its stdout reaches runsc.log
warrenctl exec "$a" -- /bin/busybox sh -c 'echo console-after-restart >/proc/1/fd/1' >/dev/null ||
	fail "exec writing to a's console"
expect "the adopted console is drained into runsc.log" \
	wait_for 10 grep -q console-after-restart "$T/netnsd/bundles/$a/runsc.log"
expect "every adopted console was opened again" sh -c "! grep -q 'cannot open its console again' '$T/netnsd.log'"
expect "exec in adopted v (its agent)" sh -c "warrenctl exec $v -- /bin/busybox echo adopted-ok | grep -q adopted-ok"
call "/org/warren/Warren1/sandbox/$a" org.warren.Warren1.Sandbox Snapshot s "rs$K" >/dev/null ||
	fail "snapshot of adopted a"
expect "a answers after its snapshot" wait_for 30 answers "$a" Hello
# the spawner restored it in place (its bundle now names this spawner's namespace fd), not the
# supervisor from the sealed image
expect "adopted a was restored in place by the new spawner" \
	grep -q "Sandbox $a: restored in place after its checkpoint" "$T/netnsd.log"
warrenctl destroy "$a" >/dev/null
expect "destroying adopted a leaves no runtime" wait_for 20 sh -c "! kill -0 $pa 2>/dev/null && ! test -e $T/netnsd/sandboxes/$a && ! test -e $T/netnsd/bundles/$a"
warrenctl destroy "$v" >/dev/null
expect "destroying adopted v leaves no VMM" wait_for 20 sh -c "! kill -0 $pv 2>/dev/null && ! test -e $T/netnsd/bundles/$v"

# ---- hostile records ----
stop_pid "$PID_netnsd"
wait "$PID_netnsd" 2>/dev/null || true
expect "SIGTERM too leaves b running" kill -0 "$pb"
sleep 600 &
victim=$!
PIDS+=("$victim")
fake=aaaaaaaaaaaa
start=$(awk '{print $22}' "/proc/$victim/stat")
printf 'id=%s\nslot=5\npid=%s\nstart=%s\nbackend=gvisor\nmemory=0\n' "$fake" "$victim" "$start" \
	>"$T/netnsd/sandboxes/$fake"
chmod 0600 "$T/netnsd/sandboxes/$fake"
# a record claiming b's slot for b's own process under another id
cp "$T/netnsd/sandboxes/$b" "$T/netnsd/sandboxes/bbbbbbbbbbbb"
sed -i "s/^id=.*/id=bbbbbbbbbbbb/" "$T/netnsd/sandboxes/bbbbbbbbbbbb"
ln -s "$T/netnsd/sandboxes/$b" "$T/netnsd/sandboxes/cccccccccccc"
# a cgroup beside the sandboxes' that Warren did not make (a --cgroup-parent shared with other
# services, e.g. /system.slice): the new spawner clears leftover sandbox cgroups, not this one
sleep 600 &
neighbour=$!
PIDS+=("$neighbour")
for d in /sys/fs/cgroup/pids"$CGROUP_PARENT" /sys/fs/cgroup"$CGROUP_PARENT"; do
	[ -e "$d/cgroup.procs" ] || continue
	mkdir -p "$d/neighbour.service"
	echo "$neighbour" >"$d/neighbour.service/cgroup.procs"
done
start_netnsd
expect "hostile: netnsd came back" wait_for 30 helpers_up
expect "hostile: a process outside the sandbox cgroups is not adopted" \
	grep -q "Not adopting sandbox record .*/$fake: pid $victim is not in cgroup" "$T/netnsd.log"
expect "hostile: and not killed" kill -0 "$victim"
expect "hostile: a cgroup not named like a sandbox keeps its process" kill -0 "$neighbour"
expect "hostile: and is not removed" sh -c "ls -d /sys/fs/cgroup/pids$CGROUP_PARENT/neighbour.service /sys/fs/cgroup$CGROUP_PARENT/neighbour.service 2>/dev/null | grep -q ."
kill "$neighbour"
wait "$neighbour" 2>/dev/null || true
rmdir /sys/fs/cgroup/pids"$CGROUP_PARENT"/neighbour.service /sys/fs/cgroup"$CGROUP_PARENT"/neighbour.service 2>/dev/null || true
expect "hostile: another id for b's process is not adopted" \
	grep -q "Not adopting sandbox record .*/bbbbbbbbbbbb: " "$T/netnsd.log"
expect "hostile: a symlinked record is not adopted" \
	grep -q "Not adopting sandbox record .*/cccccccccccc: " "$T/netnsd.log"
expect "hostile: the refused records are gone" \
	sh -c "! ls $T/netnsd/sandboxes | grep -qE 'a{12}|b{12}|c{12}'"
expect "hostile: b (the positive control) is adopted and answers" answers "$b" Hello
expect "hostile: netnsd adopted b once more" adopted_each $((RESTARTS + 1)) "$b"
# a runtime directory others may write: netnsd refuses to read records from it
stop_pid "$PID_netnsd"
wait "$PID_netnsd" 2>/dev/null || true
chmod 0770 "$T/netnsd"
set +e
timeout 20 "$LIBEXEC/warren-netnsd" --socket "$T/netnsd2.sock" --peer-users warren $(netnsd_instance_opts) \
	--pool-size "$POOL" >"$T/netnsd-refused.log" 2>&1
rc=$?
set -e
expect "hostile: a group-writable runtime directory is refused (rc $rc)" \
	grep -q "must be root's and writable by root only" "$T/netnsd-refused.log"
chmod 0700 "$T/netnsd"
expect "hostile: b still runs" kill -0 "$pb"
start_netnsd
expect "b answers after all that" sh -c "curl -fsS --max-time 30 $(sb_url "$b") | grep -q Hello"
