"""A test upstream for the gateway: keep-alive, chunked both ways, echo, upgrade, hang.
Usage: upstream.py PORT [LOG]
With LOG, every request line it reads (parsed or not) is appended to LOG, so a test can show
what reached it. /raw/<name> answers with one of RAW's hand-made (mostly malformed) responses,
as a hostile sandbox would. UPSTREAM_ADDR=A binds A instead of 127.0.0.1."""
import os
import socketserver
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


LOG = sys.argv[2] if len(sys.argv) > 2 else None

RAW = {
    "ok": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n",
    "bare-lf": b"HTTP/1.1 200 OK\nContent-Length: 3\r\n\r\nbad",
    "nul": b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 3\r\n\r\nbad",
    "bare-cr": b"HTTP/1.1 200 OK\r\nX-A: a\rSet-Cookie: x=1\r\nContent-Length: 3\r\n\r\nbad",
    "cl-te": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nbad",
    "cl-cl": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nbad",
    "obs-fold": b"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 3\r\n\r\nbad",
    "status": b"HTTP/1.1 20 OK\r\nContent-Length: 3\r\n\r\nbad",
    "huge-head": b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"a" * 9000 + b"\r\n" +
                 b"Content-Length: 3\r\n\r\nbad",
    "upgrade": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\nbad",
    "extra": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n" +
             b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nsmuggled\n",
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # UPSTREAM_NODELAY=1 (benchmarks): its head and body are two writes, and with Nagle the
    # second waits for the gateway's delayed ACK of the first (40 ms a request)
    disable_nagle_algorithm = os.environ.get("UPSTREAM_NODELAY") == "1"

    def parse_request(self):
        if LOG:
            with open(LOG, "ab") as f:
                f.write(self.raw_requestline.rstrip(b"\r\n") + b"\n")
        return super().parse_request()

    def log_message(self, *a):
        pass

    def send_body(self, body, ctype="text/plain"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def do_GET(self):
        if self.path.startswith("/raw/"):
            self.wfile.write(RAW[self.path[5:]])
            self.wfile.flush()
            if self.path[5:] == "upgrade":
                self.close_connection = True
            return
        if self.path.startswith("/peer"):
            # which upstream connection carried this request (the gateway's source port), and
            # whether the request still said `Connection: close`
            self.send_body(("peer=%d connection=%s\n" % (self.client_address[1],
                            self.headers.get("Connection", "-"))).encode())
            return
        if self.path.startswith("/hv"):
            # every header with its value, and which upstream this is (UPSTREAM_NAME): what a
            # request carried after one or two gateways (test-gateway-remote)
            self.send_body(("upstream=%s\n" % os.environ.get("UPSTREAM_NAME", "-") +
                            "".join("%s: %s\n" % (k.lower(), v)
                                    for k, v in self.headers.items())).encode())
            return
        if self.path.startswith("/headers"):
            # every header name it was sent (test-attack-agent-gate: the token stays outside)
            self.send_body(("".join("%s\n" % k.lower() for k in self.headers.keys())).encode())
            return
        if self.path.startswith("/late-extra"):
            # a hostile sandbox: a complete answer, then, once the gateway has had time to
            # consider the connection idle, an unasked-for second answer on it
            self.send_body(b"first\n")
            self.wfile.flush()
            time.sleep(0.5)
            self.wfile.write(RAW["extra"].split(b"ok\n", 1)[1])
            self.wfile.flush()
            return
        if self.path.startswith("/hang"):
            time.sleep(30)
            self.send_body(b"late\n")
        elif self.path.startswith("/chunked"):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"one-", b"two-", b"three\n"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        elif self.headers.get("Upgrade") == "echo":
            self.send_response(101)
            self.send_header("Upgrade", "echo")
            self.send_header("Connection", "Upgrade")
            self.end_headers()
            self.wfile.flush()
            while True:
                data = self.connection.recv(4096)
                if not data:
                    break
                self.connection.sendall(data)
            self.close_connection = True
        else:
            self.send_body(("hello path=%s\n" % self.path).encode())

    def do_POST(self):
        self.send_body(self.read_body(), "application/octet-stream")


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer.request_queue_size = 256  # many gateway connections at once (attack tests)
# UPSTREAM_ADDR: another loopback address, for a port that must not clash with the host's
ThreadingHTTPServer((os.environ.get("UPSTREAM_ADDR", "127.0.0.1"), int(sys.argv[1])),
                    Handler).serve_forever()
