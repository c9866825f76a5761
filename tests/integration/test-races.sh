#!/bin/bash
# Races the supervisor must survive with nothing lost or leaked (issue 12): a Destroy during a
# create (before and after the create's reply) and during a restore (a fork child), a Freeze
# during a fork, and two forks of one tag while RemoveTag runs. After each: every sandbox that
# should run answers through the gateway, every call was answered (done, or failed with a named
# org.warren.Warren1.Error), and nothing is left of what went away: netnsd's records, bundles and
# runsc states match the live sandboxes, and PoolFree is the pool minus them. gVisor (`web`).
# A RemoveTag while fork children wait for slots is refused (TagBusy) until they run; a
# Destroy while a Snapshot's parent is restored does not bring it back.
# (A Destroy during a Snapshot is test-race-destroy's.)
source "$(dirname "$0")/lib.sh"
POOL=6
warren_start

live() { # the ids the supervisor lists, sorted
	ids_in "$(mgr ListSandboxes 2>/dev/null)" | sort -u
}
# leaks: what netnsd still holds of sandboxes the supervisor no longer lists (empty: nothing)
leaks() {
	local l
	l=$(live)
	for d in "$T/netnsd/sandboxes" "$T/netnsd/bundles"; do
		for f in $(ls "$d" 2>/dev/null); do grep -qx "$f" <<<"$l" || echo "$d/$f"; done
	done
	for f in $(find "$T/netnsd/runsc" -maxdepth 1 -name '[0-9a-f]*' -printf '%f\n' 2>/dev/null); do
		grep -qx "${f:0:12}" <<<"$l" || echo "runsc state $f"
	done
	for f in $(find /sys/fs/cgroup -maxdepth 3 -path "*$CGROUP_PARENT/*" -printf '%f\n' 2>/dev/null | sort -u); do
		[[ $f =~ ^[0-9a-f]{12}$ ]] && ! grep -qx "$f" <<<"$l" && echo "cgroup $f"
	done
	true
}
pool_free() {
	busctl --system get-property org.warren.Warren1 /org/warren/Warren1 \
		org.warren.Warren1.Manager PoolFree | awk '{print $2}'
}
no_leaks() { [ -z "$(leaks)" ]; }
# every slot not held by a listed sandbox is free (counted anew each time: destroys finish)
pool_settled() { [ "$(pool_free)" = $((POOL - $(live | grep -c . || true))) ]; }
# settled WHAT: nothing leaked and every slot not in use is free again
settled() {
	wait_for 30 no_leaks || fail "$1: leaked: $(leaks | tr '\n' ' ')"
	log "ok: $1: nothing leaked"
	expect "$1: PoolFree is $POOL less the live sandboxes" wait_for 20 pool_settled
}
answers() { curl -fsS --max-time 20 "$(sb_url "$1")" 2>/dev/null | grep -q Hello; }
# named OUTFILE: the call in OUTFILE was answered: done (rc=0) or a named Warren error
named() { grep -qE 'rc=0|org\.warren\.Warren1\.Error\.[A-Za-z]+' "$1"; }
# gcall PATH INTERFACE.METHOD ARGS...: through gdbus, which shows the D-Bus error's name
gcall() {
	local path=$1 method=$2
	shift 2
	gdbus call --system --dest org.warren.Warren1 --object-path "$path" --method "$method" "$@"
}
gmgr() { local m=$1; shift; gcall /org/warren/Warren1 "org.warren.Warren1.Manager.$m" "$@"; }
gone() { ! busctl --system get-property org.warren.Warren1 "/org/warren/Warren1/sandbox/$1" \
	org.warren.Warren1.Sandbox State >/dev/null 2>&1; }

keep=$(create web wait)
expect "the sandbox kept through the races answers" answers "$keep"

# ---- 1. Destroy during a create, at several points before it runs
for delay in 0 0.05 0.3 1; do
	id=$(create web)
	sleep "$delay"
	out=$(call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Destroy 2>&1) ||
		fail "Destroy $delay s into the create of $id was refused: $out"
	expect "Destroy $delay s into a create: the sandbox is gone" wait_for 30 gone "$id"
	settled "Destroy $delay s into a create"
done

# ---- 2. Destroy while a CreateSandbox(wait) waits: the create answers with a named error,
# never a helper's failure, and never hangs
(set +e; gmgr CreateSandbox web "{'wait': <true>}" >"$T/create-wait.out" 2>&1
	echo "rc=$?" >>"$T/create-wait.out") &
cw=$!
others() { live | grep -vxE "${1:-$keep}" | grep -q .; }
wait_for 20 others || fail "the waiting create made no sandbox"
id=$(live | grep -vx "$keep" | head -1)
call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Destroy >/dev/null 2>&1 ||
	fail "Destroy of the waiting create's sandbox $id was refused"
ended() { ! kill -0 "$1" 2>/dev/null; }
expect "the waiting create was answered" wait_for 30 ended "$cw"
log "the waiting create said: $(tr '\n' ' ' <"$T/create-wait.out")"
expect "the waiting create is done or failed with a named error" named "$T/create-wait.out"
expect "its error does not blame a helper that is up" \
	sh -c "! grep -qE 'not available|HelperUnavailable' '$T/create-wait.out'"
expect "the destroyed sandbox is gone" wait_for 30 gone "$id"
settled "Destroy during a waiting create"

# ---- 3. Destroy during a restore: a fork child destroyed as soon as ForkTag names it
src=$(create web wait)
call "/org/warren/Warren1/sandbox/$src" org.warren.Warren1.Sandbox Snapshot s "race-$K" >/dev/null ||
	fail "no snapshot to fork"
for delay in 0 0.2 1; do
	out=$(mgr ForkTag su "race-$K" 1 2>&1) || fail "ForkTag failed: $out"
	child=$(ids_in "$out" | head -1)
	[ -n "$child" ] || fail "ForkTag named no child: $out"
	sleep "$delay"
	out=$(call "/org/warren/Warren1/sandbox/$child" org.warren.Warren1.Sandbox Destroy 2>&1) ||
		fail "Destroy $delay s into the restore of $child was refused: $out"
	expect "Destroy $delay s into a restore: the child is gone" wait_for 30 gone "$child"
	settled "Destroy $delay s into a restore"
done
expect "the snapshotted sandbox answers (resumed after its snapshot)" wait_for 30 answers "$src"

# ---- 4. Freeze during a fork: each child is frozen as early as the supervisor lets it (a
# starting sandbox's Freeze is refused with BadState; the fork's own route refresh and
# readiness race the first accepted one); frozen children answer (the gateway thaws them)
(set +e; gmgr ForkTag "race-$K" 3 >"$T/fork-freeze.out" 2>&1; echo "rc=$?" >>"$T/fork-freeze.out") &
fk=$!
declare -A frozen=()
for _ in $(seq 200); do
	for c in $(live | grep -vxE "$keep|$src"); do
		[ -n "${frozen[$c]:-}" ] && continue
		if gcall "/org/warren/Warren1/sandbox/$c" org.warren.Warren1.Sandbox.Freeze \
			>"$T/freeze-$c.out" 2>&1; then
			frozen[$c]=1
		else
			echo "rc=1" >>"$T/freeze-$c.out"
			named "$T/freeze-$c.out" || fail "Freeze of starting child $c: $(cat "$T/freeze-$c.out")"
		fi
	done
	[ "${#frozen[@]}" -ge 3 ] && break
	sleep 0.05
done
wait "$fk" || true
log "the fork said: $(tr '\n' ' ' <"$T/fork-freeze.out"); ${#frozen[@]} children frozen"
expect "the fork during Freezes answered" named "$T/fork-freeze.out"
kids=$(ids_in "$(cat "$T/fork-freeze.out")")
expect_count "the fork during Freezes made its children" 3 "$kids"
expect "every child was frozen once it could be" test "${#frozen[@]}" = 3
for c in $kids; do
	expect "child $c, frozen while it started, answers" wait_for 40 answers "$c"
done
for c in $kids; do warrenctl destroy "$c" >/dev/null; done
settled "Freeze during a fork"

# ---- 5. Two forks of one tag while RemoveTag runs: at once (the image may go before the
# forks open it) and once the forks are under way (TagBusy while children restore)
race_remove() { # race_remove DELAY TAG
	local delay=$1 tag=$2 f c
	call "/org/warren/Warren1/sandbox/$src" org.warren.Warren1.Sandbox Snapshot s "$tag" >/dev/null ||
		fail "no snapshot $tag to fork"
	(set +e; gmgr ForkTag "$tag" 2 >"$T/fork-a.out" 2>&1; echo "rc=$?" >>"$T/fork-a.out") &
	local fa=$!
	(set +e; gmgr ForkTag "$tag" 2 >"$T/fork-b.out" 2>&1; echo "rc=$?" >>"$T/fork-b.out") &
	local fb=$!
	sleep "$delay"
	(set +e; gmgr RemoveTag "$tag" >"$T/remove.out" 2>&1; echo "rc=$?" >>"$T/remove.out")
	wait "$fa" "$fb" || true
	for f in fork-a fork-b remove; do
		log "$delay s: $f said: $(tr '\n' ' ' <"$T/$f.out")"
		expect "$delay s: $f was done or failed with a named error" named "$T/$f.out"
	done
	for c in $(ids_in "$(cat "$T/fork-a.out" "$T/fork-b.out")"); do
		expect "$delay s: fork child $c made during RemoveTag answers" wait_for 40 answers "$c"
		warrenctl destroy "$c" >/dev/null
	done
	if ! grep -q rc=0 "$T/remove.out"; then
		expect "$delay s: RemoveTag refused while children restore: TagBusy" \
			grep -q TagBusy "$T/remove.out"
		expect "$delay s: the tag is removed once the forks are done" \
			wait_for 30 mgr RemoveTag s "$tag"
	fi
	tag_listed() { mgr ListTags | grep -q "$1"; }
	expect "$delay s: the removed tag is not listed" eval "! tag_listed $tag"
	expect "$delay s: no image of the removed tag is left, nor a temporary one" \
		sh -c "! ls -a '$T/images' | grep -qE '$tag|^\.tmp'"
	settled "$delay s: two forks during RemoveTag"
}
race_remove 0.05 "race-r0-$K"
race_remove 0.12 "race-r2-$K"
race_remove 0.3 "race-r1-$K"

# ---- 6. RemoveTag while a fork's children wait for slots: they hold the image from their
# create on (not only while netnsd restores them), so the tag is busy until they run; removing
# it would empty the image directory under their restores
sbs=$(live | grep -c .)
n=$((POOL - sbs + 2)) # two more children than free slots: two wait for a slot
tag="race-w-$K"
call "/org/warren/Warren1/sandbox/$src" org.warren.Warren1.Sandbox Snapshot s "$tag" >/dev/null ||
	fail "no snapshot $tag to fork"
(set +e; gmgr ForkTag "$tag" "$n" >"$T/fork-w.out" 2>&1; echo "rc=$?" >>"$T/fork-w.out") &
fw=$!
# the children that found a slot run; the two others wait in netnsd for one (up to 30 s)
running_kids() { live | grep -vxE "$keep|$src" | while read -r c; do has_state "$c" running && echo "$c"; done; }
n_running() { [ "$(running_kids | grep -c .)" -ge "$1" ]; }
expect "the $((n - 2)) children that found a slot run" wait_for 25 n_running $((n - 2))
(set +e; gmgr RemoveTag "$tag" >"$T/remove-w.out" 2>&1; echo "rc=$?" >>"$T/remove-w.out")
log "RemoveTag during the fork said: $(tr '\n' ' ' <"$T/remove-w.out")"
expect "RemoveTag while children wait for slots: TagBusy" grep -q TagBusy "$T/remove-w.out"
# two running children make room for the two waiting
for c in $(running_kids | head -2); do warrenctl destroy "$c" >/dev/null; done
expect "the fork answered" wait_for 60 ended "$fw"
log "the fork said: $(tr '\n' ' ' <"$T/fork-w.out")"
expect "the fork is done" grep -q rc=0 "$T/fork-w.out"
kids=$(live | grep -vxE "$keep|$src")
expect_count "its children that were not destroyed live" $((n - 2)) "$kids"
for c in $kids; do
	expect "child $c (some waited for a slot) answers" wait_for 40 answers "$c"
	warrenctl destroy "$c" >/dev/null
done
expect "the tag is removed once the children run" wait_for 30 mgr RemoveTag s "$tag"
settled "RemoveTag during a fork waiting for slots"

# ---- 7. Destroy while the parent of a Snapshot is restored from the image just sealed (a
# gVisor checkpoint stops it; it then comes back from the image): the sandbox is gone as
# asked, the snapshot is done, and the destroyed sandbox is never brought back or failed
# brought_back ID: the supervisor's log shows ID failed, or starting again after its destroy
brought_back() {
	awk -v p="Sandbox $1: " 'index($0, p "destroying") { d = 1 }
		d && index($0, p "starting") { b = 1 }
		index($0, p "failed") { b = 1 }
		END { exit !b }' "$T/supervisor.log"
}
for round in 1 2; do
	p=$(create web wait)
	tag="race-p$round-$K"
	(set +e; gcall "/org/warren/Warren1/sandbox/$p" org.warren.Warren1.Sandbox.Snapshot "$tag" \
		>"$T/snap-p.out" 2>&1; echo "rc=$?" >>"$T/snap-p.out") &
	sp=$!
	# every 10 ms: the restore that follows the seal takes a few hundred
	for _ in $(seq 3000); do
		grep -q "Sandbox $p: image $tag sealed" "$T/supervisor.log" && break
		sleep 0.01
	done
	grep -q "Sandbox $p: image $tag sealed" "$T/supervisor.log" ||
		fail "round $round: the image of $p was never sealed"
	out=$(call "/org/warren/Warren1/sandbox/$p" org.warren.Warren1.Sandbox Destroy 2>&1) ||
		fail "round $round: Destroy during the restore of $p was refused: $out"
	wait "$sp" || true
	log "round $round: the snapshot said: $(tr '\n' ' ' <"$T/snap-p.out")"
	expect "round $round: the snapshot is done" grep -q rc=0 "$T/snap-p.out"
	expect "round $round: the parent destroyed during its restore is gone" wait_for 30 gone "$p"
	expect "round $round: it was never failed nor brought back" eval "! brought_back $p"
	settled "round $round: Destroy during a parent's restore"
	mgr RemoveTag s "$tag" >/dev/null
done

warrenctl destroy "$src" >/dev/null
expect "the sandbox kept through the races still answers" answers "$keep"
settled "the end"
