#!/bin/bash
# Hostile strings over D-Bus, from a member of group warren (and root): control characters
# (\n \r \t \x01 \x7f) and 100 KiB strings in template names, argv, rootfs, option keys and values,
# tags, compressor names and Exec argv; warm- tags a user may not make; a warm template whose
# name makes a tag snapshotd must refuse (0.2.0: snapshotd crashed on the next create).
# What must hold: each is refused with org.warren.Warren1.Error.InvalidArgument and a message
# saying what to change; every daemon keeps its pid; the saved template records hold no injected
# key, and after a supervisor restart (kill -9, as test-supervisor-restart.sh) the templates are
# what was added, while records planted in 0.2.0's injectable form are refused with a log line.
# Positive controls: a normal AddTemplate, CreateSandbox and Snapshot work.
source "$(dirname "$0")/lib.sh"
getent passwd warren-test-op >/dev/null ||
	useradd --system --no-create-home --shell /usr/sbin/nologin -G warren warren-test-op
warren_start
OP=(setpriv --reuid=warren-test-op --regid="$(id -g warren-test-op)" --init-groups)
opbus() { "${OP[@]}" busctl --system -- "$@"; }
opmgr() { opbus call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager "$@"; }
ROOTFS=/var/lib/warren/templates/web/rootfs
WEBARGS=(7 /bin/busybox httpd -f -p 8080 -h /www)
pids="$PID_netnsd $PID_snapshotd $PID_gateway $PID_supervisor"
alive() { for p in $pids; do kill -0 "$p" 2>/dev/null || return 1; done; }
big=$(head -c 102400 /dev/zero | tr '\0' a)

# refused DESCRIPTION TEXT CMD...: the call fails with a message holding TEXT, all daemons alive
refused() {
	local what=$1 text=$2 out
	shift 2
	if out=$("$@" 2>&1); then fail "$what: accepted ($out)"; fi
	grep -q -- "$text" <<<"$out" || fail "$what: not the expected refusal ('$text'): $out"
	alive || fail "$what: a daemon died"
	log "ok: $what refused: ${out:0:160}"
}
# named DESCRIPTION GDBUS-ARGS...: through gdbus, which shows the D-Bus error name
named() {
	local what=$1 out
	shift
	if out=$("${OP[@]}" gdbus call --system --dest org.warren.Warren1 "$@" 2>&1); then
		fail "$what: accepted ($out)"
	fi
	grep -q "org.warren.Warren1.Error.InvalidArgument" <<<"$out" ||
		fail "$what: not InvalidArgument: $out"
	alive || fail "$what: a daemon died"
	log "ok: $what: ${out:0:160}"
}
CTRL="control character"

# positive control first: a member of group warren adds a template
expect "a normal AddTemplate works" opmgr AddTemplate ssasqta{sv} good "$ROOTFS" "${WEBARGS[@]}" 8080 67108864 0
expect "a warm template of 24 characters (the longest whose tags are valid) is accepted" \
	opmgr AddTemplate ssasqta{sv} abcdefghijklmnopqrstuvwx "$ROOTFS" "${WEBARGS[@]}" 8080 67108864 1 warm b true
saved=$(sha256sum "$T/state/templates/good" "$T/state/templates/abcdefghijklmnopqrstuvwx")

# AddTemplate: the 0.2.0 injection and its cousins
refused "argv with a newline writing standby=1000 and warm=1" "$CTRL" \
	opmgr AddTemplate ssasqta{sv} inj "$ROOTFS" 2 /bin/busybox $'x\nstandby=1000\nwarm=1' 8080 67108864 0
for c in $'\r' $'\t' $'\x01' $'\x7f' $'\x1b'; do
	refused "argv with byte $(printf '%s' "$c" | od -An -tx1 | tr -d ' ')" "$CTRL" \
		opmgr AddTemplate ssasqta{sv} inj "$ROOTFS" 2 /bin/busybox "a${c}b" 8080 67108864 0
done
refused "a template name with a newline" "$CTRL" \
	opmgr AddTemplate ssasqta{sv} $'inj\nwarm=1' "$ROOTFS" "${WEBARGS[@]}" 8080 67108864 0
refused "a rootfs with a newline" "$CTRL" \
	opmgr AddTemplate ssasqta{sv} inj "$ROOTFS"$'\nwarm=1' "${WEBARGS[@]}" 8080 67108864 0
refused "an option key with a newline" "$CTRL" \
	opmgr AddTemplate ssasqta{sv} inj "$ROOTFS" "${WEBARGS[@]}" 8080 67108864 1 $'warm\nx' b true
refused "a 100 KiB argv element" "longer than 4096" \
	opmgr AddTemplate ssasqta{sv} inj "$ROOTFS" 2 /bin/busybox "$big" 8080 67108864 0
refused "a 100 KiB template name" "longer than 4096" \
	opmgr AddTemplate ssasqta{sv} "$big" "$ROOTFS" "${WEBARGS[@]}" 8080 67108864 0
refused "a warm template of 28 characters (its tag warm-<name> is 33)" "at most 24 characters" \
	opmgr AddTemplate ssasqta{sv} abcdefghijklmnopqrstuvwxyz01 "$ROOTFS" "${WEBARGS[@]}" 8080 67108864 1 warm b true
refused "65 arguments" "1-64 arguments" \
	opmgr AddTemplate ssasqta{sv} inj "$ROOTFS" 65 $(seq 65) 8080 67108864 0
refused "standby=1000" "standby is at most 16" \
	opmgr AddTemplate ssasqta{sv} inj "$ROOTFS" "${WEBARGS[@]}" 8080 67108864 2 warm b true standby u 1000
# user: digits only (strtoul alone took blanks and signs: " 5" and "+5:-1" passed)
for u in " 5" "+5" "5: 6" "5:-1" "4294967296:0" "5:" ""; do
	refused "user '$u'" "UID or UID:GID" \
		opmgr AddTemplate ssasqta{sv} inj "$ROOTFS" "${WEBARGS[@]}" 8080 67108864 1 user s "$u"
done
named "AddTemplate with a newline in argv: the error name" --object-path /org/warren/Warren1 \
	--method org.warren.Warren1.Manager.AddTemplate inj "$ROOTFS" "['/bin/busybox', 'x\nwarm=1']" 8080 67108864 '{}'
named "AddTemplate with a 100 KiB argument: the error name" --object-path /org/warren/Warren1 \
	--method org.warren.Warren1.Manager.AddTemplate inj "$ROOTFS" "['/bin/busybox', '$big']" 8080 67108864 '{}'

# the other methods
refused "CreateSandbox of a name with a newline" "$CTRL" opmgr CreateSandbox sa{sv} $'good\n' 0
refused "CreateSandbox with a backend holding a newline" "$CTRL" opmgr CreateSandbox sa{sv} good 1 backend s $'gvisor\nx'
refused "RemoveTemplate of a name with \\x01" "$CTRL" opmgr RemoveTemplate s $'good\x01'
refused "ForkTag of a warm- tag" "are the images of warm templates" opmgr ForkTag su warm-good 1
named "ForkTag of a warm- tag: the error name" --object-path /org/warren/Warren1 \
	--method org.warren.Warren1.Manager.ForkTag warm-good 1
refused "ForkTag of a 100 KiB tag" "longer than 4096" opmgr ForkTag su "$big" 1
refused "RemoveTag of a warm- tag that is no template's" "are the images of warm templates" opmgr RemoveTag s warm-nosuch
refused "RemoveTag of a tag with a tab" "$CTRL" opmgr RemoveTag s $'a\tb'
refused "SetupReclaim with a compressor holding a newline" "$CTRL" opmgr SetupReclaim tbsu 0 false $'lz4\n' 0
refused "SetupReclaim with a compressor path" "not a zswap compressor" opmgr SetupReclaim tbsu 0 false ../x 0
refused "root: argv with a newline too" "$CTRL" \
	mgr AddTemplate ssasqta{sv} inj "$ROOTFS" 2 /bin/busybox $'x\nwarm=1' 8080 67108864 0

# on a running sandbox: a positive control, then the attacks
id=$(opmgr CreateSandbox sa{sv} good 1 wait b true | awk '{print $2}' | tr -d '"')
expect "a sandbox of the added template runs" test "$(sbprop "$id" State)" = running
SB=(/org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox)
refused "Snapshot to a warm- tag" "are the images of warm templates" opbus call org.warren.Warren1 "${SB[@]}" Snapshot s warm-good
named "Snapshot to a warm- tag: the error name" --object-path "/org/warren/Warren1/sandbox/$id" \
	--method org.warren.Warren1.Sandbox.Snapshot warm-good
refused "Snapshot to a tag with a newline" "$CTRL" opbus call org.warren.Warren1 "${SB[@]}" Snapshot s $'t\n'
refused "BranchSandbox to a warm- tag" "are the images of warm templates" opmgr BranchSandbox ssu "$id" warm-good 1
refused "Exec with a newline in argv" "$CTRL" opbus call org.warren.Warren1 "${SB[@]}" Exec as 3 /bin/busybox echo $'a\nb'
expect "the sandbox is still running after the refused calls" test "$(sbprop "$id" State)" = running
expect "a normal Snapshot works" opbus call org.warren.Warren1 "${SB[@]}" Snapshot s t1
expect "and its tag is listed" sh -c "busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListTags | grep -q '\"t1\" \"good\"'"
expect "the sandbox runs again after its snapshot" wait_for 60 sh -c "[ \"\$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox State)\" = 's \"running\"' ]"

# an image planted under a warm template's tag that was taken from another template (t1, of
# good): a warm create must not restore it into the warm template's sandbox
cp -a "$T/images/t1" "$T/images/warm-abcdefghijklmnopqrstuvwx"
w=$(opmgr CreateSandbox sa{sv} abcdefghijklmnopqrstuvwx 1 wait b true | awk '{print $2}' | tr -d '"')
expect "a warm create with a foreign image under its tag starts cold (Image '$(sbprop "$w" Image)')" test -z "$(sbprop "$w" Image)"
expect "and says why in the log" grep -q "taken from template 'good' on 'gvisor', not from it" "$T/supervisor.log"

# the saved records: unchanged, nothing injected
expect "the saved records are unchanged by the refused calls" test "$(sha256sum "$T/state/templates/good" "$T/state/templates/abcdefghijklmnopqrstuvwx")" = "$saved"
expect "no record was written for a refused template" test ! -e "$T/state/templates/inj"
expect "the record of good holds one standby and one warm line, both 0" \
	test "$(grep -c '^standby=0$\|^warm=0$' "$T/state/templates/good")" = 2 -a "$(grep -c '^standby=\|^warm=' "$T/state/templates/good")" = 2
# records in 0.2.0's injectable form, as an old supervisor would have written them
printf 'rootfs=%s\nport=8080\nmemory=67108864\nallow_outbound=0\nidle_ms=0\nwarm=0\nstandby=0\narg=/bin/busybox\narg=x\nstandby=1000\nwarm=1\n' "$ROOTFS" >"$T/state/templates/injected"
printf 'rootfs=%s\nport=8080\nmemory=67108864\nallow_outbound=0\nidle_ms=0\nwarm=1\nstandby=0\narg=/bin/busybox\narg=httpd\n' "$ROOTFS" >"$T/state/templates/abcdefghijklmnopqrstuvwxyz01"
chown warren:warren "$T/state/templates/injected" "$T/state/templates/abcdefghijklmnopqrstuvwxyz01"

# restart the supervisor as test-supervisor-restart.sh does
kill -9 "$PID_supervisor"
wait "$PID_supervisor" 2>/dev/null || true
pids="$PID_netnsd $PID_snapshotd $PID_gateway"
start_supervisor
pids="$pids $PID_supervisor"
tmpl=$(mgr ListTemplates)
expect "after the restart good is back with its own argv" grep -q '"good" "[^"]*" 7 "/bin/busybox" "httpd" "-f" "-p" "8080" "-h" "/www" 8080 67108864' <<<"$tmpl"
expect "and the 24-character warm template" grep -q '"abcdefghijklmnopqrstuvwx"' <<<"$tmpl"
absent() { ! grep -q -- "$1" <<<"$tmpl"; }
expect "the injected 0.2.0 record is refused" absent '"injected"'
expect "the too-long warm record is refused" absent '"abcdefghijklmnopqrstuvwxyz01"'
expect "each refusal is logged" sh -c "grep -q 'Ignoring template .*injected' $T/supervisor.log && grep -q 'Ignoring template .*abcdefghijklmnopqrstuvwxyz01' $T/supervisor.log"
refused "a create of the too-long warm template (0.2.0 crashed snapshotd here)" "No template" \
	opmgr CreateSandbox sa{sv} abcdefghijklmnopqrstuvwxyz01 0
expect "netnsd, snapshotd and the gateway kept their pids through it all" alive
expect "a create of good still works after the restart" sh -c "curl -fsS --max-time 20 $(sb_url "$(create good wait)") | grep -q Hello"
