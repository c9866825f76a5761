#!/bin/bash
# The interfaces checked in under docs/ are what the running supervisor exports.
source "$(dirname "$0")/lib.sh"
warren_start
id=$(create web)
extract() { python3 "$SOURCE/tests/helpers/dbus-interface-xml.py" "$1"; }
busctl --system introspect --xml-interface org.warren.Warren1 /org/warren/Warren1 | extract org.warren.Warren1.Manager >"$T/manager.xml"
busctl --system introspect --xml-interface org.warren.Warren1 "/org/warren/Warren1/sandbox/$id" | extract org.warren.Warren1.Sandbox >"$T/sandbox.xml"
expect "Manager interface matches docs/org.warren.Warren1.Manager.xml" diff -u "$SOURCE/docs/org.warren.Warren1.Manager.xml" "$T/manager.xml"
expect "Sandbox interface matches docs/org.warren.Warren1.Sandbox.xml" diff -u "$SOURCE/docs/org.warren.Warren1.Sandbox.xml" "$T/sandbox.xml"
