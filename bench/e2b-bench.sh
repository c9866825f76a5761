#!/bin/bash
# E2B SDK latency on a running Warren (scripts/run.sh; warren-e2b-api up): Sandbox.create ->
# first commands.run('true') result, p50/p90, for the base template cold, warm (a restore of its
# warm image) and with a standby (a warm template with standby=1). As root: it makes a
# temporary API key and two temporary templates, and removes them at the end.
#   bench/e2b-bench.sh [N]     results as JSON lines on stdout (and bench/results/e2b.json)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10}
[ "$(id -u)" = 0 ] || { echo "e2b-bench: run as root" >&2; exit 1; }
[ -d tests/e2b/node_modules/e2b ] || (cd tests/e2b && npm ci --no-audit --no-fund >/dev/null)
API=${E2B_API_URL:-http://127.0.0.1:8302}
GW=${E2B_SANDBOX_URL:-http://127.0.0.1:8300}
curl -fsS "$API/health" >/dev/null || { echo "e2b-bench: no warren-e2b-api at $API" >&2; exit 1; }
out=$(warrenctl --json apikey create e2b-bench)
KEY=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["key"])' "$out")
KEYID=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$out")
ROOTFS=/var/lib/warren/templates/base/rootfs
mgr() { busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager "$@"; }
cleanup() {
	warrenctl apikey revoke "$KEYID" >/dev/null 2>&1 || true
	mgr RemoveTemplate s e2bwarm >/dev/null 2>&1 || true
	mgr RemoveTemplate s e2bstandby >/dev/null 2>&1 || true
}
trap cleanup EXIT
# 49983: the agent's envd port (AGENT_PROTO_ENVD_PORT, common/agent-protocol.h)
mgr AddTemplate ssasqta{sv} -- e2bwarm "$ROOTFS" 2 /bin/sleep infinity 49983 536870912 1 warm b true >/dev/null
mgr AddTemplate ssasqta{sv} -- e2bstandby "$ROOTFS" 2 /bin/sleep infinity 49983 536870912 2 warm b true standby u 1 >/dev/null
# the first create of a warm template starts cold and takes the warm image behind it
E2B_API_URL=$API E2B_SANDBOX_URL=$GW E2B_API_KEY=$KEY N=1 TEMPLATES=prime1=e2bwarm,prime2=e2bstandby \
	node bench/e2b-bench.mjs >/dev/null
sleep 5
mkdir -p bench/results
E2B_API_URL=$API E2B_SANDBOX_URL=$GW E2B_API_KEY=$KEY N=$N \
	TEMPLATES=cold=base,warm=e2bwarm,standby=e2bstandby node bench/e2b-bench.mjs | tee bench/results/e2b.json
