#!/bin/bash
# The long fault-injection walk: every daemon killed at every named step
# (WARREN_FAULT, common/fault.h), one after another, with the checks of
# tests/integration/test-fault-points.sh; prints the step x daemon -> outcome table that
# docs/RELIABILITY.md shows. Needs root and the integration test environment; takes the shared
# integration lock. Usage: scripts/fault-walk.sh [TABLE-FILE]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
table=${1:-/tmp/warren-fault-table.md}
FAULT_WALK=full FAULT_TABLE=$table flock /tmp/warren-itest.lock \
	timeout 1800 bash "$src/tests/integration/test-fault-points.sh"
echo "| daemon | step | daemon | operation | running sandbox | leaks |"
echo "|---|---|---|---|---|---|"
cat "$table"
