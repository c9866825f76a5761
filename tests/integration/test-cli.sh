#!/bin/bash
# warrenctl follows podman's and machinectl's conventions: --help for every command
# and --version; options after the command parsed and unknown ones refused (status 2); sandbox
# ids by unique prefix (an ambiguous or unknown prefix refused, naming no D-Bus object or
# method); list/ps with backend, age, state, reason and memory in --json and --format; inspect;
# template add|list|show|rm with --json parsed by python3.
source "$(dirname "$0")/lib.sh"
warren_start
J() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }

# --version, --help everywhere, unknown options and commands refused
expect "--version prints the version" sh -c "warrenctl --version | grep -qx 'warrenctl $VERSION'"
for c in status list ps inspect create destroy rm exec cp freeze thaw snapshot fork branch tags \
	rmtag reclaim templates rmtemplate "template list" "template show" "template rm" \
	"template add" "template import"; do
	# shellcheck disable=SC2086 # "template add" is two words
	out=$(warrenctl $c --help) || fail "$c --help failed"
	grep -q "^Usage: warrenctl .*${c#template }" <<<"$out" || fail "$c --help: $out"
done
log "ok: every command answers --help"
no() { # no DESCRIPTION CMD...: the command must fail with status 2
	local rc=0
	"${@:2}" >/dev/null 2>"$T/err" || rc=$?
	expect "$1 (status $rc: $(head -1 "$T/err"))" test "$rc" = 2
}
no "an unknown option after the command is refused" warrenctl list --bogus
no "an unknown option of create is refused" warrenctl create web --bogus
no "an unknown command is refused" warrenctl frobnicate
no "a missing argument is refused" warrenctl inspect
no "too many arguments are refused" warrenctl create web extra

# sandboxes: create, prefixes, list/ps --json/--format, inspect
a=$(warrenctl create web --wait | awk '{print $1}')
b=$(warrenctl --json create web | J 'print(d["id"])')
[[ $a =~ ^[0-9a-f]{12}$ && $b =~ ^[0-9a-f]{12}$ ]] || fail "no ids: $a $b"
wait_for 30 has_state "$b" running || fail "$b did not run"
list=$(warrenctl list --json)
log "list --json: $list"
J "
s = {x['id']: x for x in d}
assert set(s) >= {'$a', '$b'}, s
for x in s.values():
    assert x['backend'] == 'gvisor' and x['state'] == 'running' and x['template'] == 'web', x
    assert x['memory_bytes'] > 0 and x['age_seconds'] >= 0 and 'reason' in x, x
" <<<"$list" || fail "list --json lacks backend, state, age, memory or reason"
log "ok: list --json carries backend, state, reason, age and memory"
expect "ps --format prints the asked fields" sh -c \
	"warrenctl ps --format '{{.ID}} {{.Backend}} {{.State}}' | grep -qx '$a gvisor running'"
no "an unknown --format field is refused" warrenctl ps --format '{{.Nope}}'
expect "ps --quiet prints ids only" sh -c "warrenctl ps --quiet | grep -qx '$a'"
# a prefix that names one sandbox works; an ambiguous one is refused
p=${a:0:8}
[ "${b:0:8}" != "$p" ] || fail "the two ids share 8 characters"
expect "inspect by a unique prefix gives that sandbox as JSON" sh -c \
	"warrenctl inspect $p | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"Id\"] == \"$a\" and d[\"State\"] == \"running\" and \"Timings\" in d'"
# the longest prefix a and b share (often empty: the empty prefix matches every sandbox)
common=""
for ((i = 0; i < 12; i++)); do [ "${a:i:1}" = "${b:i:1}" ] && common+=${a:i:1} || break; done
set +e
err=$(warrenctl inspect "$common" 2>&1)
rc=$?
set -e
expect "an ambiguous prefix ('$common') is refused ($err)" test "$rc" != 0
expect "saying how many it matches" grep -q 'matches 2' <<<"$err"
set +e
err=$(warrenctl freeze ffffffffffff 2>&1)
rc=$?
set -e
expect "an unknown id is refused ($err)" test "$rc" != 0
expect "saying so in the user's terms" grep -q 'no sandbox ffffffffffff' <<<"$err"
no_bus_words() { ! grep -q '/org/\|org\.warren\|Freeze' <<<"$1"; }
expect "naming no D-Bus object, interface or method" no_bus_words "$err"
expect "exec by prefix" sh -c "warrenctl exec ${a:0:6} -- /bin/busybox echo hi | grep -qx hi"
expect "freeze by prefix" warrenctl freeze "${a:0:7}"
wait_for 10 has_state "$a" frozen || fail "$a not frozen"
expect "thaw by prefix" warrenctl thaw "${a:0:7}"
expect "destroy by prefix" warrenctl destroy "${b:0:9}"
wait_for 20 sh -c "! warrenctl ps --quiet | grep -q $b" || fail "$b still listed"

# templates: add with env/cwd/user, list, show (read back), rm
W=/var/lib/warren/templates/web/rootfs
expect "template add" warrenctl template add "cli-t$K" "$W" --port 8080 --memory 80 \
	--env GREETING=hi --cwd /www --user 1000:1000 --idle-ms 5000 -- /bin/busybox httpd -f -p 8080 -h .
at_exit "warrenctl template rm cli-t$K >/dev/null 2>&1"
expect "template list --json has it" sh -c "warrenctl template list --json | python3 -c '
import json,sys
t = {x[\"name\"]: x for x in json.load(sys.stdin)}[\"cli-t$K\"]
assert t[\"port\"] == 8080 and t[\"memory_limit\"] == 80 << 20 and t[\"argv\"][0] == \"/bin/busybox\", t'"
expect "template show --json reads every option back" sh -c "warrenctl --json template show cli-t$K | python3 -c '
import json,sys
t = json.load(sys.stdin)
assert t[\"env\"] == [\"GREETING=hi\"] and t[\"cwd\"] == \"/www\" and t[\"user\"] == \"1000:1000\", t
assert t[\"idle_ms\"] == 5000 and t[\"imported\"] is False and t[\"builtin\"] is False, t'"
no "template add without --port is refused" warrenctl template add x "$W" -- /bin/true
set +e
err=$(warrenctl template add "cli-u$K" "$W" --port 8080 --env 'NOEQUALS' -- /bin/true 2>&1)
set -e
expect "a bad env entry is refused by Warren ($err)" grep -q "KEY=value" <<<"$err"
expect "a template with cwd and user runs" sh -c "
	id=\$(warrenctl create cli-t$K --wait | awk '{print \$1}') &&
	curl -fsS --max-time 30 $GW/s/\$id/ | grep -q Hello &&
	warrenctl destroy \$id"
expect "template rm" warrenctl template rm "cli-t$K"
expect "template show of a removed template fails" sh -c "! warrenctl template show cli-t$K 2>/dev/null"
expect "status --json parses" sh -c "warrenctl --json status | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"version\"] == \"$VERSION\"'"
expect "tags --json parses" sh -c "warrenctl tags --json | python3 -c 'import json,sys; assert isinstance(json.load(sys.stdin), list)'"
log "PASS"
