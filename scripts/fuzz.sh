#!/bin/bash
# Build Warren's libFuzzer harnesses with clang (address + undefined sanitizers) and run each for
# a bounded time from its checked-in seed corpus. CI runs it short (ctest label fuzz); run it
# long by hand:  scripts/fuzz.sh --seconds 450   (8 harnesses x 450 s = 1 CPU-hour).
# Prints, per harness: executions, wall and CPU seconds, crashes, and the totals. Exits non-zero on any crash.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=10
BUILD=build-fuzz
ONLY=
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECONDS_EACH=$2; shift 2 ;;
	--build-dir) BUILD=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	*) echo "usage: $0 [--seconds N] [--build-dir DIR] [--only NAME]" >&2; exit 2 ;;
	esac
done
command -v clang >/dev/null || { echo "fuzz.sh: clang is not installed" >&2; exit 1; }
CC=clang cmake -S . -B "$BUILD" -DWARREN_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >/dev/null
fail=0
printf '%-24s %12s %8s %8s %8s\n' harness executions wall_s cpu_s crashes
total_execs=0 total_cpu=0
for bin in "$BUILD"/tests/fuzz/fuzz-*; do
	[ -x "$bin" ] || continue
	name=${bin##*/fuzz-}
	[ -n "$ONLY" ] && [ "$name" != "$ONLY" ] && continue
	work="$BUILD/corpus/$name"
	mkdir -p "$work" "$BUILD/crashes/$name"
	log="$BUILD/fuzz-$name.log"
	start=$(date +%s.%N)
	rc=0
	# bash's time keyword: the harness's own user+system CPU seconds
	{ TIMEFORMAT='%3U %3S'; time "$bin" -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
		-rss_limit_mb=2048 -artifact_prefix="$BUILD/crashes/$name/" "$work" \
		"tests/fuzz/corpus/$name" >"$log" 2>&1 || rc=$?; } 2>"$log.time"
	end=$(date +%s.%N)
	cpu=$(awk '{printf "%.1f", $1+$2}' "$log.time")
	execs=$(awk '/stat::number_of_executed_units/{print $2}' "$log" | tail -n1)
	crashes=$(find "$BUILD/crashes/$name" -type f | wc -l)
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}')
	printf '%-24s %12s %8s %8s %8s\n' "$name" "${execs:-?}" "$secs" "$cpu" "$crashes"
	total_execs=$((total_execs + ${execs:-0}))
	total_cpu=$(awk -v a="$total_cpu" -v b="$cpu" 'BEGIN{printf "%.1f", a+b}')
	if [ "$rc" != 0 ] || [ "$crashes" != 0 ]; then
		fail=1
		echo "--- $name failed (exit $rc); last lines of $log:" >&2
		tail -n 40 "$log" >&2
	fi
done
printf '%-24s %12s %8s %8s\n' total "$total_execs" "" "$total_cpu"
exit $fail
