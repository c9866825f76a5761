#!/bin/bash
# Attacks on the image and guest-RAM files root writes for sandboxes, and on the microVM exec
# bound, made for real:
# - a compromised supervisor: a protobuf peer speaking netnsd's protocol as uid warren hands
#   netnsd hostile image directories for a checkpoint or a restore (a directory of its own, one
#   whose state/ram/checkpoint.img are symlinks to a root-owned canary, the store itself,
#   another sandbox's sealed image, a planted temporary one); each is refused, the canary is
#   unchanged, nothing is written there, the sandbox goes on and netnsd stays up;
# - a local user (nobody) who makes Warren's /dev/shm names first: snapshotd refuses an image
#   cache that is not its own, and netnsd puts no guest RAM in the RAM directory (a memfd);
# - a guest that writes (gVisor) or claims (microVM) more exec output than the spawner may
#   hold: cut at 16 MiB, said so.
# The image proof is the spawner's (netnsd, under its own uid, forwards the fd as it came).
# Positive controls: a legitimate snapshot and fork through D-Bus, gVisor and (where QEMU and
# the kernel are here) microVM, work with the same daemons, and their image files are handed by
# the spawner to snapshotd's user alone (0600), so snapshotd seals them with no DAC override.
# Whether snapshotd compresses a tag image depends on the store disk's speed, measured afresh in
# every test's new store (64 MiB + fdatasync): on a loaded machine it measured below 500 MB/s,
# good1 became checkpoint.img.zst, and the store's good1 held no plain image for the restore
# below (the flaky "same peer's restore" failure). Pinned off here, so the run is the same on
# every machine; SNAPSHOTD_OPTS="--compress-below 100000" runs the compressed path, whose
# restorable directory is snapshotd's cache entry (what OpenImage hands the supervisor).
SNAPSHOTD_OPTS=${SNAPSHOTD_OPTS:---compress-below 0}
source "$(dirname "$0")/lib.sh"

CANARY=/etc/warren-canary-t$K
printf 'canary %s %s\n' "$RANDOM$RANDOM" "$(date +%s%N)" >"$CANARY"
chmod 0600 "$CANARY"
SUM=$(sha256sum <"$CANARY")
trap 'rc=$?; rm -f "$CANARY"; cleanup $rc' EXIT
canary_ok() { [ "$(sha256sum <"$CANARY")" = "$SUM" ] && [ "$(stat -c '%u %a' "$CANARY")" = "0 600" ]; }
NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups --no-new-privs"
# the peer is uid warren; an image directory it names is opened first, as root, since a
# supervisor can hold any directory of the store (snapshotd's OpenImage and PrepareImage)
poke() { IPC_POKE_USER=warren "$POKE" "$T/netnsd.sock" "$@" 2>&1 || true; }
refused() { # refused WHAT OUTPUT: the answer is an error (or the peer dropped), not ok
	local what=$1 out=$2
	log "$what: $out"
	grep -q '^error \|^dropped' <<<"$out" || fail "$what was not refused: $out"
	log "ok: $what refused"
}

# ---- /dev/shm: names made first by another user ----
$NOBODY mkdir -m 0777 "$VM_RAM_DIR" "$VM_RAM_DIR-images"
out=$(timeout 20 "$LIBEXEC/warren-snapshotd" --socket "$T/probe.sock" --peer-users warren \
	--store "$T/images" --image-cache "$VM_RAM_DIR-images" 2>&1) && fail "snapshotd started with nobody's image cache"
expect "snapshotd refuses an image cache that nobody made ($out)" grep -q "refusing to start" <<<"$out"
expect "and put nothing in it" test -z "$(ls -A "$VM_RAM_DIR-images")"
rmdir "$VM_RAM_DIR-images"
install -d -o nobody -m 0700 "$T/nobody-cache"
$NOBODY ln -s "$T/nobody-cache" "$VM_RAM_DIR-images"
out=$(timeout 20 "$LIBEXEC/warren-snapshotd" --socket "$T/probe.sock" --peer-users warren \
	--store "$T/images" --image-cache "$VM_RAM_DIR-images" 2>&1) && fail "snapshotd started with a symlinked image cache"
expect "snapshotd refuses a symlink nobody put in its cache's place ($out)" grep -q "refusing to start" <<<"$out"
rm -f "$VM_RAM_DIR-images" # the administrator's remedy; the RAM directory stays nobody's
warren_start
expect "snapshotd made its cache its own user's alone" \
	test "$(stat -c '%U %a %F' "$VM_RAM_DIR-images")" = "warren-snapshotd 700 directory"

# ---- positive control: a legitimate snapshot and fork (gVisor) ----
id=$(create web wait)
expect "the web sandbox answers" wait_for 30 sh -c "curl -fsS --max-time 5 $(sb_url "$id") >/dev/null"
call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Snapshot s good1 >/dev/null
expect "a legitimate snapshot is sealed" test -f "$T/images/good1/warren-image"
# (compressed when snapshotd measured a slow disk: checkpoint.img.zst, restored from its cache)
img=$(ls "$T"/images/good1/checkpoint.img*)
expect "its $(basename "$img") is snapshotd's alone ($(stat -c '%U %a' "$img"))" \
	test "$(stat -c '%U %a' "$img")" = "warren-snapshotd 600"
expect "the parent answers again" wait_for 30 sh -c "curl -fsS --max-time 5 $(sb_url "$id") >/dev/null"
child=$(warrenctl fork good1 1)
expect "a child forked from it answers" wait_for 30 sh -c "curl -fsS --max-time 5 $(sb_url "$child") >/dev/null"
GOODSUM=$(cd "$T/images/good1" && sha256sum * | sha256sum)

# ---- hostile image directories from a protobuf peer as uid warren ----
install -d -o warren -g warren -m 0755 "$T/evil" "$T/empty"
for f in state ram checkpoint.img; do ln -s "$CANARY" "$T/evil/$f"; done
chown -h warren:warren "$T"/evil/*
alive() {
	kill -0 "$PID_netnsd" && $POKE "$T/netnsd.sock" status | grep -q ready=1 && canary_ok
}
gvisor_goes_on() {
	[ "$(sbprop "$id" State)" = running ] && curl -fsS --max-time 5 "$(sb_url "$id")" >/dev/null
}
refused "checkpoint into a directory of warren's whose files are symlinks to $CANARY" \
	"$(poke checkpoint "$id" "$T/evil")"
expect "the canary is unchanged, netnsd up" alive
expect "the sandbox was not stopped" gvisor_goes_on
refused "checkpoint into an empty directory outside the store" "$(poke checkpoint "$id" "$T/empty")"
expect "nothing was written there" test -z "$(ls -A "$T/empty")"
refused "checkpoint into the store itself" "$(poke checkpoint "$id" "$T/images")"
refused "checkpoint into another sandbox's sealed image" "$(poke checkpoint "$id" "$T/images/good1")"
expect "that image is unchanged" test "$(cd "$T/images/good1" && sha256sum * | sha256sum)" = "$GOODSUM"
# a temporary image directory of snapshotd's with members already in it (what a buggy snapshotd
# could leave): refused by the spawner's proof (not empty), whose own opens would refuse it too
# (O_EXCL|O_NOFOLLOW)
install -d -o warren-snapshotd -g warren-snapshotd -m 0700 "$T/images/.tmp.good2.0badc0de"
for f in state ram checkpoint.img; do ln -s "$CANARY" "$T/images/.tmp.good2.0badc0de/$f"; done
refused "checkpoint into a new-looking image holding symlinks to $CANARY" \
	"$(poke checkpoint "$id" "$T/images/.tmp.good2.0badc0de")"
rm -rf "$T/images/.tmp.good2.0badc0de"
expect "the canary is unchanged, netnsd up" alive
expect "the sandbox still answers" gvisor_goes_on
ROOTFS=/var/lib/warren/templates/web/rootfs
refused "a gVisor restore from warren's directory of symlinks" \
	"$(poke restore 0000000ee001 "$T/evil" "$ROOTFS" gvisor 8080 128)"
refused "a gVisor restore from the store itself" \
	"$(poke restore 0000000ee002 "$T/images" "$ROOTFS" gvisor 8080 128)"
expect "the canary is unchanged, netnsd up" alive
# the positive control of the same peer: a restore of the sealed image goes through, from the
# directory the supervisor would get from snapshotd (the store's, or the cache's when compressed)
good1=$T/images/good1
if [ -e "$good1/checkpoint.img.zst" ]; then
	good1=$(ls -d "$VM_RAM_DIR-images"/good1.* | head -1) # unpacked there by the fork above
	refused "a gVisor restore from the compressed image itself" \
		"$(poke restore 0000000ee006 "$T/images/good1" "$ROOTFS" gvisor 8080 128)"
fi
out=$(poke restore 0000000ee003 "$good1" "$ROOTFS" gvisor 8080 128)
expect "the same peer's restore of a sealed image goes through ($out)" grep -q '^ok' <<<"$out"
expect "the spawner made the proofs and said why it refused" \
	grep -q "spawner.*Checkpoint of $id refused: .*is not an empty new image" "$T/netnsd.log"

# ---- gVisor exec output: the spawner holds at most 16 MiB of each stream ----
out=$(poke exec "$id" 60000 /bin/busybox sh -c 'echo hello; echo oops >&2')
expect "a small exec's output comes whole ($out)" grep -q "^status 0 out 6 err 5" <<<"$out"
t0=$(date +%s)
out=$(poke exec "$id" 120000 /bin/busybox sh -c 'busybox head -c 18000000 /dev/zero; echo done >&2')
log "gVisor exec of 18 MB of output ($(($(date +%s) - t0)) s): $out"
expect "stdout is cut at 16 MiB" grep -q "^status 0 out 16777216 " <<<"$out"
expect "and stderr says it was truncated, after what the guest wrote there" \
	grep -q "done .*exec output truncated: more than 16777216 bytes on stdout" <<<"$out"
expect "the sandbox still answers" gvisor_goes_on

# ---- microVMs, where this host has the backend ----
backends=$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager Backends)
if grep -q '"microvm"' <<<"$backends"; then
	vm=
	for attempt in 1 2; do # TCG boots hang now and then (docs/MICROVM.md): one retry
		out=$(mgr CreateSandbox sa{sv} web 3 wait b true backend s microvm start_timeout_ms u 60000 2>&1) &&
			{ vm=$(echo "$out" | awk '{print $2}' | tr -d '"'); break; }
		log "microVM create attempt $attempt failed: $out"
	done
	[ -n "$vm" ] || fail "no microVM came up"
	qpid=$(pgrep -f "^/usr/bin/qemu-system-x86_64.*$T/netnsd/bundles/$vm" | head -1)
	expect "the VM's RAM is anonymous memory (a memfd), not a file" grep -q "/memfd:warren-ram" "/proc/$qpid/maps"
	expect "nothing went into the RAM directory nobody made" test -z "$(ls -A "$VM_RAM_DIR")"
	expect "which is still nobody's" test "$(stat -c %U "$VM_RAM_DIR")" = nobody
	refused "a microVM checkpoint into warren's directory of symlinks" "$(poke checkpoint "$vm" "$T/evil")"
	refused "a microVM checkpoint into another sandbox's sealed image" "$(poke checkpoint "$vm" "$T/images/good1")"
	install -d -o warren-snapshotd -g warren-snapshotd -m 0700 "$T/images/.tmp.good3.0badc0de"
	for f in state ram; do ln -s "$CANARY" "$T/images/.tmp.good3.0badc0de/$f"; done
	refused "a microVM checkpoint into a new-looking image whose state and ram are symlinks to $CANARY" \
		"$(poke checkpoint "$vm" "$T/images/.tmp.good3.0badc0de")"
	rm -rf "$T/images/.tmp.good3.0badc0de"
	expect "the canary is unchanged, netnsd up" alive
	expect "the VM was not paused for good: it answers" sh -c "curl -fsS --max-time 10 $(sb_url "$vm") | grep -q Warren"
	ROOTFS_VM=/var/lib/warren/templates/web/rootfs
	refused "a microVM restore from warren's directory of symlinks" \
		"$(poke restore 0000000ee004 "$T/evil" "$ROOTFS_VM" microvm 8080 128)"
	refused "a microVM restore from a gVisor image" \
		"$(poke restore 0000000ee005 "$T/images/good1" "$ROOTFS_VM" microvm 8080 128)"
	expect "the canary is unchanged, netnsd up" alive
	# positive control: a legitimate microVM snapshot; its files root's alone
	call "/org/warren/Warren1/sandbox/$vm" org.warren.Warren1.Sandbox Snapshot s goodvm >/dev/null
	# (state and ram, or their .zst when compressed)
	vmfiles=$(ls "$T"/images/goodvm/state* "$T"/images/goodvm/ram* 2>/dev/null || true)
	expect "a legitimate microVM snapshot is sealed with state and ram ($(echo $vmfiles))" \
		test "$(echo "$vmfiles" | grep -c .)" = 2 -a -f "$T/images/goodvm/warren-image"
	expect "its files are snapshotd's alone" \
		test "$(stat -c '%U %a' $vmfiles | sort -u)" = "warren-snapshotd 600"
	expect "the VM resumed in place" kill -0 "$qpid"
	# guest memory was read and the image written with no privilege: the copier's own
	# /proc/self/status, read after its drop, says so (every uid the store's owner, no caps)
	sd=$(id -u warren-snapshotd)
	copied=$(grep "snapshot of $vm: copying as" "$T/netnsd/bundles/$vm/vmm.log" | tail -1)
	log "copier: $copied"
	expect "the RAM was copied as warren-snapshotd ($sd), not root" \
		grep -Eq "copying as pid [0-9]+ uid $sd $sd $sd $sd CapEff 0+ CapPrm 0+$" <<<"$copied"
	# the guest claims more output than the spawner holds: cut at 16 MiB and said so
	t0=$(date +%s)
	out=$(poke exec "$vm" 120000 /bin/busybox sh -c 'busybox head -c 18000000 /dev/zero; echo done >&2')
	log "exec of 18 MB of output ($(($(date +%s) - t0)) s): $out"
	expect "stdout is cut at 16 MiB" grep -q "^status [0-9]* out 16777216 " <<<"$out"
	expect "and stderr says it was truncated" grep -q "exec output truncated" <<<"$out"
	expect "the VM still answers" sh -c "curl -fsS --max-time 10 $(sb_url "$vm") | grep -q Warren"
	warrenctl destroy "$vm"
else
	log "no microVM backend here ($backends): its part is skipped"
fi
expect "the canary is unchanged, netnsd up" alive
expect "netnsd's log names the refusals" grep -q "refused: .*not in snapshotd's store" "$T/netnsd.log"
log "all done"
