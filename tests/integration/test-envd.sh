#!/bin/bash
# E2B's envd API, served by warren-agent inside the sandbox, reached through the gateway by E2B's
# routing headers (E2b-Sandbox-Id, E2b-Sandbox-Port: 49983, AGENT_PROTO_ENVD_PORT in
# common/agent-protocol.h), on both backends (gVisor, where the
# agent is the container's first process, bind-mounted read-only by the spawner; and a microVM,
# where it is PID 1 of the guest). Connect JSON bodies and connect+json envelopes are built and
# parsed here (tests/helpers/envd-client.py). What must hold:
#   - processes: stdout, stderr and the exit code of a command arrive as its stream's events;
#     stdin reaches a process (SendInput) and CloseStdin ends it; SendSignal kills a process (its
#     end event says so) and List shows it before and not after; a PTY process sees its size and
#     a resize;
#   - files: a 100 MiB upload (multipart, streamed) lands whole (sha256 inside the sandbox), the
#     download gives the same bytes; Stat, MakeDir, ListDir (depth), Move, Remove do what they say;
#   - watch: WatchDir streams a file created in the watched directory; CreateWatcher queues it;
#   - the access token set by /init: a request without it or with a wrong one gets 401 and does
#     nothing (a canary file stays), the same request with it works;
#   - the gateway: only the template's port and 49983 are reachable by header (another port gets
#     403), a malformed header pair gets 400, and routing by host name still reaches the
#     template's program;
#   - the template's program still serves on its port, and the sandbox stays running.
source "$(dirname "$0")/lib.sh"
CLIENT=(python3 "$SOURCE/tests/helpers/envd-client.py")

# A private templates directory: the web rootfs, and its microVM initramfs made with the agent of
# this build (the shared one carries whichever agent built it).
TPL=$T/templates
install -d -m 0755 "$TPL/web"
cp -a /var/lib/warren/templates/web/rootfs "$TPL/web/"
# the agent's mount point, as warren-template-build makes it (a tree built before it has none)
install -d -m 0755 "$TPL/web/rootfs/.warren"
install -m 0755 /dev/null "$TPL/web/rootfs/.warren/agent"
WARREN_AGENT=$LIBEXEC/warren-agent warren-vm-image "$TPL/web" --force >"$T/vm-image.log" 2>&1 ||
	fail "warren-vm-image: $(tail -5 "$T/vm-image.log")"
start_bus
start_netnsd --templates-dir "$TPL"
start_snapshotd
start_gateway
start_supervisor --templates-dir "$TPL"
# the web template with room for a 100 MiB file in its memory-backed filesystem
busctl --system -- call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager AddTemplate ssasqta{sv} big "$TPL/web/rootfs" 7 /bin/busybox httpd -f -p 8080 -h /www \
	8080 $((512 << 20)) 0 >/dev/null || fail "AddTemplate big"

head -c $((100 << 20)) /dev/urandom >"$T/big.bin"
SUM=$(sha256sum <"$T/big.bin" | cut -d' ' -f1)
B64() { printf '%s' "$1" | base64 -w0; }
# stdout_of / stderr_of: the decoded output of an envd-client `run` (its data events in order)
stream_of() { python3 -c '
import sys, base64
sys.stdout.write(b"".join(base64.b64decode(l.split()[1]) for l in sys.stdin if l.startswith(sys.argv[1] + " ")).decode(errors="replace"))' "$1"; }
stdout_of() { stream_of stdout; }
lacks() { ! grep -qF -- "$1" <<<"$2"; } # lacks STRING TEXT
stderr_of() { stream_of stderr; }

check_backend() {
	local backend=$1 id out
	BG=()
	out=$(mgr CreateSandbox sa{sv} big 3 wait b true backend s "$backend" start_timeout_ms u 90000 2>&1) ||
		fail "$backend: CreateSandbox: $out"
	id=$(awk '{print $2}' <<<"$out" | tr -d '"')
	log "$backend sandbox $id"
	# root created it, so its agent needs its agent token (the E2B control plane's need none)
	local tok
	tok=$(call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox AgentToken | cut -d'"' -f2)
	local H=(-H "E2b-Sandbox-Id: $id" -H "E2b-Sandbox-Port: 49983" -H "X-Warren-Agent-Token: $tok")
	local CH=(--header "E2b-Sandbox-Id: $id" --header "E2b-Sandbox-Port: 49983" --header "X-Warren-Agent-Token: $tok")
	envd() { "${CLIENT[@]}" "${H[@]}" "$@"; }

	# the agent answers (the probe may beat its listen by a little on a cold microVM)
	wait_for 30 sh -c "curl -s -o /dev/null -w '%{http_code}' ${CH[*]@Q} $GW/health | grep -qx 204" ||
		fail "$backend: /health through the gateway: $(curl -s -i "${CH[@]}" "$GW/health")"
	log "ok: $backend: /health is 204 through the gateway by header"
	expect "$backend: the template's program still answers on its port, by host name" \
		sh -c "curl -fsS --max-time 10 $(sb_url "$id") | grep -q Warren"
	expect "$backend: and by header with its own port" sh -c "curl -fsS --max-time 10 \
		-H 'E2b-Sandbox-Id: $id' -H 'E2b-Sandbox-Port: 8080' $GW/ | grep -q Warren"
	expect "$backend: another port is refused by the gateway (403)" test "$(curl -s -o /dev/null \
		-w '%{http_code}' -H "E2b-Sandbox-Id: $id" -H 'E2b-Sandbox-Port: 22' "$GW/")" = 403
	expect "$backend: an id without a port is refused (400)" test "$(curl -s -o /dev/null \
		-w '%{http_code}' -H "E2b-Sandbox-Id: $id" "$GW/health")" = 400

	# --- processes
	out=$(envd "$GW" run /bin/busybox sh -c 'echo out; echo err >&2; exit 3')
	log "$backend: run: $(tr '\n' ' ' <<<"$out")"
	expect "$backend: a command's stream starts with its pid" grep -qE '^pid [0-9]+$' <<<"$out"
	expect "$backend: stdout arrives as a data event" grep -qx "stdout $(B64 $'out\n')" <<<"$out"
	expect "$backend: stderr arrives as a data event" grep -qx "stderr $(B64 $'err\n')" <<<"$out"
	expect "$backend: the end event carries exit code 3" grep -qx 'exit 3' <<<"$out"
	out=$(envd "$GW" unary process.Process/Start '{"process":{"cmd":"/bin/busybox","args":["true"]}}')
	expect "$backend: a stream RPC refuses plain JSON (415)" test "$(head -1 <<<"$out")" = 415
	out=$(envd "$GW" stream process.Process/Start '{"process":{"cmd":"/bin/busybox","args":["sh","-c","echo $A:$(pwd)"],"envs":{"A":"b"},"cwd":"/www"}}')
	expect "$backend: a process gets its env vars and cwd ($out)" grep -qF "\"stdout\":\"$(B64 $'b:/www\n')\"" <<<"$out"

	# stdin: a cat with its stdin open, fed and then closed
	envd "$GW" stream process.Process/Start \
		'{"process":{"cmd":"/bin/busybox","args":["cat"]},"stdin":true,"tag":"cat1"}' >"$T/cat.out" &
	BG+=($!)
	wait_for 20 grep -q '"start"' "$T/cat.out" || fail "$backend: cat did not start"
	out=$(envd "$GW" unary process.Process/SendInput \
		"{\"process\":{\"tag\":\"cat1\"},\"input\":{\"stdin\":\"$(B64 'hello stdin')\"}}")
	expect "$backend: SendInput is accepted ($out)" test "$(head -1 <<<"$out")" = 200
	out=$(envd "$GW" unary process.Process/CloseStdin '{"process":{"tag":"cat1"}}')
	expect "$backend: CloseStdin is accepted ($out)" test "$(head -1 <<<"$out")" = 200
	wait_for 20 grep -q '^end' "$T/cat.out" || fail "$backend: cat did not end: $(cat "$T/cat.out")"
	expect "$backend: the input came back on stdout" grep -qF "\"stdout\":\"$(B64 'hello stdin')\"" "$T/cat.out"
	expect "$backend: cat ended with 0 once stdin closed" grep -qF '"exitCode":0' "$T/cat.out" ||
		grep -qF '"exited":true' "$T/cat.out"

	# kill: a sleeper, listed, signalled, gone
	envd "$GW" stream process.Process/Start \
		'{"process":{"cmd":"/bin/busybox","args":["sleep","1000"]},"tag":"sleeper"}' >"$T/sleep.out" &
	BG+=($!)
	wait_for 20 grep -q '"start"' "$T/sleep.out" || fail "$backend: sleep did not start"
	local spid
	spid=$(grep -o '"pid":[0-9]*' "$T/sleep.out" | head -1 | cut -d: -f2)
	out=$(envd "$GW" unary process.Process/List '{}')
	expect "$backend: List shows the sleeper with its pid and tag" python3 -c '
import json, sys
l = json.loads(sys.argv[1].split("\n", 1)[1])["processes"]
assert any(p["pid"] == int(sys.argv[2]) and p.get("tag") == "sleeper" and p["config"]["args"] == ["sleep", "1000"] for p in l), l' "$out" "$spid"
	out=$(envd "$GW" unary process.Process/SendSignal '{"process":{"pid":'"$spid"'},"signal":"SIGNAL_SIGKILL"}')
	expect "$backend: SendSignal is accepted ($out)" test "$(head -1 <<<"$out")" = 200
	wait_for 20 grep -q '^end' "$T/sleep.out" || fail "$backend: the sleeper did not end"
	expect "$backend: its end says it was killed" grep -qF '"status":"signal: killed"' "$T/sleep.out"
	out=$(envd "$GW" unary process.Process/List '{}')
	expect "$backend: List no longer shows it" lacks "\"pid\":$spid," "$out"
	out=$(envd "$GW" unary process.Process/SendSignal '{"process":{"pid":'"$spid"'},"signal":"SIGNAL_SIGKILL"}')
	expect "$backend: signalling a process that is gone is not_found" grep -q not_found <<<"$out"

	# PTY: its size, then a resize while it runs (it waits for the resize, up to 60 s: a fixed
	# sleep could end before a loaded machine sent the Update)
	envd "$GW" stream process.Process/Start '{"process":{"cmd":"/bin/busybox","args":["sh","-c","stty size; i=0; while [ \"$(stty size)\" = \"30 100\" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; stty size"]},"pty":{"size":{"cols":100,"rows":30}},"tag":"tty1"}' >"$T/pty.out" &
	BG+=($!)
	wait_for 20 grep -q '"start"' "$T/pty.out" || fail "$backend: pty process did not start"
	out=$(envd "$GW" unary process.Process/Update '{"process":{"tag":"tty1"},"pty":{"size":{"cols":120,"rows":40}}}')
	expect "$backend: Update (resize) is accepted ($out)" test "$(head -1 <<<"$out")" = 200
	wait_for 20 grep -q '^end' "$T/pty.out" || fail "$backend: pty process did not end"
	local pty
	pty=$(grep -o '"pty":"[^"]*"' "$T/pty.out" | cut -d'"' -f4 | while read -r b; do base64 -d <<<"$b"; done | tr -d '\r')
	expect "$backend: the PTY had 30 rows, 100 columns ($pty)" grep -qx '30 100' <<<"$pty"
	expect "$backend: and 40x120 after the resize" grep -qx '40 120' <<<"$pty"

	# --- files: 100 MiB up and down, checked inside the sandbox too
	out=$(curl -sS --max-time 300 "${CH[@]}" -F "file=@$T/big.bin" "$GW/files?path=/tmp/up/big.bin&username=root")
	expect "$backend: the upload answers the entry ($out)" grep -qF '"path":"/tmp/up/big.bin"' <<<"$out"
	out=$(envd "$GW" run /bin/busybox sha256sum /tmp/up/big.bin)
	expect "$backend: inside, the uploaded file has the sent sha256" \
		grep -qx "stdout $(B64 "$SUM  /tmp/up/big.bin"$'\n')" <<<"$out"
	local dsum
	dsum=$(curl -sS --max-time 300 "${CH[@]}" "$GW/files?path=/tmp/up/big.bin" | sha256sum | cut -d' ' -f1)
	expect "$backend: the download has the same sha256" test "$dsum" = "$SUM"
	expect "$backend: a missing file is 404" test "$(curl -s -o /dev/null -w '%{http_code}' \
		"${CH[@]}" "$GW/files?path=/nonexistent")" = 404

	out=$(envd "$GW" unary filesystem.Filesystem/MakeDir '{"path":"/tmp/d1/d2"}')
	expect "$backend: MakeDir makes a directory ($out)" grep -qF '"type":"FILE_TYPE_DIRECTORY"' <<<"$out"
	out=$(envd "$GW" unary filesystem.Filesystem/MakeDir '{"path":"/tmp/d1/d2"}')
	expect "$backend: again: already_exists" grep -qF already_exists <<<"$out"
	out=$(envd "$GW" unary filesystem.Filesystem/Move '{"source":"/tmp/up/big.bin","destination":"/tmp/d1/d2/moved.bin"}')
	expect "$backend: Move answers the new entry" grep -qF '"path":"/tmp/d1/d2/moved.bin"' <<<"$out"
	out=$(envd "$GW" unary filesystem.Filesystem/Stat '{"path":"/tmp/d1/d2/moved.bin"}')
	expect "$backend: Stat gives its size" grep -qF "\"size\":\"$((100 << 20))\"" <<<"$out"
	out=$(envd "$GW" unary filesystem.Filesystem/ListDir '{"path":"/tmp/d1","depth":1}')
	expect "$backend: ListDir depth 1 shows d2" grep -qF '"path":"/tmp/d1/d2"' <<<"$out"
	expect "$backend: but not what is in it" lacks moved.bin "$out"
	out=$(envd "$GW" unary filesystem.Filesystem/ListDir '{"path":"/tmp/d1","depth":2}')
	expect "$backend: ListDir depth 2 reaches the file" grep -q moved.bin <<<"$out"
	out=$(envd "$GW" unary filesystem.Filesystem/Remove '{"path":"/tmp/d1"}')
	expect "$backend: Remove is accepted" test "$(head -1 <<<"$out")" = 200
	out=$(envd "$GW" unary filesystem.Filesystem/Stat '{"path":"/tmp/d1/d2/moved.bin"}')
	expect "$backend: and the tree is gone (not_found)" grep -qF not_found <<<"$out"

	# --- watch
	envd "$GW" unary filesystem.Filesystem/MakeDir '{"path":"/tmp/w"}' >/dev/null
	out=$(envd "$GW" unary filesystem.Filesystem/CreateWatcher '{"path":"/tmp/w"}')
	local wid
	wid=$(grep -o '"watcherId":"[0-9a-f]*"' <<<"$out" | cut -d'"' -f4)
	expect "$backend: CreateWatcher gives an id ($out)" test -n "$wid"
	envd "$GW" stream filesystem.Filesystem/WatchDir '{"path":"/tmp/w"}' >"$T/watch.out" &
	BG+=($!)
	wait_for 20 grep -q '"start"' "$T/watch.out" || fail "$backend: WatchDir did not start"
	envd "$GW" run /bin/busybox sh -c 'echo x > /tmp/w/new.txt' >/dev/null
	wait_for 20 grep -q 'new.txt' "$T/watch.out" || fail "$backend: no watch event: $(cat "$T/watch.out")"
	expect "$backend: WatchDir streams the creation" grep -qF '{"filesystem":{"name":"new.txt","type":"EVENT_TYPE_CREATE"}}' "$T/watch.out"
	out=$(envd "$GW" unary filesystem.Filesystem/GetWatcherEvents "{\"watcherId\":\"$wid\"}")
	expect "$backend: GetWatcherEvents has it too" grep -qF '"name":"new.txt","type":"EVENT_TYPE_CREATE"' <<<"$out"
	out=$(envd "$GW" unary filesystem.Filesystem/RemoveWatcher "{\"watcherId\":\"$wid\"}")
	expect "$backend: RemoveWatcher" test "$(head -1 <<<"$out")" = 200

	# --- the access token
	out=$(curl -s -o /dev/null -w '%{http_code}' "${CH[@]}" -H 'Content-Type: application/json' \
		-d '{"accessToken":"tok-'"$id"'","envVars":{"FOO":"bar"}}' "$GW/init")
	expect "$backend: /init sets the token (204)" test "$out" = 204
	out=$(curl -s -o /dev/null -w '%{http_code}' "${CH[@]}" -H 'Content-Type: application/json' \
		-d '{"path":"/tmp/canary"}' "$GW/filesystem.Filesystem/MakeDir")
	expect "$backend: without the token: 401" test "$out" = 401
	out=$(curl -s -o /dev/null -w '%{http_code}' "${CH[@]}" -H 'X-Access-Token: wrong' \
		-H 'Content-Type: application/json' -d '{"path":"/tmp/canary"}' "$GW/filesystem.Filesystem/MakeDir")
	expect "$backend: with a wrong token: 401" test "$out" = 401
	expect "$backend: an upload without the token: 401" test "$(curl -s -o /dev/null -w '%{http_code}' \
		"${CH[@]}" -F "file=@/etc/hostname" "$GW/files?path=/tmp/canary2")" = 401
	expect "$backend: /health needs no token" test "$(curl -s -o /dev/null -w '%{http_code}' "${CH[@]}" "$GW/health")" = 204
	out=$("${CLIENT[@]}" "${H[@]}" -H "X-Access-Token: tok-$id" "$GW" run /bin/busybox sh -c \
		'ls -d /tmp/canary /tmp/canary2; echo "FOO=$FOO"')
	expect "$backend: with the token: a command runs and sees /init's variable" \
		test "$(stdout_of <<<"$out")" = "FOO=bar"
	expect "$backend: and the refused requests did nothing (no canary dir, no file)" \
		test "$(stderr_of <<<"$out" | grep -c 'No such file or directory')" = 2
	expect "$backend: the same MakeDir with the token creates the directory" test "$(curl -s -o /dev/null \
		-w '%{http_code}' "${CH[@]}" -H "X-Access-Token: tok-$id" -H 'Content-Type: application/json' \
		-d '{"path":"/tmp/canary"}' "$GW/filesystem.Filesystem/MakeDir")" = 200
	expect "$backend: /envs with the token shows /init's variables" sh -c "curl -fsS ${CH[*]@Q} \
		-H 'X-Access-Token: tok-$id' $GW/envs | grep -qF '\"FOO\":\"bar\"'"

	if [ "$backend" = gvisor ]; then
		# the agent is the sandbox's own first process, but its binary is the host's, read-only
		local before after
		before=$(sha256sum <"$LIBEXEC/warren-agent")
		out=$("${CLIENT[@]}" "${H[@]}" -H "X-Access-Token: tok-$id" "$GW" run /bin/busybox sh -c \
			'if echo x >> /.warren/agent; then echo wrote; else echo refused; fi; echo y > /tmp/ok && echo tmp-ok')
		expect "$backend: the sandbox cannot write the agent's binary, but can write /tmp" \
			test "$(stdout_of <<<"$out")" = $'refused\ntmp-ok'
		after=$(sha256sum <"$LIBEXEC/warren-agent")
		expect "$backend: the host's agent binary is unchanged" test "$before" = "$after"
		expect "$backend: the agent is the container's first process" sh -c "warrenctl exec $id -- \
			/bin/busybox cat /proc/1/cmdline | tr '\\0' ' ' | grep -q '^/.warren/agent -- /bin/busybox httpd'"
	fi
	expect "$backend: the sandbox is still running" test "$(sbprop "$id" State)" = running
	# the stream clients still open (the watch) end with the sandbox: stop them first (only
	# them: the daemons are this shell's background jobs too)
	kill "${BG[@]}" 2>/dev/null || true
	wait "${BG[@]}" 2>/dev/null || true
	call "/org/warren/Warren1/sandbox/$id" org.warren.Warren1.Sandbox Destroy >/dev/null
}

# both backends (ENVD_BACKENDS narrows it, to rerun one by hand)
for backend in ${ENVD_BACKENDS:-gvisor microvm}; do
	if [ "$backend" = microvm ] && ! grep -q '"microvm"' <<<"$(busctl --system get-property \
		org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager Backends)"; then
		fail "no microVM backend here"
	fi
	check_backend "$backend"
done
log "PASS"
