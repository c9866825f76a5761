#!/usr/bin/env python3
"""Where a fork's time goes, per child, from the supervisor's own clock (the Sandbox object's
Timings: claim_us, spawn_us, ready_us, all from the child's creation) and the client's: fork
reply and every child answering through the gateway.
  python3 bench/fork-profile.py [COUNT...]   (default 1 5 20 100; needs a running Warren)
Phases: wait for a namespace slot (claim), claim -> runsc restore returned (route push, spawner,
the restore itself), restore returned -> the gateway's probe saw the port open (ready), and
ready -> the client's request through the gateway answered."""
import concurrent.futures as cf
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (its helpers: sh, wait_http, warren_create, warren_destroy)

now = time.monotonic


def timings(sid):
    out = bench.sh(["busctl", "--system", "--json=short", "get-property", "org.warren.Warren1",
                    f"/org/warren/Warren1/sandbox/{sid}", "org.warren.Warren1.Sandbox",
                    "Timings"]).stdout
    return {k: v / 1000 for k, v in json.loads(out)["data"].items()}


def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else float("nan")


def profile(parent, count):
    tag = f"fprof{count}{int(time.time()) % 100000}"
    bench.sh(["warrenctl", "snapshot", parent, tag])
    bench.must_http(f"{bench.GW}/s/{parent}/", "snapshotted parent", interval=0.005)
    t0 = now()
    ids = bench.sh(["warrenctl", "fork", tag, str(count)]).stdout.split()
    t_reply = (now() - t0) * 1000
    answered = {}

    def wait(i):
        ok = bench.wait_http(f"{bench.GW}/s/{i}/", timeout=180, interval=0.01)
        answered[i] = (now() - t0) * 1000
        return ok

    with cf.ThreadPoolExecutor(count) as ex:
        ok = list(ex.map(wait, ids))
    t_all = (now() - t0) * 1000
    tm = {i: timings(i) for i in ids}
    load = os.getloadavg()[0]
    with cf.ThreadPoolExecutor(8) as ex:
        list(ex.map(bench.warren_destroy, ids))
    bench.sh(["warrenctl", "rmtag", tag])
    claim = [t.get("claim_us", 0) for t in tm.values()]
    restore = [t["spawn_us"] - t["claim_us"] for t in tm.values() if "spawn_us" in t]
    probe = [t["ready_us"] - t["spawn_us"] for t in tm.values() if "ready_us" in t]
    ready = [t.get("ready_us", 0) for t in tm.values()]
    print(f"fork of {count}: reply {t_reply:.0f} ms, all answering {t_all:.0f} ms "
          f"({ok.count(False)} failed), load {load:.1f}")
    for name, v in (("claim (slot wait)", claim), ("claim -> restore returned", restore),
                    ("restore returned -> probe ok", probe), ("create -> ready", ready),
                    ("client: fork start -> answered", list(answered.values()))):
        print(f"  {name:32s} p10 {q(v, 10):7.0f}  p50 {q(v, 50):7.0f}  p90 {q(v, 90):7.0f}  "
              f"max {q(v, 100):7.0f} ms")
    return t_all


def main():
    counts = [int(c) for c in sys.argv[1:]] or [1, 5, 20, 100]
    _, parent = bench.warren_create("web")
    try:
        for c in counts:
            profile(parent, c)
    finally:
        bench.warren_destroy(parent)


if __name__ == "__main__":
    main()
