#!/bin/bash
# bench.py or fork-profile.py against a private Warren: the daemons of a build installed in a
# prefix of its own (WARREN_LIBEXEC, PATH), on a bus, gateway port and image store of their own,
# started as the integration tests start them (tests/integration/lib.sh) with a growing pool as
# warren-launch runs it. Measures a build beside the running Warren without installing over it.
# bench.py only with --quick: a private run never replaces the README's rows.
#   flock /tmp/warren-itest.lock env WARREN_LIBEXEC=/opt/P/libexec/warren PATH=/opt/P/bin:$PATH \
#       bench/bench-private.sh bench.py --only-fork --quick
#   ... bench/bench-private.sh fork-profile.py 20 100
# BENCH_NETNSD_OPTS: netnsd options (e.g. "--pool-spare 8"), default netnsd's own.
SRC=$(cd "$(dirname "$0")/.." && pwd)
script=${1:-}
shift || true
case "$script" in
bench.py)
	case " $* " in
	*" --quick "*) ;;
	*)
		echo "bench-private.sh: bench.py only with --quick (the README is not written)" >&2
		exit 2
		;;
	esac
	;;
fork-profile.py) ;;
*)
	echo "usage: bench-private.sh bench.py|fork-profile.py ARGS..." >&2
	exit 2
	;;
esac
# plain runsc restores a tag straight from the store: no zstd
SNAPSHOTD_OPTS="--compress-below 0"
POOL=dynamic
source "$SRC/tests/integration/lib.sh"
# shellcheck disable=SC2086
warren_start ${BENCH_NETNSD_OPTS:-}
WARREN_BENCH_GATEWAY=$GW WARREN_BENCH_IMAGES=$T/images python3 "$SRC/bench/$script" "$@"
