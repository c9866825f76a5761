#!/usr/bin/env python3
"""The agent's process.Process/Start round trip of one command, N times on one kept-alive
connection (or a new one each time with --new), and when each event arrived: what separates
the SDK's commands.run from the agent itself (stdlib only).

  envd-roundtrip.py [--new] [-n N] URL SANDBOX_ID TOKEN CMD [ARG...]

URL is the gateway (http://127.0.0.1:8300) or the agent itself (http://<sandbox address>:49983);
TOKEN is the sandbox's AgentToken (D-Bus) or E2B access token. Example: /bin/true against
/bin/bash -l -c true (what commands.run('true') runs)."""
import argparse
import http.client
import json
import struct
import time
import urllib.parse

ap = argparse.ArgumentParser()
ap.add_argument("--new", action="store_true", help="a new connection per request")
ap.add_argument("-n", type=int, default=20)
ap.add_argument("url")
ap.add_argument("sandbox")
ap.add_argument("token")
ap.add_argument("cmd", nargs="+")
a = ap.parse_args()
u = urllib.parse.urlparse(a.url)
body = json.dumps({"process": {"cmd": a.cmd[0], "args": a.cmd[1:]}}).encode()
envelope = struct.pack(">BI", 0, len(body)) + body
headers = {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
           "E2b-Sandbox-Id": a.sandbox, "E2b-Sandbox-Port": "49983",
           "X-Warren-Agent-Token": a.token, "X-Access-Token": a.token}
conn = None
times = []
for i in range(a.n):
    if conn is None or a.new:
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=30)
    t0 = time.perf_counter()
    conn.request("POST", "/process.Process/Start", body=envelope, headers=headers)
    r = conn.getresponse()
    events = []
    while True:
        head = r.read(5)
        if len(head) < 5:
            break
        flags, n = struct.unpack(">BI", head)
        r.read(n)
        events.append(round((time.perf_counter() - t0) * 1000, 1))
        if flags & 2:  # the end-of-stream message
            break
    r.read()
    times.append((time.perf_counter() - t0) * 1000)
    if i < 3:
        print("events at ms", events)
times.sort()
print(f"n {len(times)} p50 {times[len(times) // 2]:.1f} ms p90 {times[len(times) * 9 // 10]:.1f} ms")
