#!/usr/bin/env python3
"""A small Connect-JSON client of warren-agent's envd API, for tests (stdlib only).

Requests go to BASE (http://host:port) with any extra headers given as -H 'Name: value'
(E2b-Sandbox-Id / E2b-Sandbox-Port for the gateway, X-Access-Token). Usage:
  envd-client.py [-H h]... BASE unary  Service/Method JSON   -> prints status and the JSON answer
  envd-client.py [-H h]... BASE stream Service/Method JSON   -> one line per message:
        "msg <json>" for each message, then "end <json>" for the end-of-stream message;
        the envelopes are parsed here (flags byte, big-endian length)
  envd-client.py [-H h]... BASE run CMD [ARG...]             -> Process/Start; prints stdout,
        stderr and exit code decoded: "pid N", "stdout <b64>", "stderr <b64>", "exit CODE"
  envd-client.py [-H h]... BASE start-bg TAG CMD [ARG...]    -> starts a process with stdin open
        and tag TAG, prints "pid N" once started and exits (the stream stays with the agent)
"""
import base64
import http.client
import json
import struct
import sys
import urllib.parse


def conn_for(base):
    u = urllib.parse.urlparse(base)
    return http.client.HTTPConnection(u.hostname, u.port or 80, timeout=60)


def unary(base, headers, method, body):
    c = conn_for(base)
    h = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
    h.update(headers)
    c.request("POST", "/" + method, body=body.encode(), headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def envelopes(resp):
    """Yield (flags, message bytes) of a connect+json stream."""
    while True:
        hdr = resp.read(5)
        if not hdr:
            return
        if len(hdr) < 5:
            raise RuntimeError("truncated envelope header")
        flags, n = struct.unpack(">BI", hdr)
        msg = resp.read(n)
        if len(msg) != n:
            raise RuntimeError("truncated envelope")
        yield flags, msg


def stream(base, headers, method, body):
    c = conn_for(base)
    h = {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}
    h.update(headers)
    payload = body.encode()
    c.request("POST", "/" + method, body=struct.pack(">BI", 0, len(payload)) + payload, headers=h)
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError("HTTP %d: %s" % (r.status, r.read()[:500]))
    return c, r


def main():
    args = sys.argv[1:]
    headers = {}
    while args and args[0] == "-H":
        k, v = args[1].split(":", 1)
        headers[k.strip()] = v.strip()
        args = args[2:]
    base, verb = args[0], args[1]
    if verb == "unary":
        status, data = unary(base, headers, args[2], args[3])
        print(status)
        print(data.decode(errors="replace"))
    elif verb == "stream":
        c, r = stream(base, headers, args[2], args[3])
        for flags, msg in envelopes(r):
            print(("end " if flags & 2 else "msg ") + msg.decode(errors="replace"), flush=True)
    elif verb in ("run", "start-bg"):
        tag = None
        rest = args[2:]
        if verb == "start-bg":
            tag, rest = rest[0], rest[1:]
        req = {"process": {"cmd": rest[0], "args": rest[1:]}}
        if tag:
            req["tag"] = tag
            req["stdin"] = True
        c, r = stream(base, headers, "process.Process/Start", json.dumps(req))
        for flags, msg in envelopes(r):
            m = json.loads(msg)
            if flags & 2:
                if m.get("error"):
                    print("error " + json.dumps(m["error"]))
                break
            ev = m.get("event", {})
            if "start" in ev:
                print("pid %d" % ev["start"]["pid"], flush=True)
                if verb == "start-bg":
                    # leave the stream open in the background: a detached child keeps it
                    import os
                    if os.fork() == 0:
                        for _ in envelopes(r):
                            pass
                        os._exit(0)
                    return
            elif "data" in ev:
                for k, v in ev["data"].items():
                    print("%s %s" % (k, v), flush=True)
            elif "end" in ev:
                print("exit %d" % ev["end"].get("exitCode", 0), flush=True)
    else:
        sys.exit("unknown verb " + verb)


if __name__ == "__main__":
    main()
