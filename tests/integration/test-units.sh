#!/bin/bash
# The systemd units verify, and keep the hardening and capability sets ARCHITECTURE.md lists.
source "$(dirname "$0")/lib.sh"
cp "$SOURCE"/units/*.service "$SOURCE"/units/*.socket "$T/"
out=$(cd "$T" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no ./*.service ./*.socket 2>&1 | grep -v -e "dbus.socket" -e "Cannot add dependency" || true)
echo "$out"
expect "systemd-analyze verify reports nothing" test -z "$out"
for u in "$SOURCE"/units/warren-*.service; do
	expect "$(basename "$u") sets a CapabilityBoundingSet" grep -q "^CapabilityBoundingSet=" "$u"
	expect "$(basename "$u") sets a SystemCallFilter" grep -q "^SystemCallFilter=" "$u"
	expect "$(basename "$u") restricts address families" grep -q "^RestrictAddressFamilies=" "$u"
	expect "$(basename "$u") is Type=notify or dbus" grep -qE "^Type=(notify|dbus)" "$u"
done
expect "supervisor keeps no capability" grep -qx "CapabilityBoundingSet=" "$SOURCE/units/warren-supervisor.service"
expect "gateway keeps no capability" grep -qx "CapabilityBoundingSet=" "$SOURCE/units/warren-gateway.service"
