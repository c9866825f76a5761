#!/bin/bash
# Soak: CYCLES create/destroy cycles and FORKS fork-of-N/destroy cycles against a
# running test instance (sourced by tests/integration/test-soak.sh, which starts the daemons),
# sampling after a warm-up and at the end: each daemon's open fds and RSS, the network
# namespaces on the host, the sandbox cgroups, the pool's veths and the conntrack entries of the
# pool's subnet. Prints one line per sample and "soak:" lines with the figures.
# Standalone (the long version, figures for the README):
#   sudo flock /tmp/warren-itest.lock env SOAK_CYCLES=1000 SOAK_FORKS=100 SOAK_FORK_N=10 \
#     bash tests/integration/test-soak.sh
# SOAK_CYCLE_SECONDS / SOAK_FORK_SECONDS (unset: no limit) stop each phase once that long has
# passed, so a run that must fit a time slot does the largest size that fits; the "soak:" line
# says how many cycles were done.
soak_sample() { # prints: fds and RSS (KiB) per daemon, netns, cgroups, veths, conntrack
	local out="" d pid
	for d in netnsd snapshotd gateway supervisor; do
		pid=$(eval echo "\$PID_$d")
		[ "$d" = gateway ] && pid=$(pgrep -f "^$LIBEXEC/warren-gateway .*--port $GW_PORT" | head -1)
		[ "$d" = supervisor ] && pid=$(pgrep -f "^$LIBEXEC/warren-supervisor --state-dir $T/state" | head -1)
		out+="$d.fds=$(ls /proc/$pid/fd 2>/dev/null | wc -l) "
		out+="$d.rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null) "
	done
	out+="spawner.fds=$(ls /proc/$(pgrep -P "$PID_netnsd" -x netnsd-spawner | head -1)/fd 2>/dev/null | wc -l) "
	# network namespaces Warren holds: by fd (netnsd's pool, the spawner's and the supervisor's
	# slots) and by process (the sandboxes, counted with the cgroups)
	local holders="$PID_netnsd $(pgrep -P "$PID_netnsd" -x netnsd-spawner) $(pgrep -f "^$LIBEXEC/warren-supervisor --state-dir $T/state")"
	out+="netns=$(for h in $holders; do ls -l /proc/$h/fd 2>/dev/null; done | grep -o 'net:\[[0-9]*\]' | sort -u | wc -l) "
	out+="cgroups=$(find /sys/fs/cgroup/pids"$CGROUP_PARENT" /sys/fs/cgroup"$CGROUP_PARENT" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l) "
	out+="veths=$(ip -o link show | awk -F': ' '{print $2}' | grep -c "^$IFPREFIX" || true) "
	out+="conntrack=$(conntrack -L -d "$SUBNET/16" 2>/dev/null | grep -c . || true)"
	echo "$out"
}
soak_value() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

soak_run() {
	local cycles=${SOAK_CYCLES:-100} forks=${SOAK_FORKS:-10} n=${SOAK_FORK_N:-5} warm=10 i id ids
	local t0
	t0=$(date +%s)
	local done_cycles=0 done_forks=0
	for ((i = 1; i <= cycles; i++)); do
		[ -n "${SOAK_CYCLE_SECONDS:-}" ] && [ "$i" -gt $((warm + 1)) ] &&
			[ $(($(date +%s) - t0)) -ge "$SOAK_CYCLE_SECONDS" ] && break
		id=$(create web wait) || fail "create $i of $cycles failed"
		[ $((i % 10)) = 0 ] && { curl -fsS --max-time 20 "$(sb_url "$id")" | grep -q Hello ||
			fail "cycle $i: no answer"; }
		warrenctl destroy "$id" >/dev/null || fail "destroy $i failed"
		[ "$i" = "$warm" ] && { sleep 2; SOAK_BEFORE=$(soak_sample); log "sample after $warm: $SOAK_BEFORE"; }
		done_cycles=$i
	done
	local t1
	t1=$(date +%s)
	local p
	p=$(create web wait)
	call "/org/warren/Warren1/sandbox/$p" org.warren.Warren1.Sandbox Snapshot s "soak$K" >/dev/null
	warrenctl destroy "$p" >/dev/null
	for ((i = 1; i <= forks; i++)); do
		[ -n "${SOAK_FORK_SECONDS:-}" ] && [ "$i" -gt 1 ] &&
			[ $(($(date +%s) - t1)) -ge "$SOAK_FORK_SECONDS" ] && break
		ids=$(ids_in "$(mgr ForkTag su "soak$K" "$n" 2>&1)")
		[ "$(grep -c . <<<"$ids")" = "$n" ] || fail "fork $i: $(grep -c . <<<"$ids") of $n children"
		for id in $ids; do warrenctl destroy "$id" >/dev/null || fail "destroy child $id"; done
		done_forks=$i
	done
	local t2
	t2=$(date +%s)
	# destroys are answered at once: let the last ones finish
	wait_for 30 sh -c "[ \$(find $T/netnsd/bundles -mindepth 1 -maxdepth 1 | wc -l) = 0 ]" || true
	sleep 2
	SOAK_AFTER=$(soak_sample)
	log "sample at the end: $SOAK_AFTER"
	log "soak: $done_cycles of $cycles create/destroy cycles in $((t1 - t0)) s, $done_forks of $forks fork-of-$n/destroy in $((t2 - t1)) s"
}
