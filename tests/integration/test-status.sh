#!/bin/bash
# The operator's status view: helpers, versions, pool, backends over D-Bus and warrenctl.
source "$(dirname "$0")/lib.sh"
POOL=6 warren_start
expect "helpers all up with version $VERSION" helpers_up
wait_for 10 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager PoolFree | grep -qx 'u 6'" || fail "pool not filled"
expect "PoolSize is 6" test "$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager PoolSize)" = "u 6"
expect "backends list gvisor and microvm" test "$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager Backends)" = 'as 2 "gvisor" "microvm"'
out=$(warrenctl status)
echo "$out"
expect "warrenctl status shows the pool" grep -q "6 slots, 6 free" <<<"$out"
expect "warrenctl status shows helpers" grep -q "gateway     up, version $VERSION" <<<"$out"
json=$(warrenctl --json status)
expect "warrenctl --json status is JSON" python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["pool_size"]==6 and all(h["up"] for h in d["helpers"])' "$json"
expect "templates listed" sh -c 'warrenctl --json templates | python3 -c "import json,sys; n=[t[\"name\"] for t in json.load(sys.stdin)]; assert \"web\" in n and \"app\" in n"'
expect "busctl tree shows the manager" sh -c 'busctl --system tree org.warren.Warren1 | grep -q /org/warren/Warren1'
for d in netnsd snapshotd gw/gateway; do
	expect "$d answers status over IPC" sh -c "$POKE $T/$d.sock status | grep -q ready=1"
done
