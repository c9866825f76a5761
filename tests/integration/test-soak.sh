#!/bin/bash
# Soak, the CI version: 100 create/destroy cycles and 10 fork-of-5/destroy cycles
# (SOAK_CYCLES, SOAK_FORKS, SOAK_FORK_N for the long one: bench/soak.sh). From a sample after
# the first 10 cycles to the end, each daemon's (and the spawner's) open fds are the same (+-2),
# each daemon's RSS grows by less than 8 MiB, and the host's network namespaces, the sandbox
# cgroups, the pool's veths and the conntrack entries of the pool's subnet are where they were.
source "$(dirname "$0")/lib.sh"
source "$SOURCE/bench/soak.sh"
# a fork of N needs N free slots (the long run forks 10: with 8 slots the fork came back short)
POOL=$((${SOAK_FORK_N:-5} + 3 > 8 ? ${SOAK_FORK_N:-5} + 3 : 8))
warren_start
soak_run
flat() { # flat KEY SLACK
	local a b
	a=$(soak_value "$SOAK_BEFORE" "$1")
	b=$(soak_value "$SOAK_AFTER" "$1")
	log "soak: $1 $a -> $b"
	[ -n "$a" ] && [ -n "$b" ] && [ $((b - a)) -le "$2" ] && [ $((a - b)) -le "$2" ]
}
for d in netnsd snapshotd gateway supervisor spawner; do
	expect "$d's open fds are flat" flat "$d.fds" 2
done
for d in netnsd snapshotd gateway supervisor; do
	expect "$d's RSS grew by less than 8 MiB" flat "$d.rss" 8192
done
expect "network namespaces are flat" flat netns 0
expect "sandbox cgroups are flat" flat cgroups 0
expect "the pool's veths are flat" flat veths 0
expect "conntrack entries of the pool are flat" flat conntrack 0
