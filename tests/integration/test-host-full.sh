#!/bin/bash
# A create the host's memory cannot hold is refused with a named error (HostFull) instead of
# pushing the host into swap, and nothing half-made is left. Made certain by a reserve larger
# than any machine's memory; the positive control is the same netnsd admitting a create once
# the reserve fits (test-pool-grows runs with the default reserve).
source "$(dirname "$0")/lib.sh"
POOL=dynamic warren_start --pool-min 1 --pool-spare 1 --pool-max 4 --pool-reserve-mib 100000000
err() { "$@" 2>&1 && return 1 || true; }
# gdbus prints the error's name (busctl only its message)
out=$(err gdbus call --system --dest org.warren.Warren1 --object-path /org/warren/Warren1 \
	--method org.warren.Warren1.Manager.CreateSandbox web "{'wait': <true>}")
expect "a create is refused with HostFull ($out)" grep -q "org.warren.Warren1.Error.HostFull" <<<"$out"
expect "the message says why" grep -q "host full" <<<"$out"
expect "nothing half-made is listed" test "$(warrenctl list | grep -c web || true)" = 0
expect "netnsd's slot is free again" sh -c "$POKE $T/netnsd.sock status | grep -q ' pool_free=1 '"
