#!/usr/bin/env python3
"""Warren's gateway against nginx as a reverse proxy, same upstream, same run.

  bench/bench-gateway.py [--quick] [--rounds N] [--seconds S] [--nginx-workers N|auto]
                         [--libexec DIR] [--build DIR] [--only NAME,...] [--no-write]
                         [--from-json FILE] [--held] [--held-only] [--held-n N]

Run as root (namespaces, nginx). Needs nginx-light and wrk (scripts/setup.sh installs them). It
needs no running Warren: it starts its own warren-gateway (the installed one, --libexec) and
gives it one route with ipc-poke (--build), as the supervisor would.

The upstream is nginx with one worker in a network namespace of its own (a veth pair, as a pool
slot has), serving a small page, a 1 MiB file and a 256 KiB page sent chunked (SSI on: the
length is unknown, so every response is `Transfer-Encoding: chunked`); nginx is far faster than
a gVisor sandbox, so the upstream is not what is measured. In front of it, on 127.0.0.1:
  - warren-gateway, one route to the upstream (the request names the sandbox by Host);
  - Debian's nginx(-light) as a reverse proxy: `upstream { keepalive 256; }`,
    `proxy_http_version 1.1`, `proxy_set_header Connection ""`, keepalive_requests high on both
    sides, `proxy_max_temp_file_size 0` (no temp files for the 1 MiB body), access log off,
    worker_processes 1 by default (the gateway is one process with one event loop) or
    --nginx-workers.
wrk is the client. Each point (connections x client keep-alive x response) runs --rounds times,
alternating gateway, nginx, gateway, ... and the table reports medians over the rounds and the
ratio gateway/nginx from the same run: on a shared, noisy machine only those ratios count.
Rows go into bench/results/gateway.json and README.md between the bench-gateway markers.
"""
import argparse
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = "/run/warren-gwbench"
NS = "wgwbench"
HOST_IF = "wgwb0"
UP_ADDR, HOST_ADDR = "10.251.251.2", "10.251.251.1"
UP_PORT = 8080
GW_PORT, NGINX_PORT = 18481, 18482
ROUTE = "abcdef012345"
DOMAIN = "warren.localhost"
STREAM_KIB = 256

# (name, path, connections, client keep-alive)
POINTS = [
    ("small", "/", 1, True), ("small", "/", 50, True), ("small", "/", 1000, True),
    ("small", "/", 1, False), ("small", "/", 50, False), ("small", "/", 1000, False),
    ("1mib", "/1m.bin", 1, True), ("1mib", "/1m.bin", 50, True), ("1mib", "/1m.bin", 1000, True),
    ("stream", "/stream.html", 1, True), ("stream", "/stream.html", 50, True),
    ("stream", "/stream.html", 1000, True),
]
LABEL = {"small": "small page (612 B)", "1mib": "1 MiB response",
         "stream": f"streaming: {STREAM_KIB} KiB chunked"}


def sh(cmd, check=True, **kw):
    return subprocess.run(cmd, shell=isinstance(cmd, str), check=check, capture_output=True,
                          text=True, **kw)


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def wait_http(url, host=None, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            req = urllib.request.Request(url, headers={"Host": host} if host else {})
            with urllib.request.urlopen(req, timeout=1) as r:
                if r.status == 200:
                    return r.read()
        except Exception:
            time.sleep(0.05)
    raise RuntimeError(f"{url} (Host {host}) did not answer 200 in {timeout} s")


# ---------------------------------------------------------------- set-up

def upstream_conf(d):
    return f"""
worker_processes 1;
worker_rlimit_nofile 20000;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp; fastcgi_temp_path {d}/tmp;
    uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;
    include /etc/nginx/mime.types;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
    sendfile on;
    tcp_nopush on;
    server {{
        listen {UP_ADDR}:{UP_PORT} backlog=4096;
        root {d}/www;
        location /stream.html {{ ssi on; }}
    }}
}}
"""


def proxy_conf(d, workers):
    return f"""
worker_processes {workers};
worker_rlimit_nofile 20000;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp; fastcgi_temp_path {d}/tmp;
    uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
    upstream sandbox {{
        server {UP_ADDR}:{UP_PORT};
        keepalive 256;
        keepalive_requests 100000000;
    }}
    server {{
        listen 127.0.0.1:{NGINX_PORT} backlog=4096;
        location / {{
            proxy_pass http://sandbox;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_max_temp_file_size 0;
        }}
    }}
}}
"""


def nginx_start(d, conf, netns=None):
    os.makedirs(f"{d}/tmp", exist_ok=True)
    with open(f"{d}/nginx.conf", "w") as f:
        f.write(conf)
    cmd = ["nginx", "-c", f"{d}/nginx.conf", "-g", "daemon off;"]
    if netns:
        cmd = ["ip", "netns", "exec", netns] + cmd
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(f"{d}/stderr", "w"),
                            preexec_fn=raise_nofile)


def setup(args):
    teardown()
    os.makedirs(RUN)
    sh(f"ip netns add {NS}")
    sh(f"ip link add {HOST_IF} type veth peer name eth0 netns {NS}")
    sh(f"ip addr add {HOST_ADDR}/30 dev {HOST_IF} && ip link set {HOST_IF} up")
    sh(f"ip -n {NS} addr add {UP_ADDR}/30 dev eth0 && ip -n {NS} link set eth0 up && "
       f"ip -n {NS} link set lo up")
    www = f"{RUN}/up/www"
    os.makedirs(www)
    shutil.copy("/usr/share/nginx/html/index.html", f"{www}/index.html")  # 612 B
    with open(f"{www}/1m.bin", "wb") as f:
        f.write(os.urandom(1 << 20))
    line = "<p>" + "x" * 1019 + "</p>\n"  # 1 KiB a line
    with open(f"{www}/stream.html", "w") as f:
        f.write(line * STREAM_KIB)
    procs = {"up": nginx_start(f"{RUN}/up", upstream_conf(f"{RUN}/up"), NS)}
    wait_http(f"http://{UP_ADDR}:{UP_PORT}/")
    procs["nginx"] = nginx_start(f"{RUN}/proxy", proxy_conf(f"{RUN}/proxy", args.nginx_workers))
    os.makedirs(f"{RUN}/gw")
    gw_log = open(f"{RUN}/gw/gateway.log", "w")
    procs["gateway"] = subprocess.Popen(
        [f"{args.libexec}/warren-gateway", "--socket", f"{RUN}/gw/gateway.sock",
         "--port", str(GW_PORT), "--user", "warren-gateway",
         # the defaults (256 per address, (fds - 64) / 2 in all) would refuse wrk's 1,000
         # connections from one address: the cap is a setting, not what is measured
         "--max-connections-per-ip", "8192", "--max-connections", "8192"],
        stdout=gw_log, stderr=gw_log, preexec_fn=raise_nofile)
    end = time.monotonic() + 10
    while not os.path.exists(f"{RUN}/gw/gateway.sock"):
        if time.monotonic() > end or procs["gateway"].poll() is not None:
            raise RuntimeError("warren-gateway did not start: " + open(f"{RUN}/gw/gateway.log").read())
        time.sleep(0.05)
    out = sh([f"{args.build}/tests/ipc-poke", f"{RUN}/gw/gateway.sock", "setroute", ROUTE, UP_ADDR,
              str(UP_PORT), "running"]).stdout.strip()
    if out != "ok":
        raise RuntimeError(f"SetRoute: {out}")
    host = f"{ROUTE}.{DOMAIN}"
    for port in (GW_PORT, NGINX_PORT):
        for path in ("/", "/1m.bin", "/stream.html"):
            body = wait_http(f"http://127.0.0.1:{port}{path}", host)
            want = open(f"{www}{path if path != '/' else '/index.html'}", "rb").read()
            if body != want:
                raise RuntimeError(f"port {port} {path}: the body differs from the upstream's")
    # the streaming response really is chunked on both proxies
    for port in (GW_PORT, NGINX_PORT):
        hdr = sh(["curl", "-sS", "-D", "-", "-o", "/dev/null", "-H", f"Host: {host}",
                  f"http://127.0.0.1:{port}/stream.html"]).stdout.lower()
        if "transfer-encoding: chunked" not in hdr:
            raise RuntimeError(f"port {port}: /stream.html is not chunked:\n{hdr}")
    return procs


def teardown(procs=None):
    for p in (procs or {}).values():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
    for pidfile in (f"{RUN}/up/nginx.pid", f"{RUN}/proxy/nginx.pid"):  # an interrupted run's
        try:
            os.kill(int(open(pidfile).read()), signal.SIGTERM)
        except (OSError, ValueError):
            pass
    sh(f"ip netns del {NS}", check=False)
    sh(f"ip link del {HOST_IF}", check=False)
    shutil.rmtree(RUN, ignore_errors=True)


# ---------------------------------------------------------------- measuring

def parse_latency(s):
    m = re.match(r"([\d.]+)(us|ms|s)$", s)
    v = float(m.group(1))
    return v / 1000 if m.group(2) == "us" else v * 1000 if m.group(2) == "s" else v


def wrk(port, path, conns, keepalive, seconds):
    threads = 1 if conns == 1 else 2
    cmd = ["wrk", "-t", str(threads), "-c", str(conns), "-d", f"{seconds}s", "--latency",
           "--timeout", "10s", "-H", f"Host: {ROUTE}.{DOMAIN}"]
    if not keepalive:
        cmd += ["-H", "Connection: close"]
    out = subprocess.run(cmd + [f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True,
                         preexec_fn=raise_nofile).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
    errs = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    bad = (sum(int(x) for x in errs.groups()) if errs else 0) + (int(non2xx.group(1)) if non2xx else 0)
    # a read error per request is how wrk counts a server's close after `Connection: close`
    # answers on some versions: only connect/timeout errors and non-2xx are failures
    hard = (int(errs.group(1)) + int(errs.group(4)) if errs else 0) + (int(non2xx.group(1)) if non2xx else 0)
    return {"rps": rps, "p50": parse_latency(lat["50"]), "p99": parse_latency(lat["99"]),
            "errors": bad, "hard_errors": hard, "raw": out}


def bench(args, procs):
    results = []
    points = [p for p in POINTS if not args.only or f"{p[0]}-{p[2]}-{'ka' if p[3] else 'close'}"
              in args.only.split(",")]
    for name, path, conns, ka in points:
        key = f"{name}-{conns}-{'ka' if ka else 'close'}"
        runs = {"gateway": [], "nginx": []}
        for rnd in range(args.rounds):
            # alternate which goes first, so neither always runs right after the other
            order = [("gateway", GW_PORT), ("nginx", NGINX_PORT)]
            if rnd % 2:
                order.reverse()
            for who, port in order:
                r = wrk(port, path, conns, ka, args.seconds)
                runs[who].append(r)
                print(f"  {key} {who}: {r['rps']:.0f} req/s p50 {r['p50']:.2f} ms "
                      f"p99 {r['p99']:.2f} ms errors {r['errors']}", file=sys.stderr)
                for p, pr in procs.items():
                    if pr.poll() is not None:
                        raise RuntimeError(f"{p} exited during {key}")
        res = {"key": key, "name": name, "conns": conns, "keepalive": ka, "n": args.rounds}
        for who in runs:
            res[who] = {m: statistics.median(r[m] for r in runs[who]) for m in ("rps", "p50", "p99")}
            res[who]["errors"] = sum(r["errors"] for r in runs[who])
            res[who]["hard_errors"] = sum(r["hard_errors"] for r in runs[who])
            res[who]["rounds"] = [{m: r[m] for m in ("rps", "p50", "p99", "errors")}
                                  for r in runs[who]]
        res["rps_ratio"] = res["gateway"]["rps"] / res["nginx"]["rps"]
        res["p99_ratio"] = res["gateway"]["p99"] / res["nginx"]["p99"]
        results.append(res)
    return results


def held_first_request(args):
    """The first request to a sandbox created a moment ago: CreateSandbox without waiting, then
    one request at once through the gateway, which holds it until the sandbox answers. Needs a
    running Warren (warrenctl, gateway on 8300). Baseline: the same create, then the client
    polling the gateway every 10 ms until a 200 (what a client must do without the hold)."""
    held, polled = [], []
    for i in range(args.held_n):
        for mode, dest in ((("held", held), ("polled", polled)) if i % 2 == 0
                           else (("polled", polled), ("held", held))):
            t0 = time.monotonic()
            sid = sh(["warrenctl", "create", "web"]).stdout.split()[0]
            url = f"http://127.0.0.1:8300/s/{sid}/"
            if mode == "held":
                with urllib.request.urlopen(url, timeout=60) as r:
                    if r.status != 200:
                        raise RuntimeError(f"held request to {sid}: {r.status}")
                    r.read()
            else:
                end = time.monotonic() + 60
                while True:
                    try:
                        # the gateway would hold this too: ask for an answer within 10 ms
                        with urllib.request.urlopen(url, timeout=0.01) as r:
                            r.read()
                            break
                    except Exception:
                        if time.monotonic() > end:
                            raise RuntimeError(f"{sid} did not answer in 60 s")
                        time.sleep(0.01)
            dest.append((time.monotonic() - t0) * 1000)
            sh(["warrenctl", "destroy", sid])
    return held, polled


# ---------------------------------------------------------------- output

def fmt_ms(v):
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}"


def render(res):
    lines = [f"Machine: {res['machine']}. Run: {res['date']}, {res['rounds']} rounds of "
             f"{res['seconds']} s per point, gateway and nginx alternating; medians over the rounds. "
             f"nginx: {res['nginx']}, worker_processes {res['nginx_workers']}. Upstream: nginx, one "
             "worker, in a network namespace behind a veth pair. Client: wrk on the same host "
             "(2 threads; 1 for one connection).", "",
             "| Point | conns | client keep-alive | gateway req/s | nginx req/s | gateway/nginx req/s | "
             "gateway p50 / p99 | nginx p50 / p99 | p99 gateway/nginx |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        g, n = r["gateway"], r["nginx"]
        lines.append(f"| {LABEL[r['name']]} | {r['conns']} | {'yes' if r['keepalive'] else 'no'} | "
                     f"{g['rps']:.0f} | {n['rps']:.0f} | {r['rps_ratio']:.2f}x | "
                     f"{fmt_ms(g['p50'])} / {fmt_ms(g['p99'])} ms | {fmt_ms(n['p50'])} / "
                     f"{fmt_ms(n['p99'])} ms | {r['p99_ratio']:.2f}x |")
    if res.get("held"):
        h = res["held"]
        lines += ["", f"First request to a `web` sandbox created a moment ago (CreateSandbox without "
                  f"waiting, then one request, held by the gateway until the sandbox answers), n={h['n']}: "
                  f"p50 {h['held_p50']:.0f} ms, p90 {h['held_p90']:.0f} ms; the same create with the "
                  f"client polling every 10 ms instead: p50 {h['polled_p50']:.0f} ms, p90 "
                  f"{h['polled_p90']:.0f} ms ({h['held_p50'] / h['polled_p50']:.2f}x)."]
    return "\n".join(lines)


def pct(v, p):
    v = sorted(v)
    k = (len(v) - 1) * p / 100
    f = int(k)
    c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    mem = int(open("/proc/meminfo").readline().split()[1]) // (1024 * 1024)
    return f"{os.cpu_count()} x {cpu}, {mem} GiB, kernel {platform.release()}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1 round of 2 s per point, nothing written")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--nginx-workers", default="1")
    ap.add_argument("--libexec", default="/usr/local/libexec/warren")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--only", help="points to run, e.g. small-50-ka,1mib-1-ka (nothing written)")
    ap.add_argument("--held", action="store_true",
                    help="also the held first request (needs Warren running: scripts/run.sh)")
    ap.add_argument("--held-n", type=int, default=10)
    ap.add_argument("--held-only", action="store_true",
                    help="only the held first request, added to bench/results/gateway.json")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--from-json")
    ap.add_argument("--keep", action="store_true", help="leave the set-up running (profiling)")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.seconds, a.no_write = 1, 2, True
    if a.only:
        a.no_write = True
    if a.held_only:
        a.from_json = a.from_json or os.path.join(ROOT, "bench/results/gateway.json")
    if a.from_json:
        res = json.load(open(a.from_json))
        if a.held_only:
            held, polled = held_first_request(a)
            res["held"] = {"n": len(held), "held": held, "polled": polled,
                           "held_p50": pct(held, 50), "held_p90": pct(held, 90),
                           "polled_p50": pct(polled, 50), "polled_p90": pct(polled, 90)}
            with open(a.from_json, "w") as f:
                json.dump(res, f, indent=1)
    else:
        raise_nofile()
        procs = setup(a)
        try:
            if a.keep:
                print(f"gateway :{GW_PORT}, nginx :{NGINX_PORT}, Host {ROUTE}.{DOMAIN}; ^C ends",
                      file=sys.stderr)
                signal.pause()
            rows = bench(a, procs)
        finally:
            teardown(procs)
        nginx_v = sh("nginx -v", check=False).stderr.strip().split("/")[-1]
        res = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "rounds": a.rounds,
               "seconds": a.seconds, "nginx": f"nginx-light {nginx_v}",
               "nginx_workers": a.nginx_workers, "rows": rows}
        if a.held:
            held, polled = held_first_request(a)
            res["held"] = {"n": len(held), "held": held, "polled": polled,
                           "held_p50": pct(held, 50), "held_p90": pct(held, 90),
                           "polled_p50": pct(polled, 50), "polled_p90": pct(polled, 90)}
        if not a.no_write:
            with open(os.path.join(ROOT, "bench/results/gateway.json"), "w") as f:
                json.dump(res, f, indent=1)
    table = render(res)
    print(table)
    if not a.no_write:
        readme = os.path.join(ROOT, "README.md")
        s = open(readme).read()
        s = re.sub(r"<!-- bench-gateway:start -->.*<!-- bench-gateway:end -->",
                   "<!-- bench-gateway:start -->\n" + table + "\n<!-- bench-gateway:end -->", s,
                   flags=re.S)
        open(readme, "w").write(s)


if __name__ == "__main__":
    main()
