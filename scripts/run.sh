#!/bin/bash
# Warren's main job on a fresh Debian 12 machine, as root: install and build, bring the four
# daemons up (they keep running), create a sandbox from the built-in `web` template and fetch
# its page through the gateway. Safe to run again while Warren is up.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
warren-template-build web
warren-launch start
# swap file + zswap so frozen sandboxes' memory can be reclaimed (idempotent; undo with
# `warrenctl reclaim undo`)
warrenctl reclaim setup "${WARREN_SWAP_MIB:-1024}" >/dev/null
echo
warrenctl status
echo
t0=$(date +%s%N)
read -r id url < <(warrenctl create web --wait)
page=$(curl -fsS --max-time 30 "$url")
t1=$(date +%s%N)
echo "Sandbox $id from template web answered through the gateway in $(((t1 - t0) / 1000000)) ms:"
echo "  $url"
echo "$page" | sed 's/^/  | /'
echo
echo "Destroy it with: warrenctl destroy $id    Stop Warren with: warren-launch stop"
echo "E2B API (warren-e2b-api): E2B_API_URL=http://127.0.0.1:8302 E2B_SANDBOX_URL=http://127.0.0.1:8300"
echo "  with E2B_API_KEY from: warrenctl apikey create NAME   (docs/E2B.md)"
