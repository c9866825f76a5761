#!/bin/bash
# The published e2b SDK against a microVM sandbox (QEMU; TCG here): warren-e2b-api creates on the
# microVM backend (--backend microvm), and tests/e2b/agent.mjs drives the agent, PID 1 of the
# guest, as test-e2b-api.sh does the one in a gVisor sandbox: /init's token and env vars,
# commands (streaming, background and killed, stdin), a PTY and its resize, files (rename,
# remove, watch, 100 MiB each way by SHA-256), pause keeping a process's memory. Each check is
# the SDK's own result; Warren's side confirms the sandbox was a microVM.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/e2b-lib.sh"
[ -r /var/lib/warren/templates/base/vm-rootfs.ext4 ] ||
	fail "the base template has no microVM root disk (warren-template-build base)"
warren_start
backends=$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager Backends)
grep -q '"microvm"' <<<"$backends" || fail "netnsd serves no microVM backend ($backends)"
start_e2b --backend microvm
KEY=$(warrenctl apikey create microvm --api-keys "$KEYS")
export E2B_API_URL=$API E2B_SANDBOX_URL=$GW E2B_API_KEY=$KEY
(cd "$E2B_DIR" && TEMPLATE=base timeout 600 node agent.mjs >"$T/agent.out" 2>&1) &
SDK=$!
# while the script runs, its sandbox is a microVM in Warren
wait_for 300 sh -c "busctl --system call org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager ListSandboxes | grep -qE '[0-9a-f]{12}'" || fail "no sandbox came"
id=$(busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager \
	ListSandboxes | grep -oE '"[0-9a-f]{12}"' | head -1 | tr -d '"')
expect "the E2B sandbox $id is a microVM" test "$(sbprop "$id" Backend)" = microvm
wait "$SDK" || { cat "$T/agent.out" >&2; fail "the SDK's agent script failed on a microVM"; }
sed 's/^/  sdk /' "$T/agent.out" >&2
log "PASS"
