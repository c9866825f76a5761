#!/bin/bash
# The D-Bus policy file, in a real dbus-daemon: anyone may read properties and introspect; an
# ordinary user's method call is refused; root and group warren may call.
source "$(dirname "$0")/lib.sh"
warren_start
getent passwd warren-test-op >/dev/null ||
	useradd --system --no-create-home --shell /usr/sbin/nologin -G warren warren-test-op
as() { setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups busctl --system "${@:2}"; }
expect "nobody reads a property" as nobody get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager Version
expect "nobody introspects" as nobody introspect org.warren.Warren1 /org/warren/Warren1
out=$(as nobody call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListTemplates 2>&1 || true)
expect "nobody's method call is refused ($out)" grep -qi "access denied\|AccessDenied" <<<"$out"
out=$(as nobody call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager CreateSandbox sa{sv} web 0 2>&1 || true)
expect "nobody cannot create" grep -qi "access denied\|AccessDenied" <<<"$out"
expect "a member of group warren may call" as warren-test-op call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListTemplates
expect "root may call" busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListTemplates
out=$(as nobody call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus RequestName su org.warren.Warren1 0 2>&1 || true)
expect "nobody cannot own the name" grep -qi "denied\|not allowed" <<<"$out"
