#!/bin/bash
# Hostile template root filesystems: netnsd's spawner, the privileged side,
# refuses a rootfs holding a device node, a directory others may write, an entry or a path
# component not owned by root, or a mount point, whatever the supervisor says; runsc gets the
# tree that was checked, by fd (a symlink swapped in during the spawns never becomes the root of
# a sandbox); the built-in templates hold no device node; the spawner runs with exactly the
# capabilities docs/ARCHITECTURE.md lists, and runsc works under them (the positive controls).
source "$(dirname "$0")/lib.sh"
TPL=$T/tpl
WEB=/var/lib/warren/templates/web/rootfs
[ -x "$WEB/bin/busybox" ] || { echo "SKIP: the web template is not built"; exit 77; }

# The built-in templates: no device node (debootstrap's dev/console was the host's console),
# nothing others may write.
for t in /var/lib/warren/templates/*/rootfs; do
	expect "built-in $t holds no device node" \
		test -z "$(find "$t" -xdev \( -type c -o -type b \) -print -quit)"
	expect "built-in $t holds nothing others may write" \
		test -z "$(find "$t" -xdev ! -type l -perm -o+w -print -quit)"
done

# Templates of this test's own, in a templates dir of its own.
install -d -m 0755 "$TPL"
clean_copy() { # clean_copy NAME: a copy of the web tree at $TPL/NAME/rootfs
	install -d -m 0755 "$TPL/$1"
	cp -a "$WEB" "$TPL/$1/rootfs"
}
clean_copy web
# a device node: the host's console and memory, 0666
clean_copy devt
mknod -m 0666 "$TPL/devt/rootfs/www/console" c 5 1
mknod -m 0666 "$TPL/devt/rootfs/www/mem" c 1 1
# a world-writable directory (not sticky): any local user could change what sandboxes run
clean_copy wwdir
install -d -m 0777 "$TPL/wwdir/rootfs/www/drop"
# a path component an unprivileged user owns: they could swap the rootfs under netnsd
install -d -m 0755 -o nobody "$TPL/owned"
cp -a "$WEB" "$TPL/owned/rootfs"
# a mount point inside the tree: the tree runsc would see is not the one checked
clean_copy mnt
install -d -m 0755 "$TPL/mnt/rootfs/www/other"
mount -t tmpfs -o mode=0755 warren-attack "$TPL/mnt/rootfs/www/other"
# the race: rootfs swapped with a symlink to / (the host's root), many times a second
clean_copy swap
ln -s / "$TPL/swap/rootfs.alt"
SWAPPER=
at_exit() {
	[ -n "$SWAPPER" ] && kill "$SWAPPER" 2>/dev/null
	umount -l "$TPL/mnt/rootfs/www/other" 2>/dev/null
}
trap 'rc=$?; at_exit; cleanup $rc' EXIT

# The threat is real: as `nobody`, the host's console opens through a template's device node.
expect "as nobody, a template's 0666 console node opens (the threat this test guards)" \
	setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c "exec 3>'$TPL/devt/rootfs/www/console'"

start_bus
start_netnsd --templates-dir "$TPL"
start_snapshotd
start_gateway
start_supervisor --templates-dir "$TPL"
wait_for 20 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager PoolFree | grep -qx 'u 6'"

# Positive control: a clean template runs, through the checked fd.
id=$(create web wait)
expect "a clean template runs and answers" sh -c "curl -fsS --max-time 20 $(sb_url "$id") | grep -q Hello"
# what runsc's gofer serves is the checked tree: its root mount is the template's directory
gofer_root() { # gofer_root ID: the gofer's root mount, as "root-in-fs options"
	local p
	p=$(pgrep -f "runsc-gofer.*$1" | head -1)
	[ -n "$p" ] && awk '$5 == "/" {print $4, $6}' "/proc/$p/mountinfo" | head -1
}
expect "runsc's gofer serves the template's tree, read-only ($(gofer_root "$id"))" \
	grep -q "^$TPL/web/rootfs ro" <<<"$(gofer_root "$id")"
warrenctl destroy "$id"

# Each hostile template: AddTemplate itself is refused with the reason (the supervisor asks netnsd,
# whose spawner checks the tree as a create would), nothing is saved. (A checked tree is cached
# by its root's stamps: only root can change it below, so a change by root after AddTemplate is
# the administrator's, not an attack.)
err() { "$@" 2>&1 && return 1 || true; }
# (httpd serves / : the program runs the same in the template and in the host's root, so a
# sandbox given the wrong tree would start and be seen)
add() { mgr AddTemplate ssasqta{sv} -- "$1" "$TPL/$1/rootfs" 7 /bin/busybox httpd -f -p 8080 -h / 8080 67108864 0 >/dev/null; }
refused() { # refused NAME PATTERN
	local out
	out=$(err add "$1") || fail "AddTemplate $1 (a hostile tree) was accepted"
	expect "AddTemplate $1 refused by netnsd's spawner: $(grep -o 'template rootfs refused.*' <<<"$out" | head -c 160)" \
		grep -q "template rootfs refused.*$2" <<<"$out"
	expect "template $1 was not added" test ! -e "$T/state/templates/$1"
	out=$(err mgr CreateSandbox sa{sv} "$1" 1 wait b true)
	expect "and a create of it finds no such template" grep -q "No template '$1'" <<<"$out"
}
refused devt "/www/[a-z]* is a device node"
refused wwdir "/www/drop is writable by others"
refused owned "the component owned is not owned by root"
refused mnt "/www/other is a mount point"
expect "netnsd logged the refusals" grep -q "Template rootfs .* refused" "$T/netnsd.log"
# positive control of the same path: the administrator removes the device nodes, and the same
# AddTemplate goes through (a refusal is not cached) and the template runs
rm "$TPL/devt/rootfs/www/console" "$TPL/devt/rootfs/www/mem"
expect "AddTemplate of the tree cleaned up goes through" add devt
id=$(create devt wait)
expect "and its sandbox serves the tree (httpd -h /: /www/index.html)" \
	sh -c "curl -fsS --max-time 20 $(sb_url "$id")www/index.html | grep -q Hello"
warrenctl destroy "$id" >/dev/null
expect "netnsd is still serving" sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager Helpers | grep -q '\"netnsd\" true'"

# The race: rootfs and a symlink to / exchanged atomically, over and over, while sandboxes
# start. netnsd checks the path, then runsc would open it: with a path, the host's root
# becomes the sandbox's root about half the time. Each create must fail or get the template.
add swap
python3 - "$TPL/swap/rootfs" "$TPL/swap/rootfs.alt" <<'EOF' &
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b = (p.encode() for p in sys.argv[1:3])
while True:
    if libc.renameat2(-100, a, -100, b, 2) < 0:  # RENAME_EXCHANGE
        sys.exit("renameat2: %s" % os.strerror(ctypes.get_errno()))
    time.sleep(0.0005)
EOF
SWAPPER=$!
host_root=0 ok=0 refused=0
for i in $(seq 16); do
	if out=$(mgr CreateSandbox sa{sv} swap 1 wait b true 2>&1); then
		sid=$(awk '{print $2}' <<<"$out" | tr -d '"')
		ok=$((ok + 1))
		# /etc/os-release is the host's; the web template has only /etc/passwd (the checked
		# tree may be named rootfs.alt by now: the exchange goes on)
		groot=$(gofer_root "$sid")
		if ! grep -q "^$TPL/swap/rootfs" <<<"$groot" ||
			warrenctl exec "$sid" -- /bin/busybox test -e /etc/os-release 2>/dev/null; then
			host_root=$((host_root + 1))
			log "sandbox $sid got the host's root (gofer root: $groot)"
		fi
		warrenctl destroy "$sid" >/dev/null 2>&1 || true
	else
		refused=$((refused + 1))
	fi
done
kill "$SWAPPER"
wait "$SWAPPER" 2>/dev/null || true
SWAPPER=
log "race: $ok started, $refused refused, $host_root with the host's root"
expect "no sandbox got the host's root through the swap" test "$host_root" = 0
expect "some creates ran during the race (the test exercised the path)" test "$ok" -gt 0
# after the race, the template (rootfs back in place) still runs
[ -d "$TPL/swap/rootfs" ] && [ ! -L "$TPL/swap/rootfs" ] ||
	python3 -c 'import ctypes,sys; ctypes.CDLL(None).renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2)' \
		"$TPL/swap/rootfs" "$TPL/swap/rootfs.alt"
id=$(create swap wait)
expect "the swapped template runs its own tree again" sh -c "! warrenctl exec $id -- /bin/busybox test -e /etc/os-release"
# The spawner's capabilities are exactly the documented set (docs/ARCHITECTURE.md), bounding
# set included, and runsc ran under them above.
spawner=$(pgrep -P "$PID_netnsd" -x netnsd-spawner | head -1)
expect "the spawner runs ($spawner)" test -n "$spawner"
want=$(sed -n "s/^| netnsd's spawner .*| capabilities: \([A-Z_, ]*\)\..*/\1/p" "$SOURCE/docs/ARCHITECTURE.md" |
	tr -d ' ' | tr 'A-Z' 'a-z')
expect "docs/ARCHITECTURE.md lists the spawner's capabilities ($want)" test -n "$want"
mask=$(python3 - "$want" <<'EOF'
import sys
names = {"chown": 0, "dac_override": 1, "dac_read_search": 2, "fowner": 3, "fsetid": 4,
         "kill": 5, "setgid": 6, "setuid": 7, "setpcap": 8, "net_bind_service": 10,
         "net_admin": 12, "net_raw": 13, "ipc_lock": 14, "sys_module": 16, "sys_rawio": 17,
         "sys_chroot": 18, "sys_ptrace": 19, "sys_admin": 21, "sys_boot": 22, "sys_nice": 23,
         "sys_resource": 24, "mknod": 27, "audit_write": 29, "setfcap": 31}
m = 0
for c in sys.argv[1].split(","):
    if c:
        m |= 1 << names[c.removeprefix("cap_")]
print("%016x" % m)
EOF
)
eff=$(awk '/^CapEff:/ {print $2}' /proc/$spawner/status)
bnd=$(awk '/^CapBnd:/ {print $2}' /proc/$spawner/status)
expect "the spawner's effective set is the documented one ($eff = $mask)" test "$((16#$eff))" = "$((16#$mask))"
expect "the spawner's bounding set is the documented one ($bnd = $mask)" test "$((16#$bnd))" = "$((16#$mask))"
# and runsc's processes in the host's user namespace have no capability beyond it (the
# sandbox's own user namespace has a full set that counts only inside it)
for p in $(pgrep -f "runsc.*$id"); do
	[ "$(readlink /proc/$p/ns/user)" = "$(readlink /proc/$spawner/ns/user)" ] || continue
	pb=$(awk '/^CapBnd:/ {print $2}' /proc/$p/status)
	expect "runsc process $p ($(cut -c1-12 /proc/$p/comm)) is bounded by the spawner's set ($pb)" \
		test "$((16#$pb & ~16#$mask))" = 0
done
log "all ok"
