#!/usr/bin/env python3
"""Load through the gateway, the client side of bench/gateway-load.sh.

  gateway-load.py GW_HOST:PORT DOMAIN SECONDS CONNS IDS_FILE CHURN_CMD

CONNS keep-alive connections spread round-robin over the sandboxes in IDS_FILE (one id a line;
each sandbox's page is its own id, its hostname), each sending GET / by Host name for SECONDS.
Every answer must be 200 with the connection's own sandbox's id: anything else is an error.
Meanwhile a churn loop runs CHURN_CMD create (prints a new id), fetches the new sandbox's page
(must be its id), runs CHURN_CMD destroy ID, and fetches again: that must be 404 or 503, never
a 200 (no other sandbox's page). Prints one JSON object."""
import asyncio
import json
import sys
import time

host, port = sys.argv[1].rsplit(":", 1)
port = int(port)
DOMAIN, SECONDS, CONNS = sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
IDS = [l.strip() for l in open(sys.argv[5]) if l.strip()]
CHURN = sys.argv[6]

lat = []
create_failed = []
errors = []
n_ok = 0


async def request(reader, writer, sid):
    writer.write(("GET / HTTP/1.1\r\nHost: %s.%s:%d\r\n\r\n" % (sid, DOMAIN, port)).encode())
    t0 = time.monotonic()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    n = 0
    close = False
    for l in lines[1:]:
        k, _, v = l.partition(":")
        if k.lower() == "content-length":
            n = int(v)
        elif k.lower() == "connection" and v.strip().lower() == "close":
            close = True
    body = await reader.readexactly(n)
    return status, body.decode("latin-1").strip(), time.monotonic() - t0, close


async def worker(i, deadline):
    global n_ok
    sid = IDS[i % len(IDS)]
    reader = writer = None
    while time.monotonic() < deadline:
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection(host, port)
            status, body, dt, close = await asyncio.wait_for(request(reader, writer, sid), 120)
            if status != 200 or body != sid:
                errors.append("conn %d to %s: %d %r" % (i, sid, status, body[:60]))
            else:
                n_ok += 1
                lat.append(dt)
            if close:
                writer.close()
                writer = None
        except Exception as e:  # any failure is an error: counted, never hidden
            errors.append("conn %d to %s: %s" % (i, sid, repr(e)[:80]))
            if writer:
                writer.close()
            writer = None
            await asyncio.sleep(0.1)
    if writer:
        writer.close()


async def fetch_once(sid):
    reader, writer = await asyncio.open_connection(host, port)
    try:
        return await asyncio.wait_for(request(reader, writer, sid), 120)
    finally:
        writer.close()


async def run(*args):
    p = await asyncio.create_subprocess_exec(CHURN, *args, stdout=asyncio.subprocess.PIPE)
    out, _ = await p.communicate()
    return p.returncode, out.decode().strip()


async def churn(deadline):
    cycles = 0
    wrong = []
    while time.monotonic() < deadline - 5:
        rc, sid = await run("create")
        if rc != 0 or len(sid) != 12:
            create_failed.append(sid[:80])  # not a routing error: reported on its own
            await asyncio.sleep(1)
            continue
        status, body, _, _ = await fetch_once(sid)
        if status != 200 or body != sid:
            wrong.append("new %s: %d %r" % (sid, status, body[:60]))
        rc, _ = await run("destroy", sid)
        for _ in range(3):
            status, body, _, _ = await fetch_once(sid)
            if status not in (404, 503):
                wrong.append("destroyed %s: %d %r" % (sid, status, body[:60]))
        cycles += 1
    return cycles, wrong


async def main():
    deadline = time.monotonic() + SECONDS
    t0 = time.monotonic()
    workers = [asyncio.create_task(worker(i, deadline)) for i in range(CONNS)]
    cycles, wrong = await churn(deadline)
    await asyncio.gather(*workers)
    wall = time.monotonic() - t0
    lat.sort()
    q = lambda f: round(lat[min(len(lat) - 1, int(f * len(lat)))] * 1000, 2) if lat else None
    print(json.dumps({"conns": CONNS, "sandboxes": len(IDS), "seconds": round(wall, 1),
                      "requests_ok": n_ok, "req_per_s": round(n_ok / wall), "errors": len(errors),
                      "first_errors": errors[:5], "p50_ms": q(0.5), "p99_ms": q(0.99),
                      "churn_cycles": cycles, "churn_wrong": wrong[:5],
                      "churn_wrong_n": len(wrong), "churn_create_failed": len(create_failed)}))


asyncio.run(main())
