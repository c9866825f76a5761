#!/bin/bash
# The systemd units verify, name only units that exist, and keep the users, capability sets,
# address families and hardening docs/ARCHITECTURE.md lists (the table below, checked value by
# value against what systemd would apply).
source "$(dirname "$0")/lib.sh"

# What docs/ARCHITECTURE.md promises, one row per unit and key. UNIT KEY VALUE...: VALUE is the
# effective value of KEY in [Service]/[Socket] (the last assignment; for the list keys in
# LIST_KEYS the union of every assignment since the last empty one, compared as a set); "-"
# means the key must be unset or empty (e.g. no User=: the daemon starts as root and drops what
# it does not need itself). Change this table, in this one place, when the units change.
PROMISES='
warren-supervisor.service Type dbus
warren-supervisor.service User warren
warren-supervisor.service Group warren
warren-supervisor.service CapabilityBoundingSet -
warren-supervisor.service AmbientCapabilities -
warren-supervisor.service NoNewPrivileges yes
warren-gateway.service LimitNOFILE 65536
warren-cgroupd.service Type notify
warren-cgroupd.service Delegate pids memory cpu
warren-cgroupd.service RefuseManualStop yes
warren-cgroupd.service Slice system.slice
warren-cgroupd.service User root
warren-cgroupd.service CapabilityBoundingSet -
warren-cgroupd.service AmbientCapabilities -
warren-cgroupd.service NoNewPrivileges yes
warren-cgroupd.service RestrictAddressFamilies AF_UNIX
warren-cgroupd.service PrivateNetwork yes
warren-netnsd.service RestrictRealtime yes
warren-netnsd.service RestrictSUIDSGID yes
warren-netnsd.service ProtectKernelLogs -
warren-supervisor.service RestrictAddressFamilies AF_UNIX
warren-supervisor.service PrivateNetwork yes
warren-gateway.service Type notify
warren-gateway.service User warren-gateway
warren-gateway.service Group warren-gateway
warren-gateway.service CapabilityBoundingSet -
warren-gateway.service AmbientCapabilities -
warren-gateway.service NoNewPrivileges yes
warren-gateway.service RestrictAddressFamilies AF_UNIX AF_INET AF_INET6
warren-netnsd.service Type notify
warren-netnsd.service User -
warren-netnsd.service AmbientCapabilities -
warren-netnsd.service CapabilityBoundingSet CAP_SYS_ADMIN CAP_SYS_CHROOT CAP_SYS_PTRACE CAP_SETUID CAP_SETGID CAP_NET_ADMIN CAP_NET_RAW CAP_CHOWN CAP_KILL CAP_DAC_OVERRIDE CAP_SETPCAP
warren-netnsd.service RestrictAddressFamilies AF_UNIX AF_NETLINK AF_INET AF_INET6
warren-snapshotd.service Type notify
warren-snapshotd.service User -
warren-snapshotd.service AmbientCapabilities -
warren-snapshotd.service CapabilityBoundingSet CAP_SYS_ADMIN CAP_DAC_OVERRIDE CAP_CHOWN CAP_SETUID CAP_SETGID CAP_SETPCAP
warren-snapshotd.service NoNewPrivileges yes
warren-snapshotd.service RestrictAddressFamilies AF_UNIX
warren-snapshotd.service PrivateNetwork yes
warren-e2b-api.service Type notify
warren-e2b-api.service User warren-e2b
warren-e2b-api.service Group warren-e2b
warren-e2b-api.service CapabilityBoundingSet -
warren-e2b-api.service AmbientCapabilities -
warren-e2b-api.service NoNewPrivileges yes
warren-e2b-api.service RestrictAddressFamilies AF_UNIX AF_INET AF_NETLINK
warren-e2b-api.service ReadWritePaths /var/lib/warren/e2b
warren-clusterd.service Type notify
warren-clusterd.service User warren-cluster
warren-clusterd.service Group warren-cluster
warren-clusterd.service CapabilityBoundingSet -
warren-clusterd.service AmbientCapabilities -
warren-clusterd.service NoNewPrivileges yes
warren-clusterd.service RestrictAddressFamilies AF_UNIX AF_INET
warren-importd.service Type notify
warren-importd.service User -
warren-importd.service AmbientCapabilities -
warren-importd.service CapabilityBoundingSet CAP_SETUID CAP_SETGID CAP_CHOWN CAP_DAC_READ_SEARCH
warren-importd.service NoNewPrivileges yes
warren-importd.service RestrictAddressFamilies AF_UNIX
warren-importd.service PrivateNetwork yes
warren-importd.socket SocketUser root
warren-importd.socket SocketGroup warren
warren-importd.socket SocketMode 0660
warren-netnsd.socket SocketUser root
warren-netnsd.socket SocketGroup warren
warren-netnsd.socket SocketMode 0660
warren-snapshotd.socket SocketUser root
warren-snapshotd.socket SocketGroup warren
warren-snapshotd.socket SocketMode 0660
warren-gateway.socket SocketUser warren-gateway
warren-gateway.socket SocketGroup warren
warren-gateway.socket SocketMode 0660
'
LIST_KEYS=" CapabilityBoundingSet AmbientCapabilities RestrictAddressFamilies "
# The units outside Warren that Warren's units may name. Any other name is a misspelling (systemd
# ignores a Wants=/After= on a unit that does not exist, so verify alone misses those).
EXTERNAL_UNITS=" dbus.socket network.target multi-user.target sockets.target "
DEP_KEYS="Requires|Requisite|Wants|BindsTo|PartOf|Upholds|After|Before|Conflicts|WantedBy|RequiredBy"

# effective FILE KEY: the value systemd would apply (see PROMISES); lists sorted, one space apart
effective() {
	local list=0
	[[ $LIST_KEYS == *" $2 "* ]] && list=1
	awk -v key="$2" -v list=$list '
		index($0, key "=") == 1 {
			v = substr($0, length(key) + 2)
			if (!list || v == "") acc = v; else acc = (acc == "" ? v : acc " " v)
		}
		END { print acc }' "$1" | tr -s ' ' '\n' | { if [ $list = 1 ]; then sort -u; else cat; fi; } |
		paste -sd' '
}
# installed UNIT: the unit file is on this machine (systemd is not PID 1 here; look at the paths)
installed() {
	local d
	for d in /etc/systemd/system /run/systemd/system /usr/local/lib/systemd/system \
		/usr/lib/systemd/system /lib/systemd/system; do
		[ -e "$d/$1" ] && return 0
	done
	return 1
}

# 1. Every dependency names a unit of Warren's own (as spelled in units/) or a listed external one.
for u in "$SOURCE"/units/*.service "$SOURCE"/units/*.socket; do
	for dep in $(grep -E "^($DEP_KEYS)=" "$u" | cut -d= -f2-); do
		if [[ $dep == warren* ]]; then
			expect "$(basename "$u") names $dep, which is one of Warren's units" test -e "$SOURCE/units/$dep"
		else
			expect "$(basename "$u") names $dep, a listed external unit" \
				test "${EXTERNAL_UNITS/ $dep /}" != "$EXTERNAL_UNITS"
		fi
	done
done

# 1b. The sandboxes' cgroups: netnsd and snapshotd name the subtree warren-cgroupd.service is
# delegated (its slice and name, then /sandboxes), and start after it
parent=/$(effective "$SOURCE/units/warren-cgroupd.service" Slice)/warren-cgroupd.service/sandboxes
for u in netnsd snapshotd; do
	expect "warren-$u.service's --cgroup-parent is $parent" \
		grep -qE "^ExecStart=.* --cgroup-parent $parent( |\$)" "$SOURCE/units/warren-$u.service"
	expect "warren-$u.service starts after warren-cgroupd.service" \
		grep -qE "^After=.*warren-cgroupd\.service" "$SOURCE/units/warren-$u.service"
done

# 2. systemd-analyze verify: nothing to say, except that a listed external unit is not installed
# on this machine (then its name is in the line and it is logged, not hidden)
absent=()
for e in $EXTERNAL_UNITS; do installed "$e" || absent+=("$e"); done
log "external units not installed here: ${absent[*]:-none}"
cp "$SOURCE"/units/*.service "$SOURCE"/units/*.socket "$T/"
# the binaries under test (WARREN_LIBEXEC), which may not be installed under /usr/local yet
sed -i "s|^ExecStart=/usr/local/libexec/warren/|ExecStart=$LIBEXEC/|" "$T"/*.service
rc=0
out=$(cd "$T" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no ./*.service ./*.socket 2>&1) || rc=$?
rest=$out
for e in "${absent[@]}"; do
	rest=$(grep -vF -e "Unit $e not found" -e "dependency on $e" -e "dependency job for $e" \
		<<<"$rest" || true)
done
[ "$out" = "$rest" ] || log "verify, lines about absent external units: $(grep -vxF -f <(echo "$rest") <<<"$out")"
echo "$rest"
expect "systemd-analyze verify reports nothing else" test -z "$rest"
[ -n "$out" ] || expect "systemd-analyze verify exits 0" test "$rc" = 0

# 2b. No unit is more exposed than systemd-machined (systemd-analyze security, offline; setup.sh
# installs systemd-container for machined's unit): the figures are in docs/ARCHITECTURE.md
exposure() { # DIR UNIT: the overall exposure, a number
	(cd "$1" && systemd-analyze security --offline=yes --no-pager "$2" 2>/dev/null) |
		sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p'
}
machined=$(exposure /lib/systemd/system systemd-machined.service)
expect "machined's exposure was read (${machined:-none})" test -n "$machined"
for u in "$T"/warren-*.service; do
	e=$(exposure "$T" "$(basename "$u")")
	expect "$(basename "$u")'s exposure ${e:-?} is no more than machined's $machined" \
		awk -v e="${e:-99}" -v m="$machined" 'BEGIN { exit !(e <= m) }'
done

# 2c. Bus activation: the activation file names the bus name and a unit that owns it
act=$SOURCE/units/org.warren.Warren1.dbus-service
expect "the activation file is for org.warren.Warren1" grep -qx 'Name=org.warren.Warren1' "$act"
su=$(sed -n 's/^SystemdService=//p' "$act")
expect "it names a unit of Warren's ($su)" test -f "$SOURCE/units/$su"
expect "whose BusName is org.warren.Warren1" test "$(effective "$SOURCE/units/$su" BusName)" = org.warren.Warren1

# 3. The promised values
for u in "$SOURCE"/units/warren-*.service; do
	expect "$(basename "$u") sets a SystemCallFilter" grep -q "^SystemCallFilter=" "$u"
	expect "$(basename "$u") sets SystemCallArchitectures=native" test "$(effective "$u" SystemCallArchitectures)" = native
	expect "$(basename "$u") has promises in the table" grep -q "^$(basename "$u") " <<<"$PROMISES"
done
while read -r unit key want; do
	[ -n "$unit" ] || continue
	f=$SOURCE/units/$unit
	[ -f "$f" ] || fail "$unit: no such unit in units/"
	got=$(effective "$f" "$key")
	[ "$want" = - ] && want=
	if [[ $LIST_KEYS == *" $key "* ]]; then want=$(tr -s ' ' '\n' <<<"$want" | sort -u | paste -sd' '); fi
	expect "$unit $key=${got:-(unset)} (promised: ${want:-unset})" test "$got" = "$want"
done <<<"$PROMISES"
