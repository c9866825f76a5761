#!/bin/bash
# unit-supervisor-layers: every supervisor/ file is in supervisor/LAYERS, and none includes a
# supervisor header of a higher layer. check-layers.sh DIR checks DIR (with DIR/LAYERS); with
# no argument it first runs its positive controls (a bad tree it must refuse).
set -u

# check DIR: prints each violation, returns 1 if any
check() {
	local dir=$1 bad=0
	declare -A layer=()
	while read -r word n _name files; do
		[ "$word" = layer ] || continue
		files=${files#*: }
		for f in $files; do layer[$f]=$n; done
	done < <(sed -n 's/^layer \([0-9]*\) \([a-z0-9-]*\): /layer \1 \2 : /p' "$dir/LAYERS")
	for path in "$dir"/*.c "$dir"/*.h; do
		[ -e "$path" ] || continue
		local f=${path##*/}
		if [ -z "${layer[$f]:-}" ]; then
			echo "$f: not in LAYERS (say which layer it is in)"
			bad=1
			continue
		fi
		while read -r inc; do
			# only the supervisor's own headers have a layer
			[ -e "$dir/$inc" ] || continue
			local l=${layer[$inc]:-}
			if [ -z "$l" ]; then
				echo "$f includes $inc, which is not in LAYERS"
				bad=1
			elif [ "$l" -gt "${layer[$f]}" ]; then
				echo "$f (layer ${layer[$f]}) includes $inc (layer $l): calls must point down"
				bad=1
			fi
		done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$path")
	done
	return $bad
}

here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here/../../supervisor}

# positive controls: a lower layer including an upper header, and a file not in the table
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'layer 0 base: low.c low.h\nlayer 1 up: up.h\n' > "$tmp/LAYERS"
printf '#include "low.h"\n#include "up.h"\n' > "$tmp/low.c"
: > "$tmp/low.h"
: > "$tmp/up.h"
out=$(check "$tmp") && { echo "FAIL: the control tree (low.c includes up.h) passed"; exit 1; }
grep -q 'low.c (layer 0) includes up.h (layer 1)' <<<"$out" ||
	{ echo "FAIL: control not flagged as expected: $out"; exit 1; }
sed -i '/up.h/d' "$tmp/low.c"
check "$tmp" >/dev/null || { echo "FAIL: the corrected control tree was refused"; exit 1; }
: > "$tmp/stray.c"
out=$(check "$tmp") && { echo "FAIL: a file missing from LAYERS passed"; exit 1; }

check "$dir" || { echo "FAIL: $dir breaks its layers (see $dir/LAYERS)"; exit 1; }
echo "ok: $(grep -c '^layer ' "$dir/LAYERS") layers, includes point down"
