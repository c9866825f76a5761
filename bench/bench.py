#!/usr/bin/env python3
"""Warren's benchmark. Run as root with Warren up (scripts/run.sh). Every Warren row is paired,
in the same run and interleaved, with plain runsc / ip doing the same job, and the table goes
into README.md between the bench markers and into bench/results/latest.json.

  bench/bench.py [--quick] [--from-json FILE]
"""
import argparse
import concurrent.futures as cf
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATES = "/var/lib/warren/templates"
RUNSC_ROOT = "/run/warren-bench/runsc"
BENCH_NS = "warrenbench"
# The Warren under test: the installed one by default; a private instance (a test's daemons on
# their own bus, gateway port and image store, e.g. a build installed elsewhere) through these
GW = os.environ.get("WARREN_BENCH_GATEWAY", "http://127.0.0.1:8300")
IMAGES = os.environ.get("WARREN_BENCH_IMAGES", "/var/lib/warren/images")


def sh(cmd, check=True, **kw):
    return subprocess.run(cmd, shell=isinstance(cmd, str), check=check, capture_output=True,
                          text=True, **kw)


def now():
    return time.monotonic()


def wait_http(url, timeout=60, host=None, interval=0.01):
    end = now() + timeout
    while now() < end:
        try:
            req = urllib.request.Request(url)
            with urllib.request.urlopen(req, timeout=0.5) as r:
                if r.status == 200:
                    r.read()
                    return True
        except Exception:
            time.sleep(interval)
    return False


def wait_until(what, cond, timeout, interval=0.1):
    """poll cond() until it is true; a timeout fails the run (a row is never silently skipped)"""
    end = now() + timeout
    while not cond():
        if now() >= end:
            raise RuntimeError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def must_http(url, what, **kw):
    """wait_http that fails the run on a timeout"""
    if not wait_http(url, **kw):
        raise RuntimeError(f"{what} did not answer at {url} in {kw.get('timeout', 60)} s")


def pct(v, p):
    v = sorted(v)
    if not v:
        return float("nan")
    k = (len(v) - 1) * p / 100
    f = int(k)
    c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)


# ---------------------------------------------------------------- Warren side

def warren_create(template):
    """create (waiting for running) + first HTTP 200 through the gateway, in ms"""
    t0 = now()
    out = sh(["warrenctl", "--json", "create", template, "--wait"]).stdout
    d = json.loads(out)
    # the path form of the same route (Python's resolver does not know *.localhost)
    d["url"] = f"{GW}/s/{d['id']}/"
    if not wait_http(d["url"]):
        raise RuntimeError("no answer from " + d["url"])
    return (now() - t0) * 1000, d["id"]


def warren_destroy(sid):
    """reply time of Destroy and time until the sandbox's cgroup is gone, in ms"""
    t0 = now()
    sh(["warrenctl", "destroy", sid])
    t1 = now()
    while any(os.path.exists(f"/sys/fs/cgroup/{c}/warren/{sid}") for c in ("memory", "pids", "cpu")):
        time.sleep(0.002)
        if now() - t0 > 30:
            break
    return (t1 - t0) * 1000, (now() - t0) * 1000


# ---------------------------------------------------------------- plain runsc side

def netns_setup():
    # leftovers of an interrupted run
    if os.path.isdir(RUNSC_ROOT):
        for cid in sh(f"runsc --root={RUNSC_ROOT} list -quiet", check=False).stdout.split():
            for ns in [BENCH_NS] + [f"wbp{i}" for i in range(100)]:
                if sh(f"nsenter --net=/run/netns/{ns} runsc --root={RUNSC_ROOT} delete --force {cid}",
                      check=False).returncode == 0:
                    break
        shutil.rmtree("/run/warren-bench", ignore_errors=True)
    os.makedirs(RUNSC_ROOT, exist_ok=True)
    sh(f"ip netns del {BENCH_NS}", check=False)
    sh(f"ip link del wbh0", check=False)
    sh(f"ip netns add {BENCH_NS}")


def netns_fresh_veth():
    """gVisor takes the address away: plain runsc needs the namespace re-set each time (not timed)"""
    sh("ip link del wbh0", check=False)
    sh(f"ip link add wbh0 type veth peer name eth0 netns {BENCH_NS}")
    sh("ip addr add 10.250.250.1/30 dev wbh0 && ip link set wbh0 up")
    sh(f"ip -n {BENCH_NS} addr add 10.250.250.2/30 dev eth0 && ip -n {BENCH_NS} link set eth0 up "
       f"&& ip -n {BENCH_NS} link set lo up && ip -n {BENCH_NS} route add default via 10.250.250.1")


def plain_ns(i):
    """namespace wbp<i> with its veth, /30 and route, made with ip (not timed)"""
    sh(f"ip netns del wbp{i}; ip link del wbp{i}h", check=False)
    sh(f"ip netns add wbp{i} && ip link add wbp{i}h type veth peer name eth0 netns wbp{i} && "
       f"ip addr add 10.250.{i}.1/30 dev wbp{i}h && ip link set wbp{i}h up && "
       f"ip -n wbp{i} addr add 10.250.{i}.2/30 dev eth0 && ip -n wbp{i} link set eth0 up && "
       f"ip -n wbp{i} route add default via 10.250.{i}.1")


def plain_start(i, cid, *runsc_args, template="web"):
    """plain runsc (run or restore ...) of a template's bundle in namespace wbp<i>, until it answers"""
    b = bundle(template, cid, netns=f"wbp{i}")
    sh(runsc_cmd(*runsc_args, "--bundle", b, "--detach", cid).replace(f"netns/{BENCH_NS}", f"netns/wbp{i}"))
    if not wait_http(f"http://10.250.{i}.2:8080/", interval=0.005):
        raise RuntimeError(f"plain runsc {runsc_args[0]} did not answer")
    return cid


def plain_cleanup(cids):
    def one(i, cid):  # `runsc delete --force` takes ~1.5 s: in parallel (not timed)
        sh(f"nsenter --net=/run/netns/wbp{i} runsc --root={RUNSC_ROOT} delete --force {cid}", check=False)
        sh(f"ip netns del wbp{i}; ip link del wbp{i}h", check=False)
    with cf.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda a: one(*a), enumerate(cids)))


AGENT = os.environ.get("WARREN_AGENT", "/usr/local/libexec/warren/warren-agent")


def bundle(template, cid, netns=BENCH_NS):
    d = f"/run/warren-bench/bundles/{cid}"
    os.makedirs(d, exist_ok=True)
    argv = {"web": ["/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/www"],
            "app": ["/usr/bin/python3", "/app/app.py", "--port", "8080", "--heap-mib", "64"],
            "base": ["/bin/sleep", "infinity"]}[template]
    spec = {"ociVersion": "1.0.2",
            "process": {"user": {"uid": 0, "gid": 0}, "args": argv, "cwd": "/",
                        "env": ["PATH=/usr/bin:/bin"], "noNewPrivileges": True},
            "root": {"path": f"{TEMPLATES}/{template}/rootfs", "readonly": True},
            "hostname": cid,
            "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                       {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs"}]
            # Warren's gVisor sandboxes run the agent, bind-mounted read-only: a restore of their
            # image needs the same mount (runsc checks a restore's mounts against the image's)
            + ([{"destination": "/.warren/agent", "type": "bind", "source": AGENT,
                 "options": ["bind", "ro", "nosuid", "nodev"]}]
               if os.path.exists(f"{TEMPLATES}/{template}/rootfs/.warren/agent") else []),
            # the same job as Warren's: the template's memory limit, in a cgroup of its own
            "linux": {"namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"},
                                     {"type": "mount"},
                                     {"type": "network", "path": f"/run/netns/{netns}"}],
                      "resources": {"memory": {"limit": {"web": 64 << 20, "app": 512 << 20,
                                                         "base": 512 << 20}[template]}},
                      "cgroupsPath": f"/warren-bench/{cid}"}}
    with open(f"{d}/config.json", "w") as f:
        json.dump(spec, f)
    return d


def runsc_cmd(*args):
    return (f"nsenter --net=/run/netns/{BENCH_NS} unshare -m sh -c 'mount -t tmpfs none /proc/sys/net && exec "
            f"runsc --root={RUNSC_ROOT} --platform=ptrace --network=sandbox --overlay2=root:memory "
            + " ".join(args) + " >/dev/null 2>&1'")


def raw_create(template, cid):
    netns_fresh_veth()
    b = bundle(template, cid)
    t0 = now()
    sh(runsc_cmd("run", "--bundle", b, "--detach", cid))
    if not wait_http("http://10.250.250.2:8080/"):
        raise RuntimeError("plain runsc sandbox did not answer")
    return (now() - t0) * 1000


def raw_delete(cid):
    t0 = now()
    sh(f"nsenter --net=/run/netns/{BENCH_NS} runsc --root={RUNSC_ROOT} delete --force {cid}", check=False)
    return (now() - t0) * 1000


def ip_claim():
    """what a claim replaces: a namespace with veth, addresses and routes from 7 ip commands"""
    t0 = now()
    sh("ip netns add wbclaim && ip link add wbc0 type veth peer name eth0 netns wbclaim && "
       "ip addr add 10.250.251.1/30 dev wbc0 && ip link set wbc0 up && "
       "ip -n wbclaim addr add 10.250.251.2/30 dev eth0 && ip -n wbclaim link set eth0 up && "
       "ip -n wbclaim route add default via 10.250.251.1")
    t = (now() - t0) * 1000
    sh("ip netns del wbclaim; ip link del wbc0", check=False)
    return t


# ---------------------------------------------------------------- rows

def row(name, warren, base=None, base_name="", unit="ms", target=""):
    r = {"name": name, "n": len(warren), "p50": pct(warren, 50), "p90": pct(warren, 90),
         "unit": unit, "target": target}
    if base:
        r.update({"base_name": base_name, "base_p50": pct(base, 50), "base_p90": pct(base, 90),
                  "ratio": pct(warren, 50) / pct(base, 50)})
    print(f"  {name}: p50 {r['p50']:.1f} p90 {r['p90']:.1f} {unit}"
          + (f"  vs {base_name} p50 {r['base_p50']:.1f} (x{r['ratio']:.2f})" if base else ""),
          file=sys.stderr)
    return r


def bench(quick):
    n_web, n_app, n_claim = (3, 2, 20) if quick else (15, 6, 200)
    netns_setup()
    rows = []
    for template, n in (("web", n_web), ("app", n_app)):
        print(f"cold {template} x{n}", file=sys.stderr)
        w, b, dreply, dfull, rdel = [], [], [], [], []
        for i in range(n):
            ms, sid = warren_create(template)
            w.append(ms)
            rep, full = warren_destroy(sid)
            dreply.append(rep)
            dfull.append(full)
            cid = f"bench{template}{i:04d}"
            b.append(raw_create(template, cid))
            rdel.append(raw_delete(cid))
        rows.append(row(f"cold {template}: create -> first HTTP 200", w, b,
                        "plain `runsc run` -> first 200", target="<= 1.1x" if template == "web" else ""))
        if template == "web":
            rows.append(row("destroy: reply", dreply, target="<= 20 ms"))
            rows.append(row("destroy: full teardown", dfull, rdel, "`runsc delete --force` until it "
                            "returns (Warren's is timed until the sandbox's cgroup is gone)"))
    print("20 web at once", file=sys.stderr)
    par_w, par_b = [], []
    for rnd in range(1 if quick else 3):
        t0 = now()
        with cf.ThreadPoolExecutor(20) as ex:
            ids = [sid for _, sid in ex.map(lambda _: warren_create("web"), range(20))]
        par_w.append((now() - t0) * 1000)
        with cf.ThreadPoolExecutor(20) as ex:
            list(ex.map(lambda s: warren_destroy(s), ids))
        # plain runsc: 20 sandboxes in 20 namespaces made beforehand, started at once
        for i in range(20):
            plain_ns(i)
        t0 = now()
        with cf.ThreadPoolExecutor(20) as ex:
            cids = list(ex.map(lambda i: plain_start(i, f"benchpar{rnd}{i:03d}", "run"), range(20)))
        par_b.append((now() - t0) * 1000)
        plain_cleanup(cids)
    rows.append(row("20 web creates at once, all answering", par_w, par_b, "20 plain `runsc run` at once"))
    print("claim", file=sys.stderr)
    out = sh([os.path.join(ROOT, "build", "bench-claim"), "/run/warren/netnsd.sock", str(n_claim)]).stdout
    claims = [int(x) / 1000 for x in out.split()]
    ipc = [ip_claim() for _ in range(10 if quick else 30)]
    rows.append(row("namespace claim", claims, ipc, "a namespace built with 7 `ip` commands (not the same "
                    "job: what a claim from the pre-built pool replaces)", target="<= 1 ms"))
    print("thaw on request", file=sys.stderr)
    _, sid = warren_create("web")
    url = f"{GW}/s/{sid}/"
    thaw, warm = [], []
    for _ in range(5 if quick else 20):
        t0 = now()
        must_http(url, f"running {sid}", interval=0.001)
        warm.append((now() - t0) * 1000)
        sh(["warrenctl", "freeze", sid])
        t0 = now()
        must_http(url, f"frozen {sid}", interval=0.001)
        thaw.append((now() - t0) * 1000)
    warren_destroy(sid)
    rows.append(row("frozen web: request -> 200 (thaw on demand)", thaw, warm, "same request, not frozen"))
    rows += bench_snapshot(quick)
    rows += bench_reclaim(quick)
    rows += bench_microvm(quick)
    rows += bench_e2b(quick)
    sh(f"ip netns del {BENCH_NS}; ip link del wbh0", check=False)
    shutil.rmtree("/run/warren-bench", ignore_errors=True)
    return rows


def prop(path, iface, name):
    out = sh(["busctl", "get-property", "org.warren.Warren1", path, iface, name]).stdout.split(" ", 1)
    return out[1].strip().strip('"')  # a string's quotes off; an empty string is ""


def sandbox_prop(sid, name):
    return prop(f"/org/warren/Warren1/sandbox/{sid}", "org.warren.Warren1.Sandbox", name)


def check_image(sid, tag):
    """a warm or standby create must have restored the warm image (its Image property)"""
    image = sandbox_prop(sid, "Image")
    if image != tag:
        raise RuntimeError(f"sandbox {sid} was not restored from {tag} (Image '{image}')")


STATE_DIR = "/var/lib/warren/state"


def ready_standbys(template, backend):
    """ids of the standby sandboxes of a template that a create can take now (the supervisor's
    records: standby=1, running)"""
    ids = set()
    d = f"{STATE_DIR}/sandboxes"
    for name in os.listdir(d):
        try:
            kv = dict(l.split("=", 1) for l in open(f"{d}/{name}").read().splitlines() if "=" in l)
        except OSError:
            continue  # removed meanwhile
        if (kv.get("template"), kv.get("backend"), kv.get("standby"), kv.get("state")) == \
                (template, backend, "1", "running"):
            ids.add(kv["id"])
    return ids


def standby_create(template, backend, create):
    """wait for a ready standby (not timed), then create(template) -> (ms, id); the create must
    have taken one of the standbys that were ready (a taken standby keeps its id)"""
    ready = set()

    def have():
        ready.update(ready_standbys(template, backend))
        return bool(ready)
    wait_until(f"a ready standby {backend} sandbox of {template}", have, 120, 0.05)
    ms, sid = create(template)
    if sid not in ready:
        raise RuntimeError(f"create of {template} gave {sid}, not one of its standbys {sorted(ready)}")
    return ms, sid


def touch(sid):
    t0 = now()
    with urllib.request.urlopen(f"{GW}/s/{sid}/touch", timeout=120) as r:
        d = json.loads(r.read())
    return (now() - t0) * 1000, d["ms"]


def bench_reclaim(quick):
    """The seed's G1/G2 rows: app with a 376 MiB heap, frozen and reclaimed; held memory before
    and after, and the time to touch the heap back after the thaw with the reclaimed pages in
    zswap, on this disk's swap, and on swap reads capped at 110 MB/s (the seed's disk)."""
    n = 2 if quick else 5
    sh(["busctl", "call", "org.warren.Warren1", "/org/warren/Warren1", "org.warren.Warren1.Manager",
        "AddTemplate", "ssasqta{sv}", "--", "app376", f"{TEMPLATES}/app/rootfs", "6", "/usr/bin/python3",
        "/app/app.py", "--port", "8080", "--heap-mib", "376", "8080", str(1 << 30), "0"], check=False)
    swapfile = "/var/lib/warren/reclaim/swapfile"
    res = {"held_before": [], "held_after": [], "resident": []}
    modes = [("zswap", True, 0), ("disk", False, 0), ("disk110", False, 110 * 1000 * 1000)]
    for mode, zswap, cap in modes:
        print(f"reclaim {mode} x{n}", file=sys.stderr)
        sh(["warrenctl", "reclaim", "setup", "2048"] + ([] if zswap else ["--no-zswap"]))
        res[mode] = []
        for _ in range(n):
            _, sid = warren_create("app376")
            touch(sid)
            if mode == "zswap":
                res["resident"].append(touch(sid)[0])
            before = int(sandbox_prop(sid, "MemoryCurrent"))
            if cap:
                st = os.stat(swapfile)
                dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
                with open(f"/sys/fs/cgroup/blkio/warren/{sid}/blkio.throttle.read_bps_device", "w") as f:
                    f.write(f"{dev} {cap}")
            sh(["warrenctl", "freeze", sid])
            wait_until(f"the reclaim of frozen {sid}",
                       lambda: int(sandbox_prop(sid, "ReclaimedBytes")) > 0, 20, 0.05)
            after = int(sandbox_prop(sid, "MemoryCurrent"))
            if mode == "zswap":
                res["held_before"].append(before / 2**20)
                res["held_after"].append(after / 2**20)
            res[mode].append(touch(sid)[0])
            warren_destroy(sid)
    sh(["warrenctl", "reclaim", "setup", "1024"])
    rows = [row("app 376 MiB heap: memory held after freeze + reclaim", res["held_after"],
                res["held_before"], "held before, running", unit="MiB", target="<= 0.30x"),
            row("same: thaw + touch all 376 MiB back, pages in zswap", res["zswap"], res["disk"],
                "same, pages on this disk's swap", target="<= 0.1x"),
            row("same, pages in zswap (again)", res["zswap"], res["disk110"],
                "same, swap reads capped at 110 MB/s (seed's disk)", target="<= 0.1x"),
            row("same: touch all 376 MiB, never reclaimed", res["resident"])]
    return rows


def remove_template(name):
    """RemoveTemplate (and so its warm images), once no standby of it is still restoring"""
    wait_until(f"RemoveTemplate {name}",
               lambda: sh(["warrenctl", "rmtemplate", name], check=False).returncode == 0, 30, 0.2)


def fork_vs_plain(tag, count, cid_prefix, template="web", timeout=60, interval=0.005):
    """ForkTag(tag, count) until every child answers through the gateway, then `count` plain
    `runsc restore`s of the same image at once into namespaces made beforehand; (Warren ms,
    plain ms); a child that does not answer fails the run"""
    t0 = now()
    ids = sh(["warrenctl", "fork", tag, str(count)]).stdout.split()
    with cf.ThreadPoolExecutor(count) as ex:
        ok = list(ex.map(lambda i: wait_http(f"{GW}/s/{i}/", timeout=timeout,
                                             interval=interval), ids))
    if len(ids) != count or not all(ok):
        raise RuntimeError(f"fork of {count} from {tag}: {len(ids)} children, "
                           f"{ok.count(False)} did not answer in {timeout} s")
    w = (now() - t0) * 1000
    with cf.ThreadPoolExecutor(8) as ex:
        list(ex.map(warren_destroy, ids))
    for i in range(count):
        plain_ns(i)
    src = f"{IMAGES}/{tag}"
    if os.path.exists(f"{src}/checkpoint.img.zst"):
        # snapshotd compressed the tag (its store disk measured slower than --compress-below):
        # Warren's restores read its decompressed copy in the tmpfs cache, so the baseline
        # reads a decompressed copy too, made here before the clock starts
        src = f"/run/warren-bench/img-{tag}"
        os.makedirs(src, exist_ok=True)
        sh(f"zstd -q -d -f {IMAGES}/{tag}/checkpoint.img.zst -o {src}/checkpoint.img")
    image = f"--image-path={src}"
    t0 = now()
    with cf.ThreadPoolExecutor(count) as ex:
        cids = list(ex.map(lambda i: plain_start(i, f"{cid_prefix}{i:03d}", "restore", image,
                                                 template=template), range(count)))
    b = (now() - t0) * 1000
    plain_cleanup(cids)
    if src.startswith("/run/warren-bench/img-"):
        sh(["rm", "-rf", src])
    return w, b


def bench_snapshot(quick):
    """Seed rows G5/G6/B1 on gVisor: fork of a tag (all children answering) against plain
    runsc restores of the same image, and the pause of a snapshotted (branched) parent."""
    rounds = 1 if quick else 5
    fork_w, fork_b, pause, one_w, one_b, f20_w, f20_b = [], [], [], [], [], [], []
    _, parent = warren_create("web")
    for rnd in range(rounds):
        tag = f"bench{rnd}{int(time.time()) % 100000}"
        t0 = now()
        sh(["warrenctl", "snapshot", parent, tag])
        must_http(f"{GW}/s/{parent}/", f"snapshotted parent {parent}", interval=0.002)
        pause.append((now() - t0) * 1000)
        for count, dest, base in ((5, fork_w, fork_b), (1, one_w, one_b), (20, f20_w, f20_b)):
            w, b = fork_vs_plain(tag, count, f"benchrs{rnd}{count}")
            dest.append(w)
            base.append(b)
        sh(["warrenctl", "rmtag", tag])
    # fork of 100 (the seed's 3.7 s): needs a pool of 101 slots (the default is one per 128 MiB)
    f100_w, f100_b = [], []
    for rnd in range(1 if quick else 2):
        tag = f"bench100{rnd}{int(time.time()) % 100000}"
        sh(["warrenctl", "snapshot", parent, tag])
        must_http(f"{GW}/s/{parent}/", f"snapshotted parent {parent}", interval=0.005)
        w, b = fork_vs_plain(tag, 100, f"benchrh{rnd}", timeout=120, interval=0.01)
        f100_w.append(w)
        f100_b.append(b)
        sh(["warrenctl", "rmtag", tag])
    # branch: the parent goes on, children from the image just written, all answering
    branch_w = []
    for rnd in range(1 if quick else 3):
        tag = f"benchbr{rnd}{int(time.time()) % 100000}"
        # the last branch restored the parent: it must run again first
        wait_until(f"the branched parent {parent} running",
                   lambda: sandbox_prop(parent, "State") == "running", 60, 0.05)
        t0 = now()
        out = sh(["busctl", "call", "org.warren.Warren1", "/org/warren/Warren1",
                  "org.warren.Warren1.Manager", "BranchSandbox", "ssu", parent, tag, "3"]).stdout
        ids = re.findall(r'"([0-9a-f]{12})"', out)
        with cf.ThreadPoolExecutor(4) as ex:
            ok = list(ex.map(lambda i: wait_http(f"{GW}/s/{i}/", interval=0.005),
                             ids + [parent]))
        if len(ids) != 3 or not all(ok):
            raise RuntimeError(f"branch of {parent} into 3: {len(ids)} children, {ok.count(False)} "
                               "of them and the parent did not answer")
        branch_w.append((now() - t0) * 1000)
        for i in ids:
            warren_destroy(i)
        sh(["warrenctl", "rmtag", tag])
    warren_destroy(parent)
    # fork of 10 app children (Python, 64 MiB heap) against 10 plain restores of the image
    app_w, app_b = [], []
    _, aparent = warren_create("app")
    for rnd in range(1 if quick else 2):
        tag = f"benchapp{rnd}{int(time.time()) % 100000}"
        sh(["warrenctl", "snapshot", aparent, tag])
        must_http(f"{GW}/s/{aparent}/", f"snapshotted parent {aparent}", interval=0.005)
        w, b = fork_vs_plain(tag, 10, f"benchra{rnd}", template="app", timeout=120, interval=0.01)
        app_w.append(w)
        app_b.append(b)
        sh(["warrenctl", "rmtag", tag])
    warren_destroy(aparent)
    # warm template: the same web app, restored from its warm image on every create
    sh(["busctl", "call", "org.warren.Warren1", "/org/warren/Warren1", "org.warren.Warren1.Manager",
        "AddTemplate", "ssasqta{sv}", "--", "warmweb", f"{TEMPLATES}/web/rootfs", "7", "/bin/busybox",
        "httpd", "-f", "-p", "8080", "-h", "/www", "8080", str(64 << 20), "1", "warm", "b", "true"],
       check=False)
    _, sid = warren_create("warmweb")  # the first is cold and makes the image
    warren_destroy(sid)
    wait_until("the warm image warm-warmweb",
               lambda: "warm-warmweb" in sh(["warrenctl", "tags"]).stdout, 60)
    warm_w, warm_b = [], []
    for i in range(3 if quick else 10):
        ms, sid = warren_create("warmweb")
        check_image(sid, "warm-warmweb")
        warm_w.append(ms)
        warren_destroy(sid)
        plain_ns(0)
        t0 = now()
        cid = plain_start(0, f"benchwarm{i:03d}", "restore", f"--image-path={IMAGES}/warm-warmweb")
        warm_b.append((now() - t0) * 1000)
        plain_cleanup([cid])
    # standby sandboxes: the same warm template keeping one restored ahead
    sh(["busctl", "call", "org.warren.Warren1", "/org/warren/Warren1", "org.warren.Warren1.Manager",
        "AddTemplate", "ssasqta{sv}", "--", "standbyweb", f"{TEMPLATES}/web/rootfs", "7", "/bin/busybox",
        "httpd", "-f", "-p", "8080", "-h", "/www", "8080", str(64 << 20), "2", "warm", "b", "true",
        "standby", "u", "1"], check=False)
    _, sid = warren_create("standbyweb")  # cold; makes the image
    warren_destroy(sid)
    wait_until("the warm image warm-standbyweb",
               lambda: "warm-standbyweb" in sh(["warrenctl", "tags"]).stdout, 60)
    _, sid = warren_create("standbyweb")  # restores, and restores a standby behind it
    check_image(sid, "warm-standbyweb")
    warren_destroy(sid)
    standby_w = []
    for i in range(3 if quick else 10):
        # the standby taken last time is replaced (a restore: ~200 ms), not timed
        ms, sid = standby_create("standbyweb", "gvisor", warren_create)
        check_image(sid, "warm-standbyweb")
        standby_w.append(ms)
        warren_destroy(sid)
    remove_template("warmweb")
    remove_template("standbyweb")
    rows = [row("warm web: create -> first HTTP 200", warm_w, warm_b,
                "plain `runsc restore` of the same image", target="<= 100 ms"),
            row("warm web, standby=1: create -> first HTTP 200", standby_w, warm_b,
                "plain `runsc restore` of the same image (not the same job: the standby was "
                "restored before the create)", target="<= 100 ms")]
    return rows + [row("fork of a web tag: 1 child answering", one_w, one_b, "plain `runsc restore` of the image"),
            row("fork of a web tag: 5 children answering", fork_w, fork_b, "5 plain `runsc restore` at once"),
            row("fork of a web tag: 20 children answering", f20_w, f20_b, "20 plain `runsc restore` at once",
                target="<= 0.5x"),
            row("fork of a web tag: 100 children answering", f100_w, f100_b,
                "100 plain `runsc restore` at once", target="<= 3.7 s"),
            row("branch/snapshot: parent pause (checkpoint -> answers again)", pause, target="<= 80 ms"),
            row("branch of a web sandbox into 3: parent and children all answering", branch_w),
            row("fork of an app tag: 10 children answering", app_w, app_b, "10 plain `runsc restore` at once")]


def bench_fork(quick):
    """Only the web fork rows (1, 5, 20, 100 children against as many plain restores, same run):
    the fork of 100 on its own takes minutes, the whole snapshot part half an hour"""
    rounds = 1 if quick else 5
    res = {n: ([], []) for n in (1, 5, 20, 100)}
    _, parent = warren_create("web")
    for rnd in range(rounds):
        for count in (1, 5, 20, 100):
            if count == 100 and rnd >= (1 if quick else 2):
                continue
            tag = f"benchf{rnd}{count}{int(time.time()) % 100000}"
            sh(["warrenctl", "snapshot", parent, tag])
            must_http(f"{GW}/s/{parent}/", f"snapshotted parent {parent}",
                      interval=0.005)
            w, b = fork_vs_plain(tag, count, f"benchrf{rnd}{count}",
                                 timeout=120 if count == 100 else 60,
                                 interval=0.01 if count == 100 else 0.005)
            print(f"  round {rnd} fork of {count}: {w:.0f} ms, plain {b:.0f} ms (x{w / b:.2f}), "
                  f"load {os.getloadavg()[0]:.2f}", file=sys.stderr)
            res[count][0].append(w)
            res[count][1].append(b)
            sh(["warrenctl", "rmtag", tag])
    warren_destroy(parent)
    return [row("fork of a web tag: 1 child answering", *res[1], "plain `runsc restore` of the image"),
            row("fork of a web tag: 5 children answering", *res[5], "5 plain `runsc restore` at once"),
            row("fork of a web tag: 20 children answering", *res[20],
                "20 plain `runsc restore` at once", target="<= 0.5x"),
            row("fork of a web tag: 100 children answering", *res[100],
                "100 plain `runsc restore` at once", target="<= 3.7 s")]


# ---------------------------------------------------------------- microVM (qemu driver, TCG here)

VM_KERNEL = "/var/lib/warren/vm/vmlinuz"
VM_INITRD = f"{TEMPLATES}/web/vm-initramfs.cpio"
SEED_BOOT_OPTS = "quiet i8042.noaux i8042.nomux i8042.nopnp i8042.dumbkbd"


def warren_create_vm():
    t0 = now()
    out = sh(["warrenctl", "--json", "create", "web", "--wait", "--backend=microvm"]).stdout
    d = json.loads(out)
    url = f"{GW}/s/{d['id']}/"
    if not wait_http(url, interval=0.005):
        raise RuntimeError("no answer from " + url)
    return (now() - t0) * 1000, d["id"]


def raw_qemu(port, ram, state=None, boot_opts=SEED_BOOT_OPTS, tag="raw"):
    """The baseline: QEMU started by hand with the same machine, kernel and initramfs, its port
    forwarded on 127.0.0.1 (no namespace, cgroup, agent requests or gateway)."""
    hexs = lambda v: "".join(c.encode().hex() + "00" for c in v)
    khz = int(float(re.search(r"cpu MHz\s*:\s*([0-9.]+)", open("/proc/cpuinfo").read()).group(1)) * 1000)
    argv = ["/usr/bin/qemu-system-x86_64", "-M", "microvm,x-option-roms=off,pit=on,pic=on,rtc=on,memory-backend=ram",
            "-accel", "tcg,thread=single", "-cpu", "max", "-smp", "1", "-m", "128m",
            "-object", f"memory-backend-file,id=ram,size=128m,mem-path={ram},share={'off' if state else 'on'}",
            "-nodefaults", "-no-user-config", "-nographic", "-no-reboot", "-kernel", VM_KERNEL,
            "-initrd", VM_INITRD, "-append",
            f"tsc_early_khz={khz} panic=-1 init_on_free=1 {boot_opts} warren.argv="
            + hexs(["/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/www"]) + " warren.env=" + hexs(["PATH=/bin"]),
            "-netdev", f"user,id=n0,net=10.0.2.0/24,host=10.0.2.2,hostfwd=tcp:127.0.0.1:{port}-10.0.2.15:8080",
            "-device", "virtio-net-device,netdev=n0", "-serial", "none",
            # the same devices as Warren's VMs, or a Warren image would not load
            "-device", "virtio-serial-device",
            "-chardev", f"socket,id=agent,path=/run/warren-bench/{tag}.agent,server=on,wait=off",
            "-device", "virtserialport,chardev=agent,name=org.warren.agent",
            "-qmp", f"unix:/run/warren-bench/{tag}.qmp,server=on,wait=off"]
    if state:
        argv += ["-incoming", "defer"]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def qmp(path, *cmds):
    import socket
    end = now() + 10
    while True:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            break
        except OSError:
            if now() > end:
                raise
            time.sleep(0.001)
    f = s.makefile("rw")
    f.readline()
    out = []
    for c in ({"execute": "qmp_capabilities"},) + cmds:
        f.write(json.dumps(c) + "\n")
        f.flush()
        while True:
            line = json.loads(f.readline())
            if "return" in line or "error" in line:
                out.append(line)
                break
    s.close()
    return out


def raw_restore(port, image, tag):
    """Plain QEMU restore of a Warren microVM image: RAM file mapped private + device state."""
    p = raw_qemu(port, f"{image}/ram", state=True, tag=tag)
    qmp(f"/run/warren-bench/{tag}.qmp",
        {"execute": "migrate-set-capabilities",
         "arguments": {"capabilities": [{"capability": "x-ignore-shared", "state": True}]}},
        {"execute": "migrate-incoming", "arguments": {"uri": f"exec:cat {image}/state"}})
    end = now() + 30
    while now() < end:
        st = qmp(f"/run/warren-bench/{tag}.qmp", {"execute": "query-migrate"})[-1]
        if st.get("return", {}).get("status") == "completed":
            break
        time.sleep(0.001)
    qmp(f"/run/warren-bench/{tag}.qmp", {"execute": "cont"})
    return p


def stop(p):
    p.kill()
    p.wait()


def not_answering(url, action):
    """the longest gap between answers from url (polled back to back) while action runs, in ms"""
    gaps, stop_poll = [], [False]

    def poll():
        last = now()
        while not stop_poll[0]:
            if wait_http(url, timeout=5, interval=0.001):
                t = now()
                gaps.append((t - last) * 1000)
                last = t
    with cf.ThreadPoolExecutor(1) as ex:
        fut = ex.submit(poll)
        time.sleep(0.2)
        action()
        time.sleep(0.3)
        stop_poll[0] = True
        fut.result()
    return max(gaps)


def vmm_pss_mib(sid):
    """proportional set size of a sandbox's VMM (shared page cache split among its mappers)"""
    pids = sh(["pgrep", "-f", f"qemu-system.*/bundles/{sid}/"], check=False).stdout.split()
    with open(f"/proc/{pids[0]}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def bench_microvm(quick):
    """Seed rows F1-F11 and B1-B3 through the qemu driver under TCG (no KVM here)."""
    os.makedirs("/run/warren-bench", exist_ok=True)
    rows = []
    n = 2 if quick else 5
    # cold boot, Warren vs raw QEMU; and the seed's boot options on/off (raw harness, same run)
    cold_w, cold_b, no_opts = [], [], []
    for i in range(n):
        ms, sid = warren_create_vm()
        cold_w.append(ms)
        warren_destroy(sid)
        for opts, dest in ((SEED_BOOT_OPTS, cold_b), ("", no_opts)):
            ram = f"/dev/shm/warren-bench-{i}.ram"
            open(ram, "w").truncate(128 << 20)
            t0 = now()
            p = raw_qemu(18900, ram, boot_opts=opts)
            if not wait_http("http://127.0.0.1:18900/", timeout=120, interval=0.005):
                stop(p)
                raise RuntimeError(f"plain QEMU (boot options '{opts}') did not answer in 120 s")
            dest.append((now() - t0) * 1000)
            stop(p)
            os.unlink(ram)
    rows.append(row("microVM cold web: create -> first HTTP 200 (TCG)", cold_w, cold_b,
                    "plain QEMU boot, same kernel/initramfs/options"))
    # both sides are plain QEMU (Warren's netnsd takes its options at start): this row measures
    # what the options buy, not Warren; test-microvm.sh checks Warren passes them to the guest
    rows.append(row("microVM boot options (quiet, i8042.*), plain QEMU both sides: boot -> HTTP 200 "
                    "with them", cold_b, no_opts, "the same plain QEMU boot without them"))
    # a tag of a running VM: the parent's pause, then forks
    _, parent = warren_create_vm()
    purl = f"{GW}/s/{parent}/"
    pause, one_w, one_b, ten_w, twenty_w = [], [], [], [], []
    child_pause, pss_clone, pss_parent = [], [], []
    size = None
    for rnd in range(1 if quick else 3):
        tag = f"benchvm{rnd}{int(time.time()) % 100000}"
        pause.append(not_answering(purl, lambda: sh(["warrenctl", "snapshot", parent, tag])))
        image = f"{IMAGES}/{tag}"
        size = sum(os.stat(f"{image}/{f}").st_blocks * 512 for f in os.listdir(image))
        for count, dest in ((1, one_w), (10, ten_w)) + (((20, twenty_w),) if not quick else ()):
            t0 = now()
            ids = sh(["warrenctl", "fork", tag, str(count)]).stdout.split()
            with cf.ThreadPoolExecutor(count) as ex:
                ok = all(ex.map(lambda i: wait_http(f"{GW}/s/{i}/", timeout=120,
                                                     interval=0.005), ids))
            if len(ids) != count or not ok:
                raise RuntimeError(f"microVM fork of {count} from {tag}: {len(ids)} children, "
                                   "not all answering in 120 s")
            dest.append((now() - t0) * 1000)
            if count == 1:  # a restored VM branched: write tracking, then QEMU's own stream
                c = ids[0]
                child_pause.append(not_answering(f"{GW}/s/{c}/",
                                                 lambda: sh(["warrenctl", "snapshot", c, tag + "c"])))
                sh(["warrenctl", "rmtag", tag + "c"])
            if count == 10:
                pss_clone += [vmm_pss_mib(i) for i in ids]
                pss_parent.append(vmm_pss_mib(parent))
            for i in ids:
                warren_destroy(i)
        for i in range(2):
            t0 = now()
            p = raw_restore(18901, image, f"rr{i}")
            if not wait_http("http://127.0.0.1:18901/", timeout=60, interval=0.002):
                stop(p)
                raise RuntimeError(f"plain QEMU restore of {image} did not answer in 60 s")
            one_b.append((now() - t0) * 1000)
            stop(p)
        sh(["warrenctl", "rmtag", tag])
    warren_destroy(parent)
    rows.append(row("microVM fork of a web tag: 1 child answering (restore)", one_w, one_b,
                    "plain QEMU restore of the same image", target="<= 150 ms (TCG)"))
    # warm template with a standby microVM restored ahead: the create takes it
    sh(["busctl", "call", "org.warren.Warren1", "/org/warren/Warren1", "org.warren.Warren1.Manager",
        "AddTemplate", "ssasqta{sv}", "--", "standbyweb", f"{TEMPLATES}/web/rootfs", "7", "/bin/busybox",
        "httpd", "-f", "-p", "8080", "-h", "/www", "8080", str(64 << 20), "2", "warm", "b", "true",
        "standby", "u", "1"], check=False)

    def create_vm(template):
        t0 = now()
        d = json.loads(sh(["warrenctl", "--json", "create", template, "--wait", "--backend=microvm"]).stdout)
        if not wait_http(f"{GW}/s/{d['id']}/", timeout=120, interval=0.005):
            raise RuntimeError(f"microVM {d['id']} of {template} did not answer in 120 s")
        return (now() - t0) * 1000, d["id"]
    _, sid = create_vm("standbyweb")  # cold; makes warm-standbyweb-vm
    warren_destroy(sid)
    wait_until("the warm image warm-standbyweb-vm",
               lambda: "warm-standbyweb-vm" in sh(["warrenctl", "tags"]).stdout, 120, 0.2)
    _, sid = create_vm("standbyweb")  # restores, and a standby behind it
    check_image(sid, "warm-standbyweb-vm")
    warren_destroy(sid)
    sb_w = []
    for i in range(3 if quick else 8):
        # the standby taken last time is replaced (a restore: ~0.3 s under TCG), not timed
        ms, sid = standby_create("standbyweb", "microvm", create_vm)
        check_image(sid, "warm-standbyweb-vm")
        sb_w.append(ms)
        warren_destroy(sid)
    remove_template("standbyweb")
    rows.append(row("microVM warm web, standby=1: create -> first HTTP 200", sb_w, one_b,
                    "plain QEMU restore of a web tag (not the same job: the standby was restored "
                    "before the create)", target="<= 150 ms (TCG)"))
    rows.append(row("microVM fork of a web tag: 10 children answering", ten_w))
    if twenty_w:
        rows.append(row("microVM fork of a web tag: 20 children answering", twenty_w, target="<= 2 s"))
    rows.append(row("microVM snapshot/branch: parent not answering (pause, resumes in place)", pause,
                    target="<= 40 ms + dirty pages"))
    rows.append(row("microVM branch of a restored child (write tracking): child not answering",
                    child_pause, target="<= 40 ms + dirty pages"))
    rows.append(row("microVM memory per clone: VMM PSS, 10 clones of a web tag", pss_clone, pss_parent,
                    "the cold-booted parent (its RAM its own)", unit="MiB"))
    if size:
        rows.append(row("microVM web image on disk (state + non-zero RAM pages)", [size / 2**20], unit="MiB"))
    # the app template (Python, 64 MiB heap) from its read-only root disk
    app_cold, app_fork = [], []
    for i in range(2 if quick else 3):
        ms, sid = create_vm("app")
        app_cold.append(ms)
        d = {"id": sid}
        tag = f"benchvmapp{i}{int(time.time()) % 100000}"
        sh(["warrenctl", "snapshot", d["id"], tag])
        t0 = now()
        kids = sh(["warrenctl", "fork", tag, "1"]).stdout.split()
        if len(kids) != 1 or not wait_http(f"{GW}/s/{kids[0]}/", timeout=120,
                                           interval=0.005):
            raise RuntimeError(f"microVM fork of 1 from {tag}: {kids}, no child answering in 120 s")
        kid = kids[0]
        app_fork.append((now() - t0) * 1000)
        warren_destroy(kid)
        warren_destroy(d["id"])
        sh(["warrenctl", "rmtag", tag])
    rows.append(row("microVM cold app (Python, root disk): create -> first HTTP 200", app_cold))
    rows += bench_compression(quick)
    rows.append(row("microVM fork of an app tag: 1 child answering", app_fork, target="<= 150 ms (TCG)"))
    # warm app (no standby): the first create boots cold and makes warm-warmapp-vm, later
    # creates restore it
    sh(["busctl", "call", "org.warren.Warren1", "/org/warren/Warren1", "org.warren.Warren1.Manager",
        "AddTemplate", "ssasqta{sv}", "--", "warmapp", f"{TEMPLATES}/app/rootfs", "6",
        "/usr/bin/python3", "/app/app.py", "--port", "8080", "--heap-mib", "64", "8080",
        str(512 << 20), "1", "warm", "b", "true"], check=False)
    _, sid = create_vm("warmapp")
    warren_destroy(sid)
    wait_until("the warm image warm-warmapp-vm",
               lambda: "warm-warmapp-vm" in sh(["warrenctl", "tags"]).stdout, 120, 0.2)
    warm_app = []
    for i in range(2 if quick else 3):
        ms, sid = create_vm("warmapp")
        check_image(sid, "warm-warmapp-vm")
        warm_app.append(ms)
        warren_destroy(sid)
    remove_template("warmapp")
    rows.append(row("microVM warm app: create -> first HTTP 200 (restore of the warm image)", warm_app,
                    app_fork, "Warren's own fork of 1 from an app tag (a Warren restore as well: no "
                    "plain-QEMU baseline for a root-disk VM)", target="<= 150 ms (TCG)"))
    # branch of a running web VM into 3: the parent resumes in place, children restored
    branch = []
    _, bp = warren_create_vm()
    for rnd in range(1 if quick else 3):
        tag = f"benchvmbr{rnd}{int(time.time()) % 100000}"
        t0 = now()
        out = sh(["busctl", "call", "org.warren.Warren1", "/org/warren/Warren1",
                  "org.warren.Warren1.Manager", "BranchSandbox", "ssu", bp, tag, "3"]).stdout
        ids = re.findall(r'"([0-9a-f]{12})"', out)
        with cf.ThreadPoolExecutor(4) as ex:
            ok = all(ex.map(lambda i: wait_http(f"{GW}/s/{i}/", timeout=120,
                                                 interval=0.005), ids + [bp]))
        if not ok or len(ids) != 3:
            raise RuntimeError(f"microVM branch of {bp} into 3: {len(ids)} children, not all "
                               "answering in 120 s")
        branch.append((now() - t0) * 1000)
        for i in ids:
            warren_destroy(i)
        sh(["warrenctl", "rmtag", tag])
    warren_destroy(bp)
    rows.append(row("microVM branch of a web VM into 3: parent and children all answering", branch))
    return rows


def bench_compression(quick):
    """zstd tag images: what the policy buys and costs on this disk. snapshotd compresses when
    its cached disk speed (<store>/.disk-speed) is under 500 MB/s; the bench writes a slow
    figure there to take one compressed app VM tag, then puts the file back."""
    store = IMAGES
    speed = os.path.join(store, ".disk-speed")
    saved = open(speed).read() if os.path.exists(speed) else None
    d = json.loads(sh(["warrenctl", "--json", "create", "app", "--wait", "--backend=microvm"]).stdout)
    must_http(f"{GW}/s/{d['id']}/", f"app microVM {d['id']}", timeout=120, interval=0.01)
    stamp = int(time.time()) % 100000
    plain, zstd = f"benchplain{stamp}", f"benchzstd{stamp}"
    sh(["warrenctl", "snapshot", d["id"], plain])
    try:
        with open(speed, "w") as f:
            f.write(f"{os.stat(store).st_dev} 100\n")
        sh(["warrenctl", "snapshot", d["id"], zstd])
    finally:
        if saved is None:
            os.unlink(speed)
        else:
            open(speed, "w").write(saved)
    warren_destroy(d["id"])
    size = lambda t: sum(os.stat(f"{store}/{t}/{f}").st_blocks * 512 for f in os.listdir(f"{store}/{t}"))
    t_plain, t_zstd = [], []
    for i in range(2 if quick else 3):
        for tag, dest in ((plain, t_plain), (zstd, t_zstd)):
            shutil.rmtree(f"/dev/shm/warren-images", ignore_errors=True)  # decompress again
            sh("sync; echo 3 > /proc/sys/vm/drop_caches")
            t0 = now()
            kid = sh(["warrenctl", "fork", tag, "1"]).stdout.split()[0]
            must_http(f"{GW}/s/{kid}/", f"child {kid} of {tag}", timeout=120,
                      interval=0.005)
            dest.append((now() - t0) * 1000)
            warren_destroy(kid)
    rows = [row("microVM app tag on disk: zstd", [size(zstd) / 2**20], [size(plain) / 2**20],
                "the same tag uncompressed", unit="MiB", target="<= 25%"),
            row("microVM app fork after dropping the page cache: zstd tag", t_zstd, t_plain,
                "the same tag uncompressed (this disk: ~1 GB/s)")]
    sh(["warrenctl", "rmtag", plain])
    sh(["warrenctl", "rmtag", zstd])
    return rows

# ---------------------------------------------------------------- E2B API (issue 13)

E2B_API = os.environ.get("E2B_API_URL", "http://127.0.0.1:8302")


def e2b_node(env, mode, n, **extra):
    """bench/e2b-bench.mjs in MODE, its JSON lines by label"""
    e = dict(os.environ, **env, MODE=mode, N=str(n), **extra)
    out = subprocess.run(["node", os.path.join(ROOT, "bench/e2b-bench.mjs")], env=e, check=True,
                         capture_output=True, text=True).stdout
    return {d["label"]: d for d in map(json.loads, out.splitlines())}


def plain_exec(cid, *cmd, flags=(), stdin=None, stdout=subprocess.DEVNULL):
    """`runsc exec [flags]` in a plain container, as its own root (not timed here)"""
    subprocess.run(["nsenter", f"--net=/run/netns/{BENCH_NS}", "runsc", f"--root={RUNSC_ROOT}",
                    "exec", *flags, cid, *cmd], stdin=stdin, stdout=stdout, check=True)


def bench_e2b(quick):
    """the SDK's create -> first command (cold, warm, standby), a command's round trip and 100 MiB
    each way, against plain runsc doing the same: run + exec, exec, exec with cat"""
    n, n_run, n_xfer = (2, 10, 1) if quick else (10, 50, 3)
    rows = []
    netns_setup()
    if not os.path.isdir(os.path.join(ROOT, "tests/e2b/node_modules/e2b")):
        sh("cd tests/e2b && npm ci --no-audit --no-fund", cwd=ROOT)
    key = json.loads(sh(["warrenctl", "--json", "apikey", "create", "bench-py"]).stdout)
    env = {"E2B_API_URL": E2B_API, "E2B_SANDBOX_URL": GW, "E2B_API_KEY": key["key"]}
    rootfs = f"{TEMPLATES}/base/rootfs"
    mgr = ["busctl", "--system", "call", "org.warren.Warren1", "/org/warren/Warren1",
           "org.warren.Warren1.Manager"]
    try:
        # 49983: the agent's envd port (AGENT_PROTO_ENVD_PORT, common/agent-protocol.h)
        for name, extra in (("e2bwarm", []), ("e2bstandby", ["standby", "u", "1"])):
            sh(mgr + ["RemoveTemplate", "s", name], check=False)
            sh(mgr + ["AddTemplate", "ssasqta{sv}", "--", name, rootfs, "2", "/bin/sleep",
                      "infinity", "49983", str(512 << 20), str(1 + len(extra) // 3), "warm", "b",
                      "true"] + extra)
        # the first create of a warm template starts cold and leaves the warm image behind it
        e2b_node(env, "create", 1, TEMPLATES="p1=e2bwarm,p2=e2bstandby")
        time.sleep(5)
        # 2 s apart: the standby row measures a create that finds one (restoring the next takes
        # about as long as a warm create)
        got = e2b_node(env, "create", n, TEMPLATES="cold=base,warm=e2bwarm,standby=e2bstandby",
                       GAP_MS="2000")
        rt = e2b_node(env, "run", n_run)["run"]
        xfer = e2b_node(env, "transfer", n_xfer)
    finally:
        sh(["warrenctl", "apikey", "revoke", key["id"]], check=False)
        for name in ("e2bwarm", "e2bstandby"):
            sh(mgr + ["RemoveTemplate", "s", name], check=False)
    # plain runsc: run the same tree with sleep, then exec what the SDK's commands.run('true')
    # runs: `/bin/bash -l -c true` as the template's user (the same job as create + first
    # command, without the agent, the gateway and the control plane)
    job = dict(flags=("--user", "1000:1000", "--env", "HOME=/home/user"))
    bash = ("/bin/bash", "-l", "-c", "true")
    base = []
    for i in range(n):
        cid = f"wbe2b{i}"
        netns_fresh_veth()
        b = bundle("base", cid)
        t0 = now()
        sh(runsc_cmd("run", "--bundle", b, "--detach", cid))
        plain_exec(cid, *bash, **job)
        base.append((now() - t0) * 1000)
        raw_delete(cid)
    netns_fresh_veth()
    cid = "wbe2bx"
    sh(runsc_cmd("run", "--bundle", bundle("base", cid), "--detach", cid))
    plain_exec(cid, *bash, **job)
    base_rt = []
    for _ in range(n_run):
        t0 = now()
        plain_exec(cid, *bash, **job)
        base_rt.append((now() - t0) * 1000)
    size = 100 << 20
    with open("/run/warren-bench/big.bin", "wb") as f:
        f.write(os.urandom(size))
    up, down = [], []
    for _ in range(n_xfer):
        with open("/run/warren-bench/big.bin", "rb") as f:
            t0 = now()
            plain_exec(cid, "/bin/sh", "-c", "cat > /tmp/big.bin", stdin=f)
            up.append(size / 1e6 / (now() - t0))
        t0 = now()
        plain_exec(cid, "/bin/cat", "/tmp/big.bin")
        down.append(size / 1e6 / (now() - t0))
    raw_delete(cid)
    os.unlink("/run/warren-bench/big.bin")
    plain = "plain `runsc run` of the same tree + `runsc exec bash -l -c true`"
    for label, what in (("cold", "cold base"), ("warm", "warm base (restore of its warm image)"),
                        ("standby", "base, standby=1")):
        rows.append(row(f"E2B SDK {what}: Sandbox.create -> first commands.run result",
                        got[label]["samples"], base, plain, target="~110 ms (E2B, internet)"
                        if label == "standby" else ""))
    rows.append(row("E2B SDK commands.run('true') round trip (agent, gateway; the SDK runs "
                    "`bash -l -c true`)", rt["samples"], base_rt,
                    "`runsc exec bash -l -c true` in a running plain container, as the same user",
                    target="<= 0.1x"))
    rows.append(row("E2B SDK 100 MiB files.write (MB/s, higher is better)", xfer["upload"]["samples"],
                    up, "`runsc exec sh -c 'cat > file'` of the same bytes", unit="MB/s"))
    rows.append(row("E2B SDK 100 MiB files.read, streamed (MB/s, higher is better)",
                    xfer["download"]["samples"], down, "`runsc exec cat file`", unit="MB/s"))
    return rows


def machine():
    cpu = "?"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = int(open("/proc/meminfo").readline().split()[1]) // (1024 * 1024)
    runsc = sh("runsc --version", check=False).stdout.split("\n")[0]
    return f"{os.cpu_count()} x {cpu}, {mem} GiB, kernel {platform.release()}, {runsc}, --platform=ptrace"


def render(res):
    reruns = "".join(f", {k} rows {d}" for k, d in sorted(res.get("reruns", {}).items()))
    lines = [f"Machine: {res['machine']}. Run: {res['date']}{reruns}. p50/p90 over n runs; each row's baseline ran "
             "in the same invocation, interleaved (`--only-reclaim`/`--only-snapshot`/`--only-microvm`/`--only-compression`/`--only-e2b`/`--only-fork` re-run their rows alone); "
             "plain runsc gets the template's memory limit in a cgroup of its own, as Warren's sandboxes do.", "",
             "| Row | n | Warren p50 | p90 | Baseline (same run) | p50 | p90 | Warren/baseline | Target |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        f = lambda v: f"{v:.1f} {r['unit']}" if v < 100 else f"{v:.0f} {r['unit']}"
        if "base_p50" in r:
            lines.append(f"| {r['name']} | {r['n']} | {f(r['p50'])} | {f(r['p90'])} | {r['base_name']} | "
                         f"{f(r['base_p50'])} | {f(r['base_p90'])} | {r['ratio']:.2f}x | {r['target']} |")
        else:
            lines.append(f"| {r['name']} | {r['n']} | {f(r['p50'])} | {f(r['p90'])} | | | | | {r['target']} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--from-json")
    ap.add_argument("--only-reclaim", action="store_true", help="run only the reclaim rows")
    ap.add_argument("--only-snapshot", action="store_true", help="run only the snapshot rows")
    ap.add_argument("--only-microvm", action="store_true", help="run only the microVM rows")
    ap.add_argument("--only-compression", action="store_true", help="run only the zstd rows")
    ap.add_argument("--only-e2b", action="store_true",
                    help="run only the E2B SDK rows (warren-e2b-api up)")
    ap.add_argument("--only-fork", action="store_true",
                    help="run only the web fork rows (1, 5, 20, 100 children)")
    a = ap.parse_args()
    if (a.only_reclaim or a.only_snapshot or a.only_microvm or a.only_compression or a.only_fork
            or a.only_e2b):
        if a.only_snapshot or a.only_fork:
            os.makedirs(RUNSC_ROOT, exist_ok=True)
        rows = (bench_reclaim(a.quick) if a.only_reclaim else
                bench_e2b(a.quick) if a.only_e2b else
                bench_microvm(a.quick) if a.only_microvm else
                bench_compression(a.quick) if a.only_compression else
                bench_fork(a.quick) if a.only_fork else bench_snapshot(a.quick))
        if a.quick:
            return
        # replace the reclaim rows of the last full run and re-render
        path = os.path.join(ROOT, "bench/results/latest.json")
        res = json.load(open(path))
        names = {r["name"] for r in rows}
        res["rows"] = [r for r in res["rows"] if r["name"] not in names] + rows
        kind = next(k for k in ("reclaim", "e2b", "microvm", "compression", "fork", "snapshot")
                    if k == "snapshot" or getattr(a, "only_" + k))
        res.setdefault("reruns", {})[kind] = time.strftime("%Y-%m-%d")
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
        a.from_json = path
    if a.from_json:
        res = json.load(open(a.from_json))
    else:
        res = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "rows": bench(a.quick)}
        if not a.quick:
            with open(os.path.join(ROOT, "bench/results/latest.json"), "w") as f:
                json.dump(res, f, indent=1)
    table = render(res)
    print(table)
    if not a.quick:
        readme = os.path.join(ROOT, "README.md")
        s = open(readme).read()
        s = re.sub(r"<!-- bench:start -->.*<!-- bench:end -->",
                   "<!-- bench:start -->\n" + table + "\n<!-- bench:end -->", s, flags=re.S)
        open(readme, "w").write(s)


if __name__ == "__main__":
    main()
