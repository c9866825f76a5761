#!/bin/bash
# Density: N live `web` sandboxes on this host, idle ones frozen and reclaimed into zswap as
# Warren does on its own (supervisor --idle-ms, snapshotd's reclaim after a freeze), then every
# one answers its next request. Runs a private Warren instance of the installed build (the
# integration tests' set-up, tests/integration/lib.sh: own bus, daemons, subnet, cgroups), so it
# never touches a running Warren; sets up swap + zswap through SetupReclaim and puts the host's
# swap and zswap back as they were; removes every sandbox.
#   bench/bench-density.sh N        (root; WARREN_LIBEXEC=<prefix>/libexec/warren for a build;
#                                    RECLAIM_MIN_MIB=M: snapshotd's --reclaim-min)
# How memory is counted, per sandbox, with every sandbox frozen and reclaimed:
#   PSS of every process in its cgroup (runsc sentry, gofer, stubs: /proc/PID/smaps_rollup,
#   shared pages split between their users) + its memory cgroup's kernel memory
#   (memory.kmem.usage_in_bytes: page tables, slab) + its share of zswap's compressed pool
#   (/proc/meminfo Zswap, the growth over the run divided by N).
# Then the same PSS split by process (sentry, gofer, stubs) and kind (anonymous, file, shmem) and
# the page tables, so it shows where a sandbox's memory goes.
# Thaw latency: the first request to each frozen, reclaimed sandbox through the gateway (curl
# time_total), one after another; baseline: the second request to the same sandbox, now thawed.
set -uo pipefail
N=${1:?usage: bench-density.sh N}
TEST=bench-density
source "$(dirname "$0")/../tests/integration/lib.sh"
ZS=/sys/module/zswap/parameters
RD=/var/lib/warren/bench-density.$$
before_zswap="$(cat $ZS/enabled) $(cat $ZS/compressor) $(cat $ZS/max_pool_percent)"
restore() {
	set +e
	busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager \
		UndoReclaim >/dev/null 2>&1
	swapoff "$RD/swapfile" 2>/dev/null
	rm -rf "$RD"
	read -r e c p <<<"$before_zswap"
	echo "$e" >$ZS/enabled; echo "$c" >$ZS/compressor; echo "$p" >$ZS/max_pool_percent
}
trap 'rc=$?; restore; cleanup $rc' EXIT
meminfo() { awk -v k="$1:" '$1 == k {printf "%.0f\n", $2 * 1024}' /proc/meminfo; }
zswap0=$(meminfo Zswap) zswapped0=$(meminfo Zswapped)
start_bus
POOL=dynamic start_netnsd --pool-max $((N + 16))
daemon snapshotd "$LIBEXEC/warren-snapshotd" --socket "$T/snapshotd.sock" --peer-users warren \
	--store "$T/images" --reclaim-dir "$RD" --cgroup-parent "$CGROUP_PARENT" \
	${RECLAIM_MIN_MIB:+--reclaim-min "$RECLAIM_MIN_MIB"}
wait_for 10 test -S "$T/snapshotd.sock" || fail "snapshotd did not start"
start_gateway
start_supervisor --idle-ms 3000
# swap sized for N reclaimed web sandboxes (~12 MiB each) and a margin
mgr SetupReclaim tbsu $(((N * 16 + 512) << 20)) true "" 40 >/dev/null || fail "SetupReclaim"
ids=()
t0=$(date +%s)
running() { [ "$(sbprop "$1" State)" = running ] || [ "$(sbprop "$1" State)" = frozen ]; }
# eight starting at a time: a 2-core host starts runsc no faster with more at once
for ((i = 0; i < N; i++)); do
	id=$(create web) || fail "create $i of $N failed"
	ids+=("$id")
	if (((i + 1) % 8 == 0)); then
		for j in "${ids[@]: -8}"; do wait_for 120 running "$j" || fail "$j never ran"; done
	fi
done
for id in "${ids[@]}"; do wait_for 120 running "$id" || fail "$id never ran"; done
log "$N sandboxes running after $(($(date +%s) - t0)) s"
# each answers once (it is live), then is left idle: the supervisor freezes it after 3 s and
# snapshotd reclaims it
for id in "${ids[@]}"; do
	curl -fsS -o /dev/null --max-time 20 "$(sb_url "$id")" || fail "$id does not answer"
done
log "all $N answered once; waiting for freeze + reclaim"
frozen() { [ "$(sbprop "$1" State)" = frozen ]; }
for id in "${ids[@]}"; do wait_for 120 frozen "$id" || fail "$id was not frozen"; done
sleep 5 # the last reclaims finish
pss=0 kmem=0
# where it goes: per kind of process (runsc's sentry "runsc-sandbox", its gofer, the ptrace
# stubs and anything else), PSS split into anonymous memory, file pages (the runsc binary and
# libraries, shared by every sandbox) and shmem (the sentry's memory file: the guest's pages),
# and page tables (VmPTE); summed over all sandboxes, shown per sandbox below
declare -A part
for id in "${ids[@]}"; do
	for p in $(cat /sys/fs/cgroup/pids"$CGROUP_PARENT/$id"/cgroup.procs 2>/dev/null); do
		kind=stub
		case "$(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null)" in
		runsc-sandbox*) kind=sentry ;;
		runsc-gofer*) kind=gofer ;;
		esac
		read -r v a f sh < <(awk '$1 == "Pss:" {p = $2} $1 == "Pss_Anon:" {a = $2}
			$1 == "Pss_File:" {f = $2} $1 == "Pss_Shmem:" {s = $2}
			END {printf "%.0f %.0f %.0f %.0f\n", p * 1024, a * 1024, f * 1024, s * 1024}' \
			"/proc/$p/smaps_rollup" 2>/dev/null)
		pte=$(awk '$1 == "VmPTE:" {printf "%.0f\n", $2 * 1024}' /proc/"$p"/status 2>/dev/null)
		pss=$((pss + ${v:-0}))
		part[$kind.anon]=$((${part[$kind.anon]:-0} + ${a:-0}))
		part[$kind.file]=$((${part[$kind.file]:-0} + ${f:-0}))
		part[$kind.shmem]=$((${part[$kind.shmem]:-0} + ${sh:-0}))
		part[$kind.pte]=$((${part[$kind.pte]:-0} + ${pte:-0}))
		part[$kind.n]=$((${part[$kind.n]:-0} + 1))
	done
	k=$(cat /sys/fs/cgroup/memory"$CGROUP_PARENT/$id"/memory.kmem.usage_in_bytes 2>/dev/null)
	kmem=$((kmem + ${k:-0}))
done
zswap=$(($(meminfo Zswap) - zswap0))
[ "$zswap" -lt 0 ] && zswap=0
zswapped=$(($(meminfo Zswapped) - zswapped0)) # what those compressed pages were
total=$((pss + kmem + zswap))
alive=0 thaw=() warm=()
for id in "${ids[@]}"; do
	t=$(curl -fsS -o /dev/null -w '%{time_total}' --max-time 20 "$(sb_url "$id")") || continue
	w=$(curl -fsS -o /dev/null -w '%{time_total}' --max-time 20 "$(sb_url "$id")") || continue
	alive=$((alive + 1))
	thaw+=("$t")
	warm+=("$w")
done
pct() { printf '%s\n' "${@:2}" | sort -n | awk -v q="$1" '{a[NR]=$1} END {i=int((NR-1)*q+0.5)+1; printf "%.1f", a[i]*1000}'; }
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }
echo "density: n=$N alive=$alive total=$(mib $total) MiB per-sandbox=$(mib $((total / N))) MiB" \
	"(pss $(mib $((pss / N))) + kmem $(mib $((kmem / N))) + zswap $(mib $((zswap / N))) MiB;" \
	"zswap holds $(mib $((zswapped / N))) MiB a sandbox uncompressed)" \
	"thaw p50=$(pct 0.5 "${thaw[@]}") ms p99=$(pct 0.99 "${thaw[@]}") ms" \
	"thawed baseline p50=$(pct 0.5 "${warm[@]}") ms p99=$(pct 0.99 "${warm[@]}") ms" \
	"machine=$(nproc) cores $(($(meminfo MemTotal) >> 30)) GiB"
for kind in sentry gofer stub; do
	echo "  $kind: ${part[$kind.n]:-0} processes; per sandbox PSS anon $(mib $((${part[$kind.anon]:-0} / N)))" \
		"file $(mib $((${part[$kind.file]:-0} / N))) shmem $(mib $((${part[$kind.shmem]:-0} / N)))" \
		"MiB, page tables $(mib $((${part[$kind.pte]:-0} / N))) MiB (in kmem)"
done
[ "$alive" = "$N" ] || fail "only $alive of $N answered"
