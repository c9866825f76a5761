#!/bin/bash
# Apply .clang-format to Warren's C sources (tracked *.c and *.h), or with --check list the files
# that do not follow it and fail. Generated code lives in build/ and is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
mapfile -t files < <(git ls-files '*.c' '*.h' 2>/dev/null || find . -path ./build -prune -o -name '*.[ch]' -print)
if [ "$mode" = --check ]; then
	bad=0
	for f in "${files[@]}"; do
		if ! clang-format "$f" | cmp -s "$f" -; then
			echo "not formatted: $f" >&2
			bad=1
		fi
	done
	exit $bad
fi
clang-format -i "${files[@]}"
