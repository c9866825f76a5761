#!/bin/bash
# Attack: a second member of group warren (the bus policy lets every member call the API) goes
# after another user's sandbox: Destroy, Exec, ExecWithOptions, Freeze, Thaw, Snapshot into a
# tag of its own, BranchSandbox, OpenLogs, AgentToken, SetTimeout, and ForkTag/RemoveTag of the
# other's tag.
# Each is refused AccessDenied and changes nothing: the sandbox still runs and answers, no tag
# appears, the other's tag stays. `nobody` is stopped by the bus
# policy. Positive controls: the creator and root do each of these; the second user does them
# on its own sandbox.
source "$(dirname "$0")/lib.sh"
warren_start
for u in warren-test-op warren-test-op2; do
	getent passwd "$u" >/dev/null ||
		useradd --system --no-create-home --shell /usr/sbin/nologin -G warren "$u"
done
A=warren-test-op B=warren-test-op2
as() { setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups "${@:2}"; }
sbcall() { # sbcall USER ID METHOD [SIGNATURE ARGS...]: a Sandbox method as USER
	local u=$1 id=$2
	shift 2
	as "$u" busctl --system call org.warren.Warren1 "/org/warren/Warren1/sandbox/$id" \
		org.warren.Warren1.Sandbox "$@" 2>&1
}
create_as() {
	as "$1" busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager \
		CreateSandbox sa{sv} web 1 wait b true | awk '{print $2}' | tr -d '"'
}
refused() { # refused WHAT OUTPUT
	grep -q "AccessDenied\|Access denied\|not yours" <<<"$2" ||
		fail "$1 was not refused: $2"
	log "ok: $1 refused ($2)"
}
answers() { curl -fsS --max-time 10 "$(sb_url "$1")" | grep -q Hello; }

a=$(create_as $A)
[[ $a =~ ^[0-9a-f]{12}$ ]] || fail "$A could not create a sandbox ($a)"
b=$(create_as $B)
[[ $b =~ ^[0-9a-f]{12}$ ]] || fail "$B could not create a sandbox ($b)"

# --- B against A's sandbox
refused "$B: Exec in $A's sandbox" "$(sbcall $B "$a" Exec as 3 /bin/busybox touch /tmp/owned || true)"
refused "$B: ExecWithOptions" "$(sbcall $B "$a" ExecWithOptions asa{sv} 1 true 0 || true)"
refused "$B: Freeze" "$(sbcall $B "$a" Freeze || true)"
expect "$A's sandbox is still running" test "$(sbprop "$a" State)" = running
refused "$B: Snapshot into a tag of its own" "$(sbcall $B "$a" Snapshot s stolen || true)"
refused "$B: BranchSandbox" "$(as $B busctl --system call org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager BranchSandbox ssu "$a" stolen2 1 2>&1 || true)"
no_stolen_tag() { ! mgr ListTags | grep -q stolen; }
expect "no tag was made" no_stolen_tag
refused "$B: OpenLogs" "$(sbcall $B "$a" OpenLogs a{sv} 0 || true)"
refused "$B: AgentToken" "$(sbcall $B "$a" AgentToken || true)"
refused "$B: SetTimeout (a 1 s lifetime)" "$(sbcall $B "$a" SetTimeout ts 1 kill || true)"
expect "and $A's sandbox has no lifetime" test "$(sbprop "$a" EndUSec)" = 0
refused "$B: Destroy" "$(sbcall $B "$a" Destroy || true)"
expect "$A's sandbox is still running after all that" test "$(sbprop "$a" State)" = running
expect "and answers" answers "$a"
out=$(warrenctl exec "$a" -- /bin/busybox ls /tmp 2>&1 || true)
if grep -q owned <<<"$out"; then fail "a command of $B's ran in it ($out)"; fi
log "ok: no command of $B's ran in it"
# the bus policy keeps out users outside group warren before the supervisor is asked
out=$(sbcall nobody "$a" Destroy || true)
expect "nobody cannot Destroy ($out)" grep -qi "denied\|rejected" <<<"$out"

# --- positive controls: the creator, root, and B on its own sandbox
out=$(as $A warrenctl exec "$a" -- /bin/busybox echo mine 2>&1 || true)
expect "$A runs a command in its sandbox ($out)" grep -qx "mine" <<<"$out"
expect "$A freezes it" sbcall $A "$a" Freeze
expect "$A thaws it" sbcall $A "$a" Thaw
out=$(warrenctl exec "$a" -- /bin/busybox echo root 2>&1 || true)
expect "root runs a command in $A's sandbox ($out)" grep -qx "root" <<<"$out"
expect "$A snapshots it" sbcall $A "$a" Snapshot s owned-$K
tag_exists() { mgr ListTags | grep -q "owned-$K"; }
expect "its tag exists" tag_exists
opmgr() { as "$1" busctl --system call org.warren.Warren1 /org/warren/Warren1 \
	org.warren.Warren1.Manager "${@:2}" 2>&1; }
refused "$B: ForkTag of $A's tag" "$(opmgr $B ForkTag su "owned-$K" 1 || true)"
refused "$B: RemoveTag of $A's tag" "$(opmgr $B RemoveTag s "owned-$K" || true)"
expect "the tag is still there" tag_exists
kid=$(opmgr $A ForkTag su "owned-$K" 1 | grep -o '"[0-9a-f]\{12\}"' | tr -d '"')
expect "$A forks its own tag ($kid)" wait_for 30 answers "$kid"
expect "$A destroys the child it forked" sbcall $A "$kid" Destroy
expect "$A removes its own tag" opmgr $A RemoveTag s "owned-$K"
own_token() { sbcall $B "$b" AgentToken | grep -qE '"[0-9a-f]{64}"'; }
expect "$B reads its own sandbox's agent token" own_token
expect "$B sets its own sandbox's lifetime" sbcall $B "$b" SetTimeout ts 600 pause
expect "$A sets its sandbox's lifetime" sbcall $A "$a" SetTimeout ts 600 kill
expect "$A clears it" sbcall $A "$a" SetTimeout ts 0 ""
expect "its EndUSec is 0 again" test "$(sbprop "$a" EndUSec)" = 0
expect "$B destroys its own sandbox" sbcall $B "$b" Destroy
expect "$A's sandbox answers after its snapshot" wait_for 20 answers "$a"
expect "$A destroys its sandbox" sbcall $A "$a" Destroy
log "passed"
