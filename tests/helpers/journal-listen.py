#!/usr/bin/python3
"""A stand-in for journald's native socket (tests): binds a datagram socket at PATH, open to
every user, and appends each entry it receives to OUT as one JSON object a line. Entries are
parsed as sd_journal_send writes them: KEY=value lines, or KEY, newline, 64-bit little-endian
length, the value's bytes and a newline (values with newlines)."""
import json
import os
import socket
import struct
import sys

path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
os.chmod(path, 0o666)
with open(out, "a") as f:
    while True:
        data = s.recv(1 << 20)
        entry, i = {}, 0
        while i < len(data):
            nl = data.find(b"\n", i)
            if nl < 0:
                break
            line = data[i:nl]
            if b"=" in line:
                k, v = line.split(b"=", 1)
                i = nl + 1
            else:
                (n,) = struct.unpack("<Q", data[nl + 1:nl + 9])
                k, v = line, data[nl + 9:nl + 9 + n]
                i = nl + 9 + n + 1
            entry[k.decode()] = v.decode(errors="replace")
        f.write(json.dumps(entry) + "\n")
        f.flush()
