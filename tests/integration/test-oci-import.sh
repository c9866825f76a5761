#!/bin/bash
# Templates from OCI images: an image built here with umoci from a directory (static
# busybox httpd and a page; env, working directory, user and port in its config) is imported
# with `warrenctl template import`, serves its page through the gateway on gVisor and on a
# microVM, and its program runs with the image's env, cwd and user. Then hostile images: a layer
# with device nodes, set-id files, group/other-writable entries, symlinks out of the root (one
# relative, one absolute) with files written through them, symlinks to a host secret, hard links
# to host files, the agent's mount point a symlink (its directory or itself) or a FIFO. Nothing
# may reach the host or survive into the template; the unpacking runs
# without privilege (a source only root may read cannot be imported by path).
source "$(dirname "$0")/lib.sh"
command -v umoci >/dev/null && command -v skopeo >/dev/null ||
	{ echo "SKIP: umoci/skopeo not installed (scripts/setup.sh)"; exit 77; }
getent passwd warren-import >/dev/null || { echo "SKIP: no user warren-import (scripts/setup.sh)"; exit 77; }
TPL=$T/tpl
install -d -m 0755 "$TPL" "$T/import"

# ---- the image, built in the test ----------------------------------------------------------
B=$T/build
mkdir -p "$B/src/bin" "$B/src/www/sub"
cp /bin/busybox "$B/src/bin/busybox"
echo "<h1>Hello from an OCI image</h1>" >"$B/src/www/index.html"
echo "subpage" >"$B/src/www/sub/index.html"
chmod -R go-w "$B/src"
(
	cd "$B"
	umoci init --layout img
	umoci new --image img:v1
	umoci insert --image img:v1 src /
	# httpd serves "." : it answers only if it runs in the image's working directory
	umoci config --image img:v1 --config.env FOO=bar-from-image --config.env PATH=/bin \
		--config.workingdir /www --config.exposedports 8080/tcp --config.user 1000:1000 \
		--config.entrypoint /bin/busybox --config.cmd httpd --config.cmd -f \
		--config.cmd -p --config.cmd 8080 --config.cmd -h --config.cmd .
) >/dev/null
# an oci-archive of it (a tar of the layout), readable by root only
tar -C "$B/img" -cf "$B/img.tar" .
chmod 0600 "$B/img.tar"

start_bus
start_netnsd --templates-dir "$TPL"
start_snapshotd
start_gateway
daemon importd "$LIBEXEC/warren-importd" --socket "$T/importd.sock" --peer-users warren \
	--templates-dir "$TPL" --staging-dir "$T/import"
wait_for 10 test -S "$T/importd.sock" || fail "importd did not start: $(cat "$T/importd.log")"
start_supervisor --templates-dir "$TPL" --importd-socket "$T/importd.sock"

# ---- import, with progress, and the options read back ----------------------------------------
out=$(warrenctl template import hello "oci:$B/img:v1" 2>"$T/progress") ||
	fail "import of the OCI layout failed: $out $(cat "$T/progress")"
log "imported: $out"
expect "progress was reported as plain lines (stderr is not a terminal): $(tr '\n' '|' <"$T/progress")" \
	grep -q '^import hello: layers 1/1$' "$T/progress"
expect "the tree holds the image's files, root's" \
	test "$(stat -c %U "$TPL/hello/rootfs/www/index.html")" = root
expect "the microVM initramfs was built from it" test -s "$TPL/hello/vm-initramfs.cpio"
show=$(warrenctl --json template show hello)
log "template show: $show"
python3 - "$show" <<'EOF' || fail "template show does not carry the image's config"
import json, sys
t = json.loads(sys.argv[1])
assert t["argv"] == ["/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "."], t["argv"]
assert "FOO=bar-from-image" in t["env"], t["env"]
assert t["cwd"] == "/www" and t["user"] == "1000:1000" and t["port"] == 8080, t
assert t["imported"] is True and t["built"] is True
EOF
log "ok: the image's command, env, working directory, user and port became the template's"

# the oci-archive, root's 0600: read through the fd warrenctl opened, with options overriding
out=$(warrenctl template import hello2 "oci-archive:$B/img.tar:v1" --env FOO=overridden \
	--env EXTRA=1 --cwd /www/sub --memory 96 2>"$T/err") || fail "import of the oci-archive failed: $out $(cat "$T/err")"
show=$(warrenctl --json template show hello2)
python3 - "$show" <<'EOF' || fail "options did not override the image's: $show"
import json, sys
t = json.loads(sys.argv[1])
assert "FOO=overridden" in t["env"] and "FOO=bar-from-image" not in t["env"], t["env"]
assert "EXTRA=1" in t["env"] and "PATH=/bin" in t["env"], t["env"]
assert t["cwd"] == "/www/sub" and t["memory_limit"] == 96 << 20, t
EOF
log "ok: --env/--cwd/--memory override the image's"

# ---- it runs, on both backends, as the image says ----------------------------------------------
# the template's program: argv "/bin/busybox httpd ..." (strings prints argv one a line)
app_pid='for p in /proc/[0-9]*; do [ "$(strings $p/cmdline 2>/dev/null | head -2 | tr "\n" " ")" = "/bin/busybox httpd " ] && { echo ${p#/proc/}; break; }; done; true'
check_sandbox() { # check_sandbox BACKEND TEMPLATE PAGE CWD FOO
	local backend=$1 tpl=$2 page=$3 cwd=$4 foo=$5 id pid
	id=$(warrenctl create "$tpl" --wait --backend "$backend" | awk '{print $1}')
	[[ $id =~ ^[0-9a-f]{12}$ ]] || fail "$backend: no sandbox from $tpl"
	expect "$backend: the imported template serves its page through the gateway" \
		sh -c "curl -fsS --max-time 60 $(sb_url "$id") | grep -q '$page'"
	local rc=0
	pid=$(warrenctl exec "$id" -- /bin/busybox sh -c "$app_pid" 2>"$T/exec.err") || rc=$?
	[ -n "$pid" ] || fail "$backend: no httpd process inside (exec status $rc: $(tr '\n' '|' <"$T/exec.err"); ps: $(warrenctl exec "$id" -- /bin/busybox ps 2>&1 | tr '\n' '|'))"
	local env cwd uid
	# a failed read leaves the value empty (the expects below then say what was found); it
	# must not end the test through errexit without a word (busybox readlink fails silently)
	env=$(warrenctl exec "$id" -- /bin/busybox strings "/proc/$pid/environ" 2>&1) || true
	cwd=$(warrenctl exec "$id" -- /bin/busybox readlink "/proc/$pid/cwd" 2>&1) || true
	uid=$(warrenctl exec "$id" -- /bin/busybox awk '/^Uid:/ {print $2}' "/proc/$pid/status" 2>&1) || true
	expect "$backend: the program has the template's env ($(grep FOO <<<"$env"))" grep -qx "FOO=$foo" <<<"$env"
	expect "$backend: and Warren's id" grep -qx "WARREN_SANDBOX_ID=$id" <<<"$env"
	# the working directory is proved by the page: httpd serves "." (404 from "/"; hello2's
	# /www/sub serves the subpage). gVisor's /proc/PID/cwd reads back empty to an exec.
	[ -z "$cwd" ] || expect "$backend: /proc says the program runs in $cwd_want ($cwd)" test "$cwd" = "$cwd_want"
	expect "$backend: the program runs as the image's user ($uid)" test "$uid" = 1000
	if [ "$backend" = gvisor ]; then
		# the import made the agent's mount point: the agent runs first, as root, and starts
		# the program as the image's user with no capability
		local tok capeff
		tok=$(call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox AgentToken | cut -d'"' -f2)
		expect "$backend: the imported tree has the agent's mount point" test -f "$TPL/$tpl/rootfs/.warren/agent"
		expect "$backend: its agent answers through the gateway" wait_for 20 sh -c "curl -s -o /dev/null \
			-w '%{http_code}' -H 'E2b-Sandbox-Id: $id' -H 'E2b-Sandbox-Port: 49983' \
			-H 'X-Warren-Agent-Token: $tok' $GW/health | grep -qx 204"
		capeff=$(warrenctl exec "$id" -- /bin/busybox awk '/^CapEff:/ {print $2}' "/proc/$pid/status" 2>&1) || true
		expect "$backend: the program holds no capability (CapEff $capeff)" test "$capeff" = 0000000000000000
	fi
	warrenctl destroy "$id"
}
cwd_want=/www check_sandbox gvisor hello "Hello from an OCI image" /www bar-from-image
cwd_want=/www/sub check_sandbox gvisor hello2 subpage /www/sub overridden
# the same image as a microVM: its initramfs was built by the import above, and the agent (PID 1)
# starts the program as the image's user (before the agent opened the initramfs's root, 0700 from
# the kernel, that user could execute nothing and the VM never answered)
cwd_want=/www check_sandbox microvm hello "Hello from an OCI image" /www bar-from-image

# ---- hostile images ---------------------------------------------------------------------------
CANARY=$T/host-canary # a directory any user could write: a followed symlink would land here
install -d -m 0777 "$CANARY"
SECRET=$T/host-secret
echo "host-secret-$$" >"$SECRET"
chmod 0600 "$SECRET"
layer() { # layer OUT.tar KIND: a layer tar written entry by entry
	python3 - "$@" "$CANARY" "$SECRET" <<'EOF'
import io, sys, tarfile
out, kind, canary, secret = sys.argv[1:5]
t = tarfile.open(out, "w")
def entry(name, type, mode=0o644, data=None, link="", major=0, minor=0):
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode, ti.linkname, ti.devmajor, ti.devminor = type, mode, link, major, minor
    if data is not None:
        ti.size = len(data)
    t.addfile(ti, io.BytesIO(data) if data is not None else None)
if kind == "evil":
    entry("dev", tarfile.DIRTYPE, 0o755)
    entry("dev/console", tarfile.CHRTYPE, 0o666, major=5, minor=1)
    entry("dev/sda", tarfile.BLKTYPE, 0o666, major=8, minor=0)
    entry("dev/fifo", tarfile.FIFOTYPE, 0o666)
    entry("bin/suid", tarfile.REGTYPE, 0o4755, b"#!/bin/sh\nid\n")
    entry("bin/sgid", tarfile.REGTYPE, 0o2755, b"#!/bin/sh\nid\n")
    entry("ww", tarfile.DIRTYPE, 0o777)
    entry("sticky", tarfile.DIRTYPE, 0o1777)
    entry("www/gw.html", tarfile.REGTYPE, 0o666, b"group and world writable\n")
    entry("esc", tarfile.SYMTYPE, link="../../../../../../../../.." + canary)
    entry("esc/pwned-relative", tarfile.REGTYPE, 0o644, b"pwned\n")
    entry("abs", tarfile.SYMTYPE, link=canary)
    entry("abs/pwned-absolute", tarfile.REGTYPE, 0o644, b"pwned\n")
    entry("leak", tarfile.SYMTYPE, link=secret)
    entry("leak2", tarfile.SYMTYPE, link="../../../../../../../../.." + secret)
elif kind == "hardlink-inside":
    entry("etc", tarfile.DIRTYPE, 0o755)
    entry("etc/passwd", tarfile.REGTYPE, 0o644, b"image-passwd\n")
    entry("hl", tarfile.LNKTYPE, link="/etc/passwd")
elif kind == "hardlink-host":
    entry("hl", tarfile.LNKTYPE, link=secret)
# the agent's mount point (/.warren/agent) made hostile: a bind mount through a symlink would
# land where the image chose, inside the tree or, by the gofer, on the host
elif kind == "agent-dir-symlink":
    entry(".warren", tarfile.SYMTYPE, link=canary)
elif kind == "agent-symlink":
    entry(".warren", tarfile.DIRTYPE, 0o755)
    entry(".warren/agent", tarfile.SYMTYPE, link="/bin/busybox")
elif kind == "agent-fifo":
    entry(".warren", tarfile.DIRTYPE, 0o755)
    entry(".warren/agent", tarfile.FIFOTYPE, 0o666)
t.close()
EOF
}
evil_image() { # evil_image NAME KIND: the hello image plus one hostile layer
	rm -rf "$B/$1"
	cp -a "$B/img" "$B/$1"
	layer "$B/$1.tar" "$2"
	umoci raw add-layer --image "$B/$1:v1" "$B/$1.tar" >/dev/null
}
links_before=$(stat -c %h "$SECRET")

evil_image evil evil
out=$(warrenctl template import evil "oci:$B/evil:v1" 2>/dev/null) || fail "the evil image was not imported: $out"
log "evil imported: $out"
R=$TPL/evil/rootfs
expect "no device node, fifo or socket in the template" \
	test -z "$(find "$R" \( -type c -o -type b -o -type p -o -type s \) -print -quit)"
expect "no setuid or setgid file ($(find "$R" -perm /6000 | tr '\n' ' '))" \
	test -z "$(find "$R" -perm /6000 -print -quit)"
expect "nothing group- or other-writable, no sticky bit ($(find "$R" ! -type l -perm /1022 | tr '\n' ' '))" \
	test -z "$(find "$R" ! -type l -perm /1022 -print -quit)"
expect "every entry is root's" test -z "$(find "$R" ! -user root -print -quit)"
expect "the set-id files are there, without the bits" test "$(stat -c %a "$R/bin/suid")" = 755
expect "the relative escape is still a symlink, its target verbatim" \
	test "$(readlink "$R/esc")" = "../../../../../../../../..$CANARY"
expect "the absolute one too" test "$(readlink "$R/abs")" = "$CANARY"
expect "nothing was written through them on the host" test -z "$(ls -A "$CANARY")"
expect "the symlinks to the host secret stay symlinks" test -L "$R/leak" -a -L "$R/leak2"
expect "the host secret was not copied into the template" \
	test -z "$(grep -rl "host-secret-$$" "$R" 2>/dev/null)"
expect "the spawner accepts the tree: a sandbox of it serves" sh -c "
	id=\$(warrenctl create evil --wait | awk '{print \$1}') &&
	curl -fsS --max-time 30 $GW/s/\$id/ | grep -q 'Hello from an OCI image'"

evil_image hlin hardlink-inside
out=$(warrenctl template import hlin "oci:$B/hlin:v1" 2>/dev/null) || fail "hlin not imported: $out"
expect "a hard link to /etc/passwd resolves to the image's own file" \
	test "$(cat "$TPL/hlin/rootfs/hl")" = image-passwd
evil_image hlhost hardlink-host
set +e
err=$(warrenctl template import hlhost "oci:$B/hlhost:v1" 2>&1)
rc=$?
set -e
expect "a hard link to a host file is refused ($err)" test "$rc" != 0
expect "and names the link" grep -q "hl" <<<"$err"
expect "no template hlhost exists" test ! -e "$TPL/hlhost"
expect "the host file's link count is unchanged" test "$(stat -c %h "$SECRET")" = "$links_before"

# An image's own /.warren: a symlinked directory or agent gets no agent (the spawner opens the
# mount point beneath the tree with no symlink and wants a plain file), and nothing is made or
# mounted through it; a FIFO there is dropped like any other and the import makes the point.
agent_code() { # agent_code ID: what the agent's port answers through the gateway
	local tok
	tok=$(call "/org/warren/Warren1/sandbox/$1" org.warren.Warren1.Sandbox AgentToken | cut -d'"' -f2)
	curl -s -o /dev/null --max-time 20 -w '%{http_code}' -H "E2b-Sandbox-Id: $1" \
		-H 'E2b-Sandbox-Port: 49983' -H "X-Warren-Agent-Token: $tok" "$GW/health" || true
}
agent_answers() { [ "$(agent_code "$1")" = "$2" ]; }
hostile_agent() { # hostile_agent KIND WANT: WANT is the agent port's answer, 502 (none) or 204
	local id
	evil_image "$1" "$1"
	out=$(warrenctl template import "$1" "oci:$B/$1:v1" 2>/dev/null) || fail "$1 not imported: $out"
	id=$(warrenctl create "$1" --wait | awk '{print $1}')
	[[ $id =~ ^[0-9a-f]{12}$ ]] || fail "$1: no sandbox ($id)"
	expect "$1: a sandbox of it serves its page" \
		sh -c "curl -fsS --max-time 30 $GW/s/$id/ | grep -q 'Hello from an OCI image'"
	wait_for 20 agent_answers "$id" "$2" || true
	local got
	got=$(agent_code "$id")
	expect "$1: its agent port answers $2 ($got)" test "$got" = "$2"
	warrenctl destroy "$id"
}
hostile_agent agent-dir-symlink 502
expect "agent-dir-symlink: the tree's /.warren is still the image's symlink" \
	test "$(readlink "$TPL/agent-dir-symlink/rootfs/.warren")" = "$CANARY"
expect "agent-dir-symlink: nothing was made through it on the host" test -z "$(ls -A "$CANARY")"
hostile_agent agent-symlink 502
expect "agent-symlink: the tree's /.warren/agent is still the image's symlink" \
	test "$(readlink "$TPL/agent-symlink/rootfs/.warren/agent")" = /bin/busybox
expect "agent-symlink: the file it names is the image's busybox, not the agent" \
	cmp -s /bin/busybox "$TPL/agent-symlink/rootfs/bin/busybox"
hostile_agent agent-fifo 204
expect "agent-fifo: the FIFO became the import's plain mount point" \
	test -f "$TPL/agent-fifo/rootfs/.warren/agent" -a ! -p "$TPL/agent-fifo/rootfs/.warren/agent"

# ---- the unpacking has no privilege ------------------------------------------------------------
# skopeo wrote the shared blob store as the import user, not as root
expect "skopeo ran as warren-import (the blob store's files are its own)" \
	test -z "$(find "$T/import/store" ! -user warren-import -print -quit)" -a \
	-n "$(find "$T/import/store/blobs" -type f -print -quit)"
# a layout directory handed over as a directory (--no-stream) is read by the unpacker with its
# own rights: umoci wrote it 0600 as root, so it fails. Streamed by warrenctl (the caller's
# rights), the same layout was imported above.
set +e
err=$(warrenctl template import private "oci:$B/img:v1" --no-stream 2>&1)
rc=$?
set -e
expect "a layout only root may read is not read by the unpacker: it is not root ($err)" test "$rc" != 0
expect "the unpacker was refused by the file's mode" grep -q 'permission denied' <<<"$err"
expect "no template private exists" test ! -e "$TPL/private"
expect "nothing is left in the staging directory" \
	test -z "$(find "$T/import" -mindepth 1 -maxdepth 1 -name 'job-*' -print -quit)"

# ---- removal, names, busy --------------------------------------------------------------------
# A streamed import refused for its name ends at once: warrenctl drops the sent message's copy of
# the tar pipe and stops tar (it used to wait on tar blocked on a full pipe for ever).
set +e
err=$(timeout 60 warrenctl template import 'Bad/Name' "oci:$B/img:v1" 2>&1)
rc=$?
set -e
expect "the refused streamed import ended by itself, not by the 60 s timeout" test "$rc" != 124
expect "a bad template name is refused before any work ($err)" test "$rc" != 0
in_user_terms() { ! grep -q 'org\.warren\|/org/' <<<"$1"; }
expect "the message is in the user's terms" in_user_terms "$err"
warrenctl template rm hello2 hlin
expect "template rm removes an imported template's tree" \
	wait_for 20 test ! -e "$TPL/hello2" -a ! -e "$TPL/hlin"
expect "and its record" sh -c "! warrenctl template show hello2 2>/dev/null"
expect "the other imported templates stay" test -d "$TPL/hello/rootfs"
log "PASS"
