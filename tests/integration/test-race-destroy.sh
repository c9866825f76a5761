#!/bin/bash
# Races: a Destroy that arrives while a Snapshot checkpoints the sandbox waits behind
# the checkpoint in netnsd's spawner instead of being refused with EBUSY, and afterwards nothing
# of the sandbox is left (runtime, cgroup, bundle, record, slot); the Snapshot is either done
# (its tag sealed) or failed with a named error. The same Destroy without a Snapshot is the
# positive control of the leak checks. Both backends: gVisor (app: a checkpoint long enough to
# land in) and a QEMU microVM.
source "$(dirname "$0")/lib.sh"
POOL=4
warren_start

leftovers() { # what is left of sandbox $1 (empty: nothing)
	ls "$T/netnsd/sandboxes/$1" "$T/netnsd/bundles/$1" 2>/dev/null
	find /sys/fs/cgroup -maxdepth 3 -path "*$CGROUP_PARENT/$1" 2>/dev/null
	find "$T/netnsd/runsc" -name "$1*" 2>/dev/null
}
pool_free() {
	busctl --system get-property org.warren.Warren1 /org/warren/Warren1 \
		org.warren.Warren1.Manager PoolFree | awk '{print $2}'
}
race() { # race ID TAG: Snapshot in the background, Destroy once it is snapshotting
	local id=$1 tag=$2
	(call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Snapshot s "$tag" \
		>"$T/snap-$tag.out" 2>&1; echo "rc=$?" >>"$T/snap-$tag.out") &
	local snap=$!
	# the supervisor's log line, not the State property: a microVM's pause lasts ~120 ms, which
	# polling the property every 0.1 s (a busctl call each) missed now and then; the line
	# stays. The Destroy then lands in the pause or in the sealing after it: both are races
	# the checks below must survive.
	wait_for 20 grep -q "Sandbox $id: snapshotting" "$T/supervisor.log" ||
		fail "$id never went snapshotting"
	local out
	out=$(call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Destroy 2>&1) ||
		fail "Destroy during the snapshot of $id was refused: $out"
	log "ok: Destroy during the snapshot of $id answered"
	wait "$snap" || true
	log "the snapshot of $id said: $(tr '\n' ' ' <"$T/snap-$tag.out")"
	expect "the snapshot of $id is done or failed with a named error" \
		grep -qE 'rc=0|org\.warren\.Warren1\.Error\.[A-Za-z]+' "$T/snap-$tag.out"
	if grep -q rc=0 "$T/snap-$tag.out"; then
		expect "its tag $tag is sealed" sh -c "mgr ListTags 2>/dev/null | grep -q '$tag' || ls '$T/images' | grep -qx '$tag'"
	else
		expect "no temporary image of $tag is left" sh -c "! ls -a '$T/images' | grep -q '^.tmp.$tag'"
	fi
	expect "nothing of $id is left (runtime, cgroup, bundle, record)" \
		wait_for 30 sh -c "[ -z \"\$(ls $T/netnsd/sandboxes/$id $T/netnsd/bundles/$id 2>/dev/null; find /sys/fs/cgroup -maxdepth 3 -path '*$CGROUP_PARENT/$id' 2>/dev/null; find $T/netnsd/runsc -name '$id*' 2>/dev/null)\" ]"
	expect "the sandbox object is gone" wait_for 10 sh -c "! busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox State"
	expect "its slot went back (PoolFree $POOL)" wait_for 15 sh -c "[ \"\$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager PoolFree | awk '{print \$2}')\" = $POOL ]"
	expect "netnsd never answered EBUSY to the destroy" sh -c "! grep -q 'Destroying runtime: .*busy' '$T/supervisor.log'"
}

# positive control: a plain destroy leaves nothing
c=$(create web wait)
warrenctl destroy "$c" >/dev/null
expect "control: nothing of a plain destroy is left" wait_for 30 sh -c "[ -z \"\$(ls $T/netnsd/bundles/$c 2>/dev/null; find $T/netnsd/runsc -name '$c*')\" ]"
expect "control: PoolFree is back to $POOL" wait_for 15 sh -c "[ \"\$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager PoolFree | awk '{print \$2}')\" = $POOL ]"

a=$(create app wait)
race "$a" "race-a-$K"
expect "the spawner let the destroy wait behind the command under way" \
	grep -q "Sandbox $a: destroy waits for the command under way" "$T/netnsd.log"

v=$(mgr CreateSandbox sa{sv} web 3 wait b true backend s microvm start_timeout_ms u 60000 | awk '{print $2}' | tr -d '"') ||
	fail "no microVM"
race "$v" "race-v-$K"
expect "a new sandbox works after the races" sh -c "curl -fsS --max-time 20 $(sb_url "$(create web wait)") | grep -q Hello"
