#!/bin/bash
# A compromised supervisor (a protobuf peer as uid warren) sends snapshotd hostile requests:
# the 0.2.0 crash (a 33-character warm tag: image_read returned before initialising what the
# handler then freed), tags and temporary names that climb out of the store, fds no request
# takes, oversized fields, an image directory planted with a bad name and a lying header.
# What must hold: each violation closes that peer (or is an error for a corrupt image), snapshotd
# stays alive (same pid), nothing outside its store changes, and the same requests done right
# still work (positive control first and last).
source "$(dirname "$0")/lib.sh"
start_snapshotd
pid=$PID_snapshotd
sock=$T/snapshotd.sock
pw() { setpriv --reuid=warren --regid=warren --clear-groups "$POKE" "$sock" "$@"; }
alive() { kill -0 "$pid" 2>/dev/null && pw status | grep -q ready=1; }

# things a confused store path would reach: a canary file and a directory beside the store
echo canary >"$T/canary"
mkdir -p "$T/outside/victim"
echo victim >"$T/outside/victim/file"
sum_outside() { (cd "$T" && find . -path ./images -prune -o -path ./snapshotd.sock -o -name '*.log' -o -print0 | sort -z | xargs -0 stat -c '%n %s %Y %a' 2>/dev/null; sha256sum canary outside/victim/file); }
before=$(sum_outside)

# positive control: the supervisor's own sequence (root here only because the checkpoint file is
# written through the directory fd as netnsd, root, would; the requests are the same)
out=$("$POKE" "$sock" snap-take good web gvisor || true)
expect "a well-formed prepare, checkpoint and commit seals an image ($out)" grep -q '^ok good 11$' <<<"$out"
out=$(pw snap-open good || true)
expect "and it opens, with its template and backend and one directory fd ($out)" test "$out" = "ok web gvisor 1"

dropped() { # dropped DESCRIPTION POKE-ARGS...: the request closes the peer, snapshotd lives
	local what=$1 out
	shift
	out=$(pw "$@" 2>&1 || true)
	[ "$out" = dropped ] || fail "$what: expected the peer closed, got '$out'"
	alive || fail "$what: snapshotd is gone"
	log "ok: $what closes the peer, snapshotd alive"
}
dropped "OpenImage of the 0.2.0 crash tag (warm- + 28 characters)" snap-open warm-abcdefghijklmnopqrstuvwxyz01
dropped "OpenImage of ../outside" snap-open ../outside
dropped "OpenImage of .." snap-open ..
dropped "OpenImage of an empty tag" snap-open ""
dropped "OpenImage of a/b" snap-open good/../good
dropped "PrepareImage of ../outside" snap-prepare ../outside
dropped "PrepareImage of .tmp.x" snap-prepare .tmp.x
dropped "RemoveImage of ../outside" snap-remove ../outside
dropped "RemoveImage of .." snap-remove ..
dropped "AbortImage of a name that climbs out" snap-abort ".tmp.x/../../outside"
dropped "AbortImage of .tmp." snap-abort .tmp.
dropped "AbortImage of a committed image's name" snap-abort good
dropped "AbortImage of ../outside" snap-abort ../outside
# a commit must name the directory prepared for its own tag, and say who it came from truly
temp=$(pw snap-prepare victim2 | awk '/^ok/{print $2}')
[ -n "$temp" ] || fail "prepare for the commit attacks failed"
dropped "CommitImage of one tag's directory as another tag" snap-commit "$temp" other
dropped "CommitImage climbing out through the temporary name" snap-commit "../outside" victim2
dropped "CommitImage with a parent that is not a sandbox id" snap-commit "$temp" victim2 ../../etc/pa
dropped "CommitImage with a bad template" snap-commit "$temp" victim2 0123456789ab ../web
dropped "CommitImage with a backend outside the enum" snap-commit "$temp" victim2 0123456789ab web 99
dropped "CommitImage with a compression outside the enum" snap-commit "$temp" victim2 0123456789ab web gvisor 2
# fds: no snapshotd request takes one; neither count nor type gets through
dropped "OpenImage carrying one /dev/null fd" snap-fds 1 dev good
dropped "OpenImage carrying two directory fds" snap-fds 2 dir good
dropped "OpenImage carrying four directory fds" snap-fds 4 dir good
# oversized fields (a datagram is at most 64 KiB: these fit)
dropped "a 60000-byte tag" snap-big tag 60000
dropped "a 60000-byte temporary name" snap-big temp 60000
dropped "a 4000-byte parent" snap-big parent 4000
dropped "a 4000-byte template" snap-big template 4000
dropped "a backend numbered 2^31-1 (no longer a string: the largest enum number)" snap-big backend 4000
dropped "a compression numbered 2^31-1" snap-big compression 4000
dropped "a 4000-byte zswap compressor" snap-big compressor 4000
expect "the aborted attack left its prepared directory to be cleaned" test -d "$T/images/$temp"
out=$(pw snap-abort "$temp" || true)
expect "and a right abort removes it ($out)" test "$out" = ok

# a store scribbled in: a directory with a name no tag has (ListImages crashed on it in 0.2.0),
# and an image whose header lists a file outside it
mkdir -p "$T/images/Not_A_Tag" "$T/images/liar"
printf 'format=1\ncreated=1\nparent=\ntemplate=web\nbackend=gvisor\ncompression=none\nfile=../../canary 7 0000000000000000\n' >"$T/images/liar/warren-image"
out=$(pw snap-list || true)
expect "ListImages skips what is not an image ($out)" test "$out" = "ok good"
out=$(pw snap-open liar || true)
expect "a lying header is a corrupt image, an error, not a crash ($out)" grep -q "^error .*corrupt" <<<"$out"
expect "snapshotd alive after the planted store" alive

expect "snapshotd kept its pid through every attack" sh -c "kill -0 $pid && grep -q warren-snapshotd /proc/$pid/cmdline"
after=$(sum_outside)
[ "$before" = "$after" ] || fail "something outside the store changed: $(diff <(echo "$before") <(echo "$after"))"
log "ok: nothing outside the store changed"
expect "the canary is unchanged" test "$(cat "$T/canary")" = canary
# positive control again, on a peer that is not one of the dropped ones
out=$(pw snap-open good || true)
expect "the good image still opens ($out)" test "$out" = "ok web gvisor 1"
out=$(pw snap-remove good || true)
expect "and is removed by a right request ($out)" test "$out" = ok
expect "gone" test ! -e "$T/images/good"
