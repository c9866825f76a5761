#!/bin/bash
# What goes wrong is named: an app that exits (failed + reason + signal + 502), unknown
# templates, bad AddTemplate input, an exhausted pool (PoolExhausted, nothing leaks).
source "$(dirname "$0")/lib.sh"
POOL=2 warren_start
wait_for 10 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager PoolFree | grep -qx 'u 2'"
WEB=/var/lib/warren/templates/web/rootfs
mgr AddTemplate ssasqta{sv} -- crash "$WEB" 4 /bin/busybox sh -c "sleep 1; exit 3" 8080 67108864 0
busctl --system monitor --match "type='signal',interface='org.warren.Warren1.Sandbox',member='StateChanged'" >"$T/signals" 2>&1 &
mon=$!
sleep 0.3
id=$(create crash)
expect "crash sandbox fails" wait_for 20 sh -c "[ \"\$(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$id org.warren.Warren1.Sandbox State)\" = 's \"failed\"' ]"
expect "with the reason" test "$(sbprop "$id" Reason)" = "its app exited with status 3"
kill $mon
expect "a StateChanged signal said so" grep -q "its app exited with status 3" "$T/signals"
out=$(curl -s -w ' %{http_code}' --max-time 5 "$(sb_url "$id")")
expect "the gateway answers 502 with the reason ($out)" grep -q "exited with status 3.* 502$" <<<"$(echo $out)"
expect "its slot went back" wait_for 10 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager PoolFree | grep -qx 'u 2'"
warrenctl destroy "$id"
expect "destroyed failed sandbox is gone" wait_for 5 sh -c "! warrenctl list | grep -q $id"

err() { "$@" 2>&1 && return 1 || true; }
expect "unknown template: NoSuchTemplate" grep -q "No template 'nope'" <<<"$(err mgr CreateSandbox sa{sv} nope 0)"
expect "unknown option refused" grep -q "Unknown option" <<<"$(err mgr CreateSandbox sa{sv} web 1 bogus b true)"
expect "bad template name" grep -q "must be 1-32" <<<"$(err mgr AddTemplate ssasqta{sv} -- Bad/Name "$WEB" 1 /bin/x 80 67108864 0)"
expect "rootfs outside the templates dir" grep -q "must be an existing directory inside" <<<"$(err mgr AddTemplate ssasqta{sv} -- evil /etc 1 /bin/sh 80 67108864 0)"
expect "escaping with .." grep -q "must be an existing directory inside" <<<"$(err mgr AddTemplate ssasqta{sv} -- evil2 /var/lib/warren/templates/../../../etc 1 /bin/sh 80 67108864 0)"
expect "bad port" grep -q "Port 0" <<<"$(err mgr AddTemplate ssasqta{sv} -- p0 "$WEB" 1 /bin/x 0 67108864 0)"
expect "memory too small" grep -q "Memory limit" <<<"$(err mgr AddTemplate ssasqta{sv} -- m0 "$WEB" 1 /bin/x 80 1024 0)"
expect "empty command" grep -q "1-64 arguments" <<<"$(err mgr AddTemplate ssasqta{sv} -- c0 "$WEB" 0 80 67108864 0)"
expect "duplicate name" grep -q "exists" <<<"$(err mgr AddTemplate ssasqta{sv} -- crash "$WEB" 1 /bin/x 80 67108864 0)"

# pool of 2: two sandboxes take it; a third waits pool_timeout_ms, then PoolExhausted
a=$(create web wait)
b=$(create web wait)
t0=$(date +%s%N)
out=$(err mgr CreateSandbox sa{sv} web 1 pool_timeout_ms u 700)
t1=$(date +%s%N)
expect "third create: PoolExhausted ($out)" grep -q "PoolExhausted\|No namespace slot" <<<"$out"
expect "after waiting about 700 ms ($(((t1 - t0) / 1000000)) ms)" test $(((t1 - t0) / 1000000)) -ge 600
expect "nothing half-made is listed" test "$(warrenctl list | grep -c web)" = 2
# a create that waits gets the slot a destroy gives back
mgr CreateSandbox sa{sv} web 2 pool_timeout_ms u 20000 wait b true >"$T/queued" 2>&1 &
waiter=$!
sleep 0.5
warrenctl destroy "$a"
expect "a queued create gets the freed slot" wait "$waiter"
expect "and its sandbox answers" sh -c "curl -fsS --max-time 20 $(sb_url "$(awk '{print $2}' "$T/queued" | tr -d '"')") | grep -q Hello"

# A create whose template is removed while its claim waits for a slot (RemoveTemplate destroys
# it before anyone saw it): the slot the claim gets later is given back, not held for nobody.
mgr AddTemplate ssasqta{sv} -- gone "$WEB" 7 /bin/busybox httpd -f -p 8080 -h /www 8080 67108864 0
mgr CreateSandbox sa{sv} gone 1 pool_timeout_ms u 20000 >"$T/orphan" 2>&1 &
orphan=$!
sleep 0.5
mgr RemoveTemplate s gone
rc=0
wait "$orphan" || rc=$?
expect "the waiting create is answered: destroyed (rc $rc: $(cat "$T/orphan"))" \
	sh -c "[ $rc != 0 ] && grep -q 'destroyed' '$T/orphan'"
pool_free() { busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager PoolFree; }
warrenctl destroy "$b"
wait_for 15 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager PoolFree | grep -qx 'u 1'" || true
expect "the slot b gave back is free: the orphaned claim gave it back ($(pool_free))" \
	test "$(pool_free)" = "u 1"
expect "and a new create gets it" sh -c "curl -fsS --max-time 20 $(sb_url "$(create web wait)") | grep -q Hello"

# A claim netnsd grants after the supervisor stopped waiting for it (netnsd stalled longer than
# the create's pool_timeout_ms + 5 s): the create fails, and the slot granted late is given back
# rather than held claimed for nobody.
warrenctl destroy "$(awk '{print $2}' "$T/queued" | tr -d '"')"
wait_for 15 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager PoolFree | grep -qx 'u 1'" || true
before=$(pool_free)
kill -STOP "$PID_netnsd"
rc=0
out=$(err mgr CreateSandbox sa{sv} web 1 pool_timeout_ms u 100) || rc=$?
kill -CONT "$PID_netnsd"
expect "the create netnsd did not answer in time fails ($out)" grep -q "timed out" <<<"$out"
sleep 3
wait_for 15 sh -c "busctl --system get-property org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager PoolFree | grep -qx '$before'" || true
expect "the slot netnsd granted late was given back ($before before, $(pool_free) after)" \
	test "$(pool_free)" = "$before"
expect "and the failed create is not listed" test "$(warrenctl list | grep -c web)" = 1
