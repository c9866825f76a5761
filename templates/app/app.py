"""Warren's built-in `app` template: a small HTTP app that holds a live heap.

GET /        -> a JSON greeting with the heap size
GET /touch   -> touches every page of the heap, reports how long it took (ms)
"""
import argparse
import json
import mmap
import os
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, default=8080)
parser.add_argument("--heap-mib", type=int, default=64)
args = parser.parse_args()

PAGE = 4096
# Anonymous memory, written so it is really resident (MAP_POPULATE alone would leave zero pages).
heap = mmap.mmap(-1, args.heap_mib << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for off in range(0, len(heap), PAGE):
    heap[off] = (off // PAGE) & 0xFF


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def reply(self, obj):
        body = json.dumps(obj).encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/touch"):
            t0 = time.monotonic()
            s = 0
            for off in range(0, len(heap), PAGE):
                s += heap[off]
            self.reply({"touched_mib": args.heap_mib, "ms": (time.monotonic() - t0) * 1000, "sum": s})
        else:
            self.reply({"app": "warren", "heap_mib": args.heap_mib,
                        "sandbox": os.environ.get("WARREN_SANDBOX_ID", "")})


class Server(HTTPServer):
    def server_bind(self):
        # HTTPServer.server_bind asks DNS for our FQDN; a sandbox has no resolver and that
        # costs seconds. Bind plainly.
        self.socket.bind(self.server_address)
        self.server_name, self.server_port = "localhost", self.server_address[1]


Server(("0.0.0.0", args.port), Handler).serve_forever()
