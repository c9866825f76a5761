#!/bin/bash
# Attacks on the gateway over raw sockets, against the real gateway and a real upstream
# (tests/helpers/upstream.py, which logs every request line it reads):
#   framing: each request smuggling shape gets 400, the connection is closed, and the upstream
#            never sees the request (nor what was smuggled behind it); a hostile upstream's
#            malformed response heads give the client a 502 and none of their bytes;
#   time:    slowloris clients are closed with 408 after the header timeout while a normal
#            request gets 200; idle keep-alive, stalled bodies and silent upstreams are closed;
#   caps:    connections above the per-address and the total cap get 503 while a client from
#            another address still gets through;
#   fds:     at the open-file limit the gateway pauses accepting (no spinning), a connection it
#            already holds still reaches its sandbox, and it serves again once the flood closes;
#            with the connection cap derived from the limit every accepted client gets its
#            upstream.
# Each check has its positive control next to it.
source "$(dirname "$0")/lib.sh"
UP=$((GW_PORT + 1000))
ULOG=$T/upstream-requests.log
: >"$ULOG"
python3 "$SOURCE/tests/helpers/upstream.py" "$UP" "$ULOG" 2>>"$T/upstream.log" &
PIDS+=($!)
wait_for 10 curl -fsS "http://127.0.0.1:$UP/" || fail "upstream did not start"
SOCK=$T/gw/gateway.sock
A=aaaaaaaaaaaa

# gw OPTIONS...: (re)start the gateway with these options and route $A to the upstream
gw() {
	if [ -n "${PID_gateway:-}" ]; then
		stop_pid "$PID_gateway"
	fi
	rm -f "$SOCK"
	start_gateway "$@"
	# a held request gives up after 3 s (the start timeout), so a lost upstream shows fast
	wait_for 10 sh -c "$POKE $SOCK setroute $A 127.0.0.1 $UP running 3000 | grep -q ok" ||
		fail "route not set"
	wait_for 10 curl -fsS "$GW/s/$A/" || fail "gateway does not serve after a restart"
}

cat >"$T/atk.py" <<'PY'
import select, socket, sys, threading, time

PORT = int(sys.argv[1])
A = sys.argv[2]
H = ("%s.warren.localhost" % A).encode()


def conn(src=None, timeout=10):
    return socket.create_connection(("127.0.0.1", PORT), timeout=timeout,
                                    source_address=(src, 0) if src else None)


def read_all(s, timeout=10):
    """Everything until the gateway closes; (bytes, closed)."""
    s.settimeout(timeout)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return out, True
            out += d
    except socket.timeout:
        return out, False
    except ConnectionResetError:
        return out, True


def exchange(data, src=None, timeout=10):
    s = conn(src)
    s.sendall(data)
    out, closed = read_all(s, timeout)
    s.close()
    return out, closed


def read_response(s):
    """One response with a Content-Length body, on a keep-alive connection."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            return buf
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(body) < n:
        d = s.recv(4096)
        if not d:
            break
        body += d
    return head + b"\r\n\r\n" + body


def status(out):
    return out.split(b"\r\n", 1)[0].decode(errors="replace")


failed = 0


def check(what, ok, detail=""):
    global failed
    print("%s: %s%s" % ("ok" if ok else "FAIL", what, " (%s)" % detail if detail else ""),
          flush=True)
    if not ok:
        failed += 1


def get(path, extra=b"", src=None):
    return exchange(b"GET /s/%s%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s\r\n"
                    % (A.encode(), path, H, extra), src)


def framing():
    P = b"/s/" + A.encode()
    heads = [
        ("bare LF in a header line", "bare LF", b"GET $P/atk-1 HTTP/1.1\r\nHost: $H\nX: y\r\n\r\n"),
        ("bare LF ending the head", "bare LF", b"GET $P/atk-2 HTTP/1.1\r\nHost: $H\r\n\n"),
        ("bare LF ending the request line", "bare LF", b"GET $P/atk-3 HTTP/1.1\nHost: $H\r\n\r\n"),
        ("CR not followed by LF", "control character in a header value", b"POST $P/atk-4 HTTP/1.1\r\nHost: $H\r\nX: a\rContent-Length: 5\r\n\r\nhello"),
        ("NUL in a header value", "control character in a header value", b"GET $P/atk-5 HTTP/1.1\r\nHost: $H\r\nX: a\x00b\r\n\r\n"),
        ("NUL in the target", "control character in the first line", b"GET $P/atk-6\x00 HTTP/1.1\r\nHost: $H\r\n\r\n"),
        ("control character in a header name", "invalid header name", b"GET $P/atk-7 HTTP/1.1\r\nHost: $H\r\nX\x01: y\r\n\r\n"),
        ("ESC in a header value", "control character in a header value", b"GET $P/atk-8 HTTP/1.1\r\nHost: $H\r\nX: \x1b[31mred\r\n\r\n"),
        ("obs-fold continuation", "obs-fold", b"GET $P/atk-9 HTTP/1.1\r\nHost: $H\r\nX: a\r\n b\r\n\r\n"),
        ("space before the colon", "invalid header name", b"POST $P/atk-10 HTTP/1.1\r\nHost: $H\r\nContent-Length : 5\r\n\r\nhello"),
        ("Content-Length and Transfer-Encoding", "both Content-Length and Transfer-Encoding",
         b"POST $P/atk-11 HTTP/1.1\r\nHost: $H\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"0\r\n\r\nGET $P/smuggled-11 HTTP/1.1\r\nHost: $H\r\n\r\n"),
        ("Transfer-Encoding and Content-Length", "both Content-Length and Transfer-Encoding",
         b"POST $P/atk-12 HTTP/1.1\r\nHost: $H\r\nTransfer-Encoding: chunked\r\nContent-Length: 35\r\n\r\n"
         b"0\r\n\r\nGET $P/smuggled-12 HTTP/1.1\r\nHost: $H\r\n\r\n"),
        ("differing Content-Length", "Content-Length given twice", b"POST $P/atk-13 HTTP/1.1\r\nHost: $H\r\nContent-Length: 5\r\nContent-Length: 41\r\n\r\nhello"),
        ("duplicate equal Content-Length", "Content-Length given twice", b"POST $P/atk-14 HTTP/1.1\r\nHost: $H\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello"),
        ("Content-Length list", "invalid Content-Length", b"POST $P/atk-15 HTTP/1.1\r\nHost: $H\r\nContent-Length: 5, 5\r\n\r\nhello"),
        ("Content-Length sign", "invalid Content-Length", b"POST $P/atk-16 HTTP/1.1\r\nHost: $H\r\nContent-Length: +5\r\n\r\nhello"),
        ("Transfer-Encoding gzip", "Transfer-Encoding other than chunked", b"POST $P/atk-17 HTTP/1.1\r\nHost: $H\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n"),
        ("Transfer-Encoding not only chunked", "Transfer-Encoding other than chunked", b"POST $P/atk-18 HTTP/1.1\r\nHost: $H\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
        ("Transfer-Encoding twice", "Transfer-Encoding given twice", b"POST $P/atk-19 HTTP/1.1\r\nHost: $H\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n"),
        ("Transfer-Encoding obfuscated", "Transfer-Encoding other than chunked", b"POST $P/atk-20 HTTP/1.1\r\nHost: $H\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n"),
        ("Transfer-Encoding in HTTP/1.0", "Transfer-Encoding in HTTP/1.0", b"POST $P/atk-21 HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        ("duplicate Host", "Host given twice", b"GET $P/atk-22 HTTP/1.1\r\nHost: $H\r\nHost: bbbbbbbbbbbb.warren.localhost\r\n\r\n"),
        ("no Host in HTTP/1.1", "no Host", b"GET $P/atk-23 HTTP/1.1\r\nX: y\r\n\r\n"),
        ("Host with a space", "invalid Host", b"GET $P/atk-24 HTTP/1.1\r\nHost: $H x\r\n\r\n"),
        ("invalid method", "invalid method", b"G(T $P/atk-25 HTTP/1.1\r\nHost: $H\r\n\r\n"),
        ("absolute-form target", "invalid request target", b"GET http://$H$P/atk-26 HTTP/1.1\r\nHost: $H\r\n\r\n"),
        ("invalid target character", "invalid request target", b"GET $P/atk-27<x> HTTP/1.1\r\nHost: $H\r\n\r\n"),
        ("invalid version", "invalid HTTP version", b"GET $P/atk-28 HTTP/1.2\r\nHost: $H\r\n\r\n"),
        ("two spaces in the request line", "invalid request line", b"GET  $P/atk-29 HTTP/1.1\r\nHost: $H\r\n\r\n"),
        ("CONNECT", "CONNECT is not served", b"CONNECT $P/atk-30 HTTP/1.1\r\nHost: $H\r\n\r\n"),
    ]
    chunked = b"POST $P/%s HTTP/1.1\r\nHost: $H\r\nTransfer-Encoding: chunked\r\n\r\n"
    smuggled = b"GET $P/smuggled-%d HTTP/1.1\r\nHost: $H\r\nContent-Length: 0\r\n\r\n"
    bodies = [
        ("a chunk size with no digits", b"\r\n\r\n"),
        ("a chunk size with garbage", b"5x\r\nhello\r\n0\r\n\r\n"),
        ("a hex prefix on a chunk size", b"0x5\r\nhello\r\n0\r\n\r\n"),
        ("a chunk size overflow", b"10000000000000005\r\nhello\r\n0\r\n\r\n"),
        ("a bare LF after a chunk size", b"5\nhello\r\n0\r\n\r\n"),
        ("chunk data longer than its size", b"3\r\nhello\r\n0\r\n\r\n"),
        ("a NUL in a chunk extension", b"5;a\x00\r\nhello\r\n0\r\n\r\n"),
        ("a bare LF in a trailer", b"5\r\nhello\r\n0\r\nX: y\n\r\n"),
        ("obs-fold in a trailer", b"5\r\nhello\r\n0\r\nX: y\r\n z\r\n\r\n"),
    ]
    def fill(d):
        return d.replace(b"$P", P).replace(b"$H", H)

    cases = [(w, why, fill(d)) for w, why, d in heads]
    for i, (w, body) in enumerate(bodies):
        req = (chunked % (b"atkc-%d" % i)) + body + (smuggled % i)
        cases.append((w, "bad chunked request body", fill(req)))
    for what, reason, data in cases:
        out, closed = exchange(data)
        why = out.rpartition(b"\r\n\r\n")[2].strip().decode(errors="replace")
        # the reason too: a 400 for another fault would prove nothing about this one
        check("%s: 400 and closed" % what, status(out).startswith("HTTP/1.1 400 ") and closed
              and reason in why, why)
    # positive controls: the valid siblings pass and reach the upstream
    out, _ = get(b"/ok-1")
    check("valid GET: 200", b"hello path=/ok-1" in out, status(out))
    out, _ = exchange(b"POST %s/ok-2 HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n"
                      b"Connection: close\r\n\r\n5;a=\"b\"\r\nhello\r\n0\r\nX: y\r\n\r\n" % (P, H))
    check("valid chunked POST with extension and trailer: 200", out.endswith(b"hello"),
          status(out))
    out, _ = exchange(b"GET %s/ok-3 HTTP/1.0\r\nX: a\tb\r\n\r\n" % P)
    check("valid HTTP/1.0 without Host, HTAB in a value: 200", b"hello path=/ok-3" in out,
          status(out))
    # a hostile upstream: malformed response heads are never forwarded
    for kind in ("bare-lf", "nul", "bare-cr", "cl-te", "cl-cl", "obs-fold", "status",
                 "huge-head", "upgrade"):
        out, closed = get(b"/raw/" + kind.encode())
        check("upstream response %s: 502, none of its bytes" % kind,
              status(out).startswith("HTTP/1.1 502 ") and b"bad" not in out and b"X-A" not in out
              and closed, status(out))
    out, _ = get(b"/raw/ok")
    check("a well-formed raw upstream response passes", out.endswith(b"\r\n\r\nok\n"), status(out))
    s = conn()
    s.sendall(b"GET %s/raw/extra HTTP/1.1\r\nHost: %s\r\n\r\n" % (P, H))
    first = read_response(s)
    time.sleep(0.2)
    s.sendall(b"GET %s/after-extra HTTP/1.1\r\nHost: %s\r\n\r\n" % (P, H))
    second = read_response(s)
    s.close()
    check("bytes after an upstream response never answer the next request",
          first.endswith(b"ok\n") and b"hello path=/after-extra" in second and
          b"smuggled" not in second, status(second))


def timeouts(n_slow):
    results = [None] * n_slow
    line = b"GET /s/%s/slow HTTP/1.1\r\nHost: %s\r\nX-Slow: " % (A.encode(), H)

    def slow(i):
        s = conn(timeout=60)
        t0 = time.time()
        s.settimeout(0.25)
        got = b""
        k = 0
        while time.time() - t0 < 60:
            try:
                s.send(line[k:k + 1] if k < len(line) else b"a")
                k += 1
            except OSError:
                more, _ = read_all(s, 1)  # what was answered before the close
                got += more
                break
            try:
                d = s.recv(4096)
                if not d:
                    break
                got += d
            except socket.timeout:
                pass
            except OSError:
                break
        results[i] = (time.time() - t0, got)
        s.close()

    threads = [threading.Thread(target=slow, args=(i,)) for i in range(n_slow)]
    for t in threads:
        t.start()
    time.sleep(1)
    out, _ = get(b"/during-slowloris")
    check("a normal request beside %d slow clients: 200" % n_slow,
          b"hello path=/during-slowloris" in out, status(out))
    for t in threads:
        t.join()
    worst = max(r[0] for r in results)
    n408 = sum(1 for r in results if status(r[1]).startswith("HTTP/1.1 408 "))
    check("%d slow clients all closed with 408 (%d did), the last after %.1f s" %
          (n_slow, n408, worst), n408 == n_slow and worst < 15)
    # a client that sends nothing at all
    t0 = time.time()
    s = conn()
    out, closed = read_all(s, 20)
    check("a silent connection: 408 and closed after %.1f s" % (time.time() - t0),
          closed and status(out).startswith("HTTP/1.1 408 ") and time.time() - t0 < 15)
    # keep-alive: a second request within the idle time works, an idle connection is closed
    s = conn()
    req = b"GET /s/%s/ka HTTP/1.1\r\nHost: %s\r\n\r\n" % (A.encode(), H)
    s.sendall(req)
    a = read_response(s)
    time.sleep(0.5)
    s.sendall(req)
    b = read_response(s)
    check("keep-alive: two requests on one connection", b"hello" in a and b"hello" in b)
    t0 = time.time()
    out, closed = read_all(s, 20)
    check("an idle keep-alive connection is closed after %.1f s" % (time.time() - t0),
          closed and out == b"" and time.time() - t0 < 15)
    # a body that stalls
    s = conn()
    s.sendall(b"POST /s/%s/echo HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\n0123456789"
              % (A.encode(), H))
    t0 = time.time()
    out, closed = read_all(s, 20)
    check("a stalled request body is closed after %.1f s" % (time.time() - t0),
          closed and time.time() - t0 < 15)
    out, _ = exchange(b"POST /s/%s/echo HTTP/1.1\r\nHost: %s\r\nContent-Length: 10\r\n"
                      b"Connection: close\r\n\r\n0123456789" % (A.encode(), H))
    check("the same body sent whole: echoed", out.endswith(b"0123456789"), status(out))
    # an upstream that does not answer
    t0 = time.time()
    out, closed = get(b"/hang")
    check("a silent upstream: 504 after %.1f s" % (time.time() - t0),
          status(out).startswith("HTTP/1.1 504 ") and time.time() - t0 < 15, status(out))


def caps(per_ip, total):
    held = [conn() for _ in range(per_ip)]
    time.sleep(0.5)
    out, closed = exchange(b"")  # refused at accept, before any request
    check("connection %d from 127.0.0.1: 503" % (per_ip + 1),
          status(out).startswith("HTTP/1.1 503 ") and closed, status(out))
    out, _ = get(b"/other-address", src="127.0.0.2")
    check("meanwhile a client from 127.0.0.2: 200", b"hello path=/other-address" in out,
          status(out))
    held += [conn(src="127.0.0.2") for _ in range(total - per_ip)]
    time.sleep(0.5)
    out, closed = exchange(b"", src="127.0.0.3")
    check("connection %d in all (from 127.0.0.3): 503" % (total + 1),
          status(out).startswith("HTTP/1.1 503 ") and closed, status(out))
    # the held connections are real: one of them is served
    held[0].sendall(b"GET /s/%s/held HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (A.encode(), H))
    out, _ = read_all(held[0])
    check("a held connection under the cap is served", b"hello path=/held" in out, status(out))
    for s in held:
        s.close()


def flood(n):
    return [conn() for _ in range(n)]


mode = sys.argv[3]
if mode == "framing":
    framing()
elif mode == "timeouts":
    timeouts(int(sys.argv[4]))
elif mode == "caps":
    caps(int(sys.argv[4]), int(sys.argv[5]))
elif mode == "fd-pause":
    # a keep-alive client holds its upstream; then a flood exhausts the gateway's fds
    k = conn()
    req = b"GET /s/%s/keep HTTP/1.1\r\nHost: %s\r\n\r\n" % (A.encode(), H)
    k.sendall(req)
    check("before the flood: 200", b"hello path=/keep" in read_response(k))
    socks = flood(int(sys.argv[4]))
    print("flooded", flush=True)
    sys.stdin.readline()  # the shell checks the gateway meanwhile
    k.sendall(req)
    out = read_response(k)
    check("at the fd limit an accepted client still reaches its sandbox",
          b"hello path=/keep" in out, status(out))
    for s in socks:
        s.close()
elif mode == "fd-cap":
    socks = flood(int(sys.argv[4]))
    time.sleep(1)
    answered, _, _ = select.select(socks, [], [], 1)
    silent = [s for s in socks if s not in answered]
    served, refused, other = 0, 0, []
    for s in answered:
        out, _ = read_all(s)
        if status(out).startswith("HTTP/1.1 503 "):
            refused += 1
        else:
            other.append(status(out))
    # every accepted client asks at once and keeps its connection (keep-alive, so the
    # gateway keeps the upstream too): each needs an upstream fd beside its own
    for s in silent:
        s.sendall(b"GET /s/%s/capped HTTP/1.1\r\nHost: %s\r\n\r\n" % (A.encode(), H))
    for s in silent:
        s.settimeout(15)
        try:
            out = read_response(s)
        except OSError as e:
            out = str(e).encode()
        if b"hello path=/capped" in out:
            served += 1
        else:
            other.append(status(out))
    check("open-file limit: %d accepted clients all served, %d refused with 503, none failed %s"
          % (served, refused, other[:3]), served > 0 and refused > 0 and not other)
    for s in socks:
        s.close()
sys.exit(1 if failed else 0)
PY
atk() { python3 "$T/atk.py" "$GW_PORT" "$A" "$@"; }
# run_atk DESCRIPTION ARGS...: the python part prints one line per check; all must be ok
run_atk() {
	local what=$1 out rc=0
	shift
	out=$(atk "$@" 2>&1) || rc=$?
	while IFS= read -r l; do log "  $l"; done <<<"$out"
	[ "$rc" = 0 ] || fail "$what"
	log "ok: $what"
}

# ONLY=framing|timeouts|caps|fd-pause|fd-cap runs one part (when breaking things on purpose)
want() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }

# --- framing (a small upstream head bound, so the 9 KB head is over it)
if want framing; then
gw --max-response-head 4096
run_atk "framing attacks refused" framing
seen=$(grep -E "/(atk-|smuggled-)" "$ULOG" || true)
expect "the upstream never saw a refused request nor a smuggled one (${seen:-none})" test -z "$seen"
expect "positive control: the upstream log shows the valid requests" \
	grep -q "GET /ok-1 HTTP/1.1" "$ULOG"
expect "the gateway logged the malformed upstream responses" \
	grep -q "malformed response (bare LF)" "$T/gateway.log"
fi

# --- time limits
if want timeouts; then
: >"$ULOG"
gw --header-timeout 2 --idle-timeout 2 --body-timeout 2 --response-timeout 3
run_atk "slowloris, silent, idle, stalled-body and silent-upstream connections closed" timeouts 20
expect "the upstream never saw a slowloris request" sh -c "! grep -q /slow '$ULOG'"
fi

# --- connection caps
if want caps; then
gw --header-timeout 60 --max-connections-per-ip 10 --max-connections 15
run_atk "per-address and total caps refuse the excess, others get through" caps 10 15
expect "gateway alive after the caps" kill -0 "$PID_gateway"
fi

# --- fd exhaustion: the cap set above what the fd limit carries, so accept hits EMFILE
if want fd-pause; then
gw --header-timeout 60 --max-open-files 48 --max-connections 1000 --max-connections-per-ip 1000
mkfifo "$T/go"
atk fd-pause 150 <"$T/go" >"$T/flood.out" 2>&1 &
flood=$!
exec 9>"$T/go"
expect "the flood is open" wait_for 30 grep -q flooded "$T/flood.out"
grep -q "^ok: before the flood" "$T/flood.out" || fail "fd flood set-up: $(cat "$T/flood.out")"
expect "the gateway paused accepting" wait_for 10 grep -q "accepting paused" "$T/gateway.log"
cpu() { awk '{print $14 + $15}' "/proc/$PID_gateway/stat"; }
c0=$(cpu)
sleep 3
c1=$(cpu)
expect "paused, it does not spin ($((c1 - c0)) ticks of CPU in 3 s)" test $((c1 - c0)) -lt 90
expect "gateway alive at the fd limit" kill -0 "$PID_gateway"
echo go >&9
exec 9>&-
wait "$flood" && rc=0 || rc=$?
while IFS= read -r l; do log "  $l"; done <"$T/flood.out"
expect "an accepted client reached its sandbox at the fd limit" test "$rc" = 0
expect "serving again once the flood closed" wait_for 15 curl -fsS --max-time 2 "$GW/s/$A/after-flood"
expect "gateway alive after the flood" kill -0 "$PID_gateway"
fi

# --- the default cap derives from the fd limit: whoever is accepted gets an upstream fd
if want fd-cap; then
gw --header-timeout 60 --max-open-files 160 --max-connections-per-ip 1000
expect "the derived cap is logged" grep -q "at most 48 connections" "$T/gateway.log"
run_atk "fd limit with the derived cap" fd-cap 120
expect "serving after the capped flood" wait_for 15 curl -fsS --max-time 2 "$GW/s/$A/after-cap"
fi
log "PASS"
