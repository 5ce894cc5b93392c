#!/usr/bin/env python3
"""A throwaway IPROTO server that records every request packet it receives.

Usage: record_server.py PORT_FILE OUT_FILE VERSION

Binds 127.0.0.1:0, writes the port to PORT_FILE, greets each client as
`Tarantool VERSION (Binary) <fixed uuid>` with a FIXED salt (bytes 0..31), so
that AUTH scrambles are reproducible, and appends one line per request packet
to OUT_FILE: `<connection#> <request type> <hex of the whole packet>`. It
answers just enough for a client to go on: OK with DATA [] to everything
(ID gets VERSION 3 + FEATURES [] + AUTH_TYPE), nothing to WATCH.
Ends after 20 s or when a client sends EVAL 'quit'.
"""
import base64, socket, sys, threading, time

UUID = b"a5cd3b43-1c71-4d7b-9c63-1234567890ab"
SALT = bytes(range(32))


def greeting(version):
    line1 = b"Tarantool " + version.encode() + b" (Binary) " + UUID
    line1 = line1.ljust(63) + b"\n"
    line2 = base64.b64encode(SALT).ljust(63) + b"\n"
    return line1 + line2


def read_uint(b, i):
    m = b[i]
    if m < 0x80:
        return m, i + 1
    n = {0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8}[m]
    return int.from_bytes(b[i + 1:i + 1 + n], "big"), i + 1 + n


def header_fields(pkt):
    # pkt: header map + body, without the size prefix; only uint keys/values
    i = 0
    m = pkt[i]
    assert m & 0xf0 == 0x80
    n = m & 0x0f
    i += 1
    out = {}
    for _ in range(n):
        k, i = read_uint(pkt, i)
        v, i = read_uint(pkt, i)
        out[k] = v
    return out


def reply(kind, sync, body):
    hdr = bytes([0x83, 0x00, 0xce]) + kind.to_bytes(4, "big") + \
        bytes([0x01, 0xcf]) + sync.to_bytes(8, "big") + \
        bytes([0x05, 0xce]) + (1).to_bytes(4, "big")
    pkt = hdr + body
    return bytes([0xce]) + len(pkt).to_bytes(4, "big") + pkt


lock = threading.Lock()
conn_no = 0


def serve(sock, out, version):
    global conn_no
    with lock:
        conn_no += 1
        me = conn_no
    sock.sendall(greeting(version))
    buf = b""
    while True:
        data = sock.recv(65536)
        if not data:
            return
        buf += data
        while buf:
            size, i = read_uint(buf, 0)
            if len(buf) < i + size:
                break
            whole, pkt = buf[:i + size], buf[i:i + size]
            buf = buf[i + size:]
            h = header_fields(pkt)
            kind, sync = h.get(0, 0), h.get(1, 0)
            with lock:
                with open(out, "a") as f:
                    f.write("%d %d %s\n" % (me, kind, whole.hex()))
            if kind == 8 and b"quit" in pkt:
                sock.sendall(reply(0, sync, b"\x81\x30\x90"))
                raise SystemExit
            if kind == 74:  # WATCH: no reply
                continue
            if kind == 73:  # ID
                body = b"\x83\x54\x03\x55\x90\x5b\xa9chap-sha1"
            else:
                body = b"\x81\x30\x90"
            sock.sendall(reply(0, sync, body))


def main():
    port_file, out, version = sys.argv[1], sys.argv[2], sys.argv[3]
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    ls.settimeout(20)
    with open(port_file, "w") as f:
        f.write(str(ls.getsockname()[1]))
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            s, _ = ls.accept()
        except socket.timeout:
            return
        t = threading.Thread(target=serve, args=(s, out, version), daemon=True)
        t.start()


if __name__ == "__main__":
    main()
