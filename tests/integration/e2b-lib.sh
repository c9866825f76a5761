# Shared set-up of the E2B tests, sourced after lib.sh: the pinned e2b npm package (tests/e2b),
# a private bus with this tree's policy (the warren-e2b user's entry), and start_e2b, which runs
# warren-e2b-api as its own user on this test's port (E2B_WRAP: a command to run it under).
command -v node >/dev/null && command -v npm >/dev/null || { log "SKIP: no node/npm"; exit 77; }
E2B_DIR=$SOURCE/tests/e2b
if [ ! -d "$E2B_DIR/node_modules/e2b" ]; then
	(cd "$E2B_DIR" && npm ci --no-audit --no-fund >/dev/null 2>&1) || fail "npm ci in tests/e2b"
fi
TEMPLATE=${E2B_TEMPLATE:-web}
E2B_PORT=$((18400 + K))
API=http://127.0.0.1:$E2B_PORT
KEYS=$T/etc/api-keys

start_bus() {
	sed -e "s|<listen>.*</listen>|<listen>unix:path=$T/bus.sock</listen>|" \
		-e "s|<pidfile>.*</pidfile>|<pidfile>$T/bus.pid</pidfile>|" \
		-e "s|</busconfig>|<include>$SOURCE/units/org.warren.Warren1.conf</include></busconfig>|" \
		/usr/share/dbus-1/system.conf >"$T/bus.conf"
	dbus-daemon --config-file="$T/bus.conf" --fork --nosyslog
	wait_for 5 test -S "$T/bus.sock" || fail "private dbus-daemon did not start"
}

start_e2b() {
	install -d -m 0755 "$T/etc"
	install -d -m 0700 -o warren-e2b -g warren-e2b "$T/e2b"
	daemon e2b ${E2B_WRAP:-} setpriv --reuid=warren-e2b --regid=warren-e2b --clear-groups --no-new-privs \
		"$LIBEXEC/warren-e2b-api" --listen "127.0.0.1:$E2B_PORT" --gateway "127.0.0.1:$GW_PORT" \
		--api-keys "$KEYS" --state-dir "$T/e2b" --ifname-prefix "$IFPREFIX" "$@"
	wait_for 10 curl -fsS "$API/health" || fail "warren-e2b-api did not start: $(cat "$T/e2b.log")"
}
