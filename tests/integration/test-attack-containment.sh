#!/bin/bash
# Containment as documented (docs/ARCHITECTURE.md, process table): a compromised helper daemon
# holds only its own uid, its listed capabilities, no_new_privs and its seccomp filter, and the
# filter means what its groups say. Checked on the daemons as the test harness starts them (as
# root: they switch themselves) and as warren-launch starts them (the units' confinement: users,
# ambient capabilities, bounding sets, a read-only system in a mount namespace of their own).
# Also: runsc, which netnsd's spawner runs, works under the netnsd unit's SystemCallFilter.
source "$(dirname "$0")/lib.sh"
DENY_EXEC=$BUILD/tests/seccomp-deny-exec
LAUNCH_RUN=$T/l-run
launch_env() {
	env WARREN_LIBEXEC="$LIBEXEC" WARREN_UNITS="$SOURCE/units" WARREN_TMPFILES= \
		WARREN_RUN="$LAUNCH_RUN" \
		WARREN_LOG="$T/l-log" WARREN_RW_EXTRA="$T" \
		WARREN_NETNSD_OPTS="--pool-size 3 --subnet $SUBNET --ifname-prefix $IFPREFIX \
--nft-table $NFT_TABLE --runtime-dir $T/l-netnsd --cgroup-parent $CGROUP_PARENT \
--vm-ram-dir $VM_RAM_DIR" \
		WARREN_SNAPSHOTD_OPTS="--store $T/l-images --image-cache $VM_RAM_DIR-images" \
		WARREN_GATEWAY_OPTS="--port $GW_PORT" \
		WARREN_SUPERVISOR_OPTS="--state-dir $T/l-state --gateway-url $GW" \
		WARREN_E2B_API_OPTS="--listen 127.0.0.1:$((18400 + K)) --gateway 127.0.0.1:$GW_PORT \
--state-dir $T/l-e2b --api-keys $T/l-api-keys" \
		"$SOURCE/scripts/warren-launch" "$@"
}
trap 'rc=$?; [ -d "$LAUNCH_RUN/launch" ] && launch_env stop >/dev/null 2>&1; cleanup $rc' EXIT

# capability numbers -> the hex mask /proc/PID/status shows
capmask() {
	local m=0 c
	for c in "$@"; do m=$((m | (1 << c))); done
	printf '%016x' "$m"
}
CAP_DAC_OVERRIDE=1 CAP_NET_ADMIN=12 CAP_SYS_ADMIN=21
declare -A USER_OF=([netnsd]=warren-netnsd [snapshotd]=warren-snapshotd
	[gateway]=warren-gateway [supervisor]=warren [e2b-api]=warren-e2b)
# (no CAP_DAC_OVERRIDE: the spawner hands each sandbox's freezer and reclaim knobs to netnsd and
# snapshotd, and snapshotd opens zswap's parameters before its drop; the freeze and the reclaim
# below run with these sets)
declare -A CAPS_OF=([netnsd]=$(capmask $CAP_NET_ADMIN $CAP_SYS_ADMIN)
	[snapshotd]=$(capmask $CAP_SYS_ADMIN) [gateway]=$(capmask)
	[supervisor]=$(capmask) [e2b-api]=$(capmask))
field() { awk -v k="$2:" '$1 == k {$1 = ""; sub(/^ /, ""); print}' "/proc/$1/status"; }

# check_identity HOW NAME PID [bounding]: uid, gid, groups, capabilities, no_new_privs, seccomp
check_identity() {
	local how=$1 d=$2 pid=$3 uid gid
	uid=$(id -u "${USER_OF[$d]}")
	gid=$(id -g "${USER_OF[$d]}")
	expect "$how $d (pid $pid) runs as ${USER_OF[$d]}" \
		test "$(field "$pid" Uid)" = "$uid $uid $uid $uid"
	expect "$how $d: its own group" \
		test "$(field "$pid" Gid)" = "$gid $gid $gid $gid"
	expect "$how $d: CapEff ${CAPS_OF[$d]}" test "$(field "$pid" CapEff)" = "${CAPS_OF[$d]}"
	expect "$how $d: CapPrm ${CAPS_OF[$d]}" test "$(field "$pid" CapPrm)" = "${CAPS_OF[$d]}"
	expect "$how $d: nothing inheritable or ambient" \
		test "$(field "$pid" CapInh)$(field "$pid" CapAmb)" = "$(capmask)$(capmask)"
	if [ "${4:-}" = bounding ]; then
		expect "$how $d: CapBnd ${CAPS_OF[$d]}" test "$(field "$pid" CapBnd)" = "${CAPS_OF[$d]}"
	fi
	expect "$how $d: NoNewPrivs 1" test "$(field "$pid" NoNewPrivs)" = 1
	expect "$how $d: Seccomp 2 (filter)" test "$(field "$pid" Seccomp)" = 2
}

# 1. The netnsd unit's SystemCallFilter lets runsc run: runsc (ptrace platform: gofer,
# sentry, stubs) under the unit's deny-list as systemd would load it; the 0.2.0 list, which
# denied @debug (ptrace), kills it: the check can fail.
deny_list() {
	local g
	for g in "$@"; do
		systemd-analyze syscall-filter "$g" | sed 's/^ *//' | grep -v '^#' | grep -v '^$'
	done | sort -u
}
filter=$(sed -n 's/^SystemCallFilter=~//p' "$SOURCE/units/warren-netnsd.service")
[ -n "$filter" ] || fail "the netnsd unit has no SystemCallFilter deny-list"
# shellcheck disable=SC2086 # a list of groups
deny_list $filter >"$T/unit-deny"
# shellcheck disable=SC2086
deny_list $filter @debug >"$T/old-deny"
expect "the netnsd unit does not deny ptrace" sh -c "! grep -qx ptrace $T/unit-deny"
runsc_do() {
	timeout 120 "$DENY_EXEC" "$1" -- runsc --root="$T/runsc-$2" --platform=ptrace \
		--network=none do /bin/echo "runsc-ok-$2" >"$T/runsc-$2.out" 2>&1
}
rc=0
runsc_do "$T/unit-deny" unit || rc=$?
expect "runsc runs under the netnsd unit's filter (rc $rc)" grep -q runsc-ok-unit "$T/runsc-unit.out"
rc=0
runsc_do "$T/old-deny" old || rc=$?
expect "control: with @debug denied runsc does not run (rc $rc)" \
	sh -c "! grep -q runsc-ok-old $T/runsc-old.out"

# 2. Each daemon's filter, one probe per rule: what the policy allows survives, the rest is
# killed (exit 128+SIGSYS). A process under @file-read opens only for reading (netnsd's
# @file-update writes existing files, never creates or truncates); unshare only with the
# flags a daemon needs; ioctl only with the requests it uses; socket only in its families.
PROBES=(allowed forbidden open-read open-update open-write unshare-net unshare-user
	unshare-mount ioctl-fionread ioctl-tiocsti socket-unix socket-netlink socket-inet
	socket-packet)
declare -A LIVES=(
	[netnsd]="allowed open-read open-update unshare-net socket-unix socket-netlink"
	[snapshotd]="allowed open-read open-update open-write socket-unix"
	[gateway]="allowed ioctl-fionread socket-unix socket-inet"
	[supervisor]="allowed open-read open-update open-write socket-unix"
	[e2b-api]="allowed open-read open-update open-write ioctl-fionread socket-unix socket-inet")
for d in netnsd snapshotd gateway supervisor e2b-api; do
	args=(--socket "$T/probe-$d.sock")
	[ $d = supervisor ] && args=(--state-dir "$T/probe-state" --templates-dir /var/lib/warren/templates)
	[ $d = e2b-api ] && args=(--state-dir "$T/probe-state")
	for p in "${PROBES[@]}"; do
		rc=0
		"$LIBEXEC/warren-$d" "${args[@]}" --seccomp-probe "$p" >"$T/probe.out" 2>&1 || rc=$?
		if [[ " ${LIVES[$d]} " == *" $p "* ]]; then
			expect "$d: $p survives its filter (rc $rc)" \
				sh -c "test $rc = 0 && grep -q '$p survived' $T/probe.out"
		else
			expect "$d: $p is killed by its filter (rc $rc)" test "$rc" = $((128 + 31))
		fi
	done
done

# 3. The daemons as the harness starts them (netnsd and snapshotd as root, switching
# themselves), doing their jobs under their users: a sandbox is created, served, frozen by
# netnsd (runsc's freezer.state), thawed by a request, destroyed.
warren_start
check_identity harness netnsd "$PID_netnsd" bounding
check_identity harness snapshotd "$PID_snapshotd" bounding
check_identity harness gateway "$PID_gateway"
check_identity harness supervisor "$PID_supervisor"
expect "harness netnsd: no supplementary groups" test -z "$(field "$PID_netnsd" Groups)"
expect "harness snapshotd: its store is its own" \
	test "$(stat -c %U "$T/images")" = warren-snapshotd
id=$(create web wait)
expect "a sandbox starts under the switched helpers" test -n "$id"
expect "it answers through the gateway" sh -c "curl -fsS --max-time 30 $(sb_url "$id") | grep -q Hello"
# the spawner handed exactly the two knobs the helpers write, and nothing else, to them
CG_FZ=/sys/fs/cgroup/freezer$CGROUP_PARENT/$id CG_MEM=/sys/fs/cgroup/memory$CGROUP_PARENT/$id
if [ -d "$CG_FZ" ]; then
	expect "the sandbox's freezer.state is warren-netnsd's" \
		test "$(stat -c %U "$CG_FZ/freezer.state")" = warren-netnsd
	expect "its memory.force_empty is warren-snapshotd's" \
		test "$(stat -c %U "$CG_MEM/memory.force_empty")" = warren-snapshotd
	expect "every other file of its cgroups stays root's" \
		test -z "$(find "$CG_FZ" "$CG_MEM" /sys/fs/cgroup/pids$CGROUP_PARENT/$id \
			! -user root ! -name freezer.state ! -name memory.force_empty)"
else
	CG2=/sys/fs/cgroup$CGROUP_PARENT/$id
	expect "the sandbox's cgroup.freeze is warren-netnsd's" \
		test "$(stat -c %U "$CG2/cgroup.freeze")" = warren-netnsd
	expect "its memory.reclaim is warren-snapshotd's" \
		test "$(stat -c %U "$CG2/memory.reclaim")" = warren-snapshotd
	expect "every other file of its cgroup stays root's" \
		test -z "$(find "$CG2" ! -user root ! -name cgroup.freeze ! -name memory.reclaim)"
fi
call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Freeze
expect "netnsd as warren-netnsd, without CAP_DAC_OVERRIDE, froze it" test "$(sbprop "$id" State)" = frozen
expect "a request thaws it" sh -c "curl -fsS --max-time 30 $(sb_url "$id") | grep -q Hello"
warrenctl destroy "$id" >/dev/null
for p in "${PIDS[@]}"; do stop_pid "$p"; done
PIDS=()
for _ in $(seq 100); do pgrep -x netnsd-spawner >/dev/null || break; sleep 0.1; done

# 4. The same daemons under warren-launch: the units' users, capabilities and bounding sets,
# and a read-only system in their own mount namespace (writable: what the unit lists).
install -d -m 0700 -o warren-snapshotd -g warren-snapshotd "$T/l-images"
install -d -m 0700 -o warren -g warren "$T/l-state"
# a mount of its own outside every unit's writable paths (as /tmp, /var or /boot are on many
# hosts): read-only in the daemons' namespaces too (0.2.0's bind remount of / left it writable);
# and a file in the host's /tmp, which the PrivateTmp= units (gateway, supervisor) must not see
ROPROBE=/run/warren-ro-probe-t$K
install -d -m 0777 "$ROPROBE"
mount -t tmpfs -o mode=0777,size=1m warren-ro-probe "$ROPROBE"
TMPPROBE=/tmp/warren-privtmp-probe-t$K
echo host >"$TMPPROBE"
trap 'rc=$?; [ -d "$LAUNCH_RUN/launch" ] && launch_env stop >/dev/null 2>&1; umount "$ROPROBE" 2>/dev/null; rmdir "$ROPROBE" 2>/dev/null; rm -f "$TMPPROBE"; cleanup $rc' EXIT
expect "control: the probe mount is writable on the host" sh -c "echo x >$ROPROBE/host && rm $ROPROBE/host"
install -d -m 0700 -o warren-e2b -g warren-e2b "$T/l-e2b"
launch_env start >"$T/launch.out" 2>&1 ||
	fail "warren-launch did not start: $(cat "$T/launch.out"; tail -5 "$T"/l-log/*.log)"
for d in netnsd snapshotd gateway supervisor; do
	pid=$(cat "$LAUNCH_RUN/launch/$d.pid")
	check_identity warren-launch $d "$pid" bounding
	expect "warren-launch $d: / is read-only in its mount namespace" \
		sh -c "awk '\$5 == \"/\" {print \$6}' /proc/$pid/mountinfo | grep -q '^ro'"
	expect "warren-launch $d: a write to /etc fails there" \
		sh -c "! nsenter -t $pid -m sh -c 'echo x >/etc/.warren-containment' 2>/dev/null"
	expect "warren-launch $d: ... and left nothing" test ! -e /etc/.warren-containment
	expect "control: warren-launch $d writes where it may (WARREN_RW_EXTRA) in that namespace" \
		nsenter -t "$pid" -m sh -c "echo x >$T/.probe-$d"
	expect "warren-launch $d: another mount ($ROPROBE) is read-only there too (recursive)" \
		sh -c "! nsenter -t $pid -m sh -c 'echo x >$ROPROBE/$d' 2>/dev/null"
	if grep -qx PrivateTmp=yes "$SOURCE/units/warren-$d.service"; then
		expect "warren-launch $d: a /tmp of its own (PrivateTmp=): the host's file is not there" \
			sh -c "! nsenter -t $pid -m test -e $TMPPROBE"
		expect "warren-launch $d: ... and what it writes there stays there" \
			sh -c "nsenter -t $pid -m sh -c 'echo x >/tmp/.warren-privtmp-$d' && test ! -e /tmp/.warren-privtmp-$d"
	else
		expect "control: warren-launch $d (no PrivateTmp=) sees the host's /tmp" \
			nsenter -t "$pid" -m test -e "$TMPPROBE"
	fi
	expect "warren-launch $d: another mount namespace than the host's" \
		test "$(readlink /proc/$pid/ns/mnt)" != "$(readlink /proc/self/ns/mnt)"
done
wait_for 10 test -s "$LAUNCH_RUN/launch/e2b-api.pid" || fail "warren-launch did not start e2b-api"
wait_for 10 curl -fsS "http://127.0.0.1:$((18400 + K))/health" ||
	fail "warren-launch's e2b-api does not answer: $(tail -5 "$T/l-log/e2b-api.log")"
check_identity warren-launch e2b-api "$(cat "$LAUNCH_RUN/launch/e2b-api.pid")" bounding
expect "warren-launch supervisor: its own network namespace (PrivateNetwork=yes)" \
	test "$(readlink /proc/$(cat "$LAUNCH_RUN/launch/supervisor.pid")/ns/net)" != \
	"$(readlink /proc/self/ns/net)"
id=$(create web wait)
expect "a sandbox starts under warren-launch (runsc in the read-only namespace)" test -n "$id"
expect "it answers through the gateway" sh -c "curl -fsS --max-time 30 $(sb_url "$id") | grep -q Hello"
call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Freeze
expect "frozen under warren-launch" test "$(sbprop "$id" State)" = frozen
warrenctl destroy "$id" >/dev/null
launch_env stop >/dev/null
expect "warren-launch stop stopped them" test ! -e "$LAUNCH_RUN/launch/netnsd.loop"
