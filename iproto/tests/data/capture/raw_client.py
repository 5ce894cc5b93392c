#!/usr/bin/env python3
"""A raw IPROTO client against server.lua on a real Tarantool 2.6: sends
each request with hand-made bytes and records every response packet.
Usage: raw_client.py PORT OUT_FILE  (lines: `<label> <hex of the packet>`)"""
import hashlib, base64, socket, sys, time
import msgpack

port, out = int(sys.argv[1]), sys.argv[2]
lines = []


def packet(kind, sync, body):
    hdr = msgpack.packb({0: kind, 1: sync})
    pkt = hdr + (msgpack.packb(body, use_bin_type=True) if body is not None else b"")
    return b"\xce" + len(pkt).to_bytes(4, "big") + pkt


def scramble(salt, password):
    h1 = hashlib.sha1(password.encode()).digest()
    h2 = hashlib.sha1(h1).digest()
    h3 = hashlib.sha1(salt[:20] + h2).digest()
    return bytes(a ^ b for a, b in zip(h1, h3))


class Conn:
    def __init__(self):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""
        g = self.read_exact(128)
        self.greeting = g
        self.salt = base64.b64decode(g[64:].strip())

    def read_exact(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise EOFError
            self.buf += d
        r, self.buf = self.buf[:n], self.buf[n:]
        return r

    def read_packet(self):
        pre = self.read_exact(5)
        assert pre[0] == 0xce
        return pre + self.read_exact(int.from_bytes(pre[1:], "big"))

    def request(self, label, kind, sync, body, raw=None):
        self.s.sendall(raw if raw is not None else packet(kind, sync, body))
        n = 0
        while True:
            p = self.read_packet()
            hdr = msgpack.Unpacker(strict_map_key=False)
            hdr.feed(p[5:])
            h = hdr.unpack()
            n += 1
            lines.append("%s%s %s" % (label, "" if h[0] != 128 else "_chunk%d" % n, p.hex()))
            if h[0] != 128:
                return


c = Conn()
lines.append("greeting %s" % c.greeting.hex())
c.request("ping", 64, 1, None)
c.request("ping_empty_body", 64, 2, {})
c.request("guest_call_denied", 10, 3, {0x22: "multi", 0x21: []})
c.request("guest_eval_denied", 8, 4, {0x27: "return 1", 0x21: []})
c.request("guest_call_granted", 10, 5, {0x22: "echo", 0x21: [1]})
c.request("auth_unknown_user", 7, 6, {0x23: "nobody", 0x21: ["chap-sha1", scramble(c.salt, "x")]})
c.request("auth_wrong_password", 7, 7, {0x23: "alice", 0x21: ["chap-sha1", scramble(c.salt, "wrong")]})
c.request("auth_ok", 7, 8, {0x23: "alice", 0x21: ["chap-sha1", scramble(c.salt, "secret")]})
c.request("call_echo", 10, 9, {0x22: "echo", 0x21: [1, "two", None, {"a": 3}]})
c.request("call_multi", 10, 10, {0x22: "multi", 0x21: []})
c.request("call_no_returns", 10, 11, {0x22: "echo", 0x21: []})
c.request("call16_echo", 6, 12, {0x22: "echo16", 0x21: [1, "a"]})
c.request("call16_table", 6, 13, {0x22: "echo16", 0x21: [[1, 2], {"k": "v"}]})
c.request("eval", 8, 14, {0x27: "return ...", 0x21: [7, 8]})
c.request("call_missing", 10, 15, {0x22: "nosuchfn", 0x21: []})
c.request("call_lua_error", 10, 16, {0x22: "fail", 0x21: []})
c.request("call_custom_error", 10, 17, {0x22: "fail_custom", 0x21: []})
c.request("call_push3", 10, 18, {0x22: "push3", 0x21: []})
c.request("select_missing_space", 1, 19, {0x10: 9999, 0x11: 0, 0x14: 0, 0x13: 0, 0x12: 10, 0x20: []})
c.request("unknown_type_73", 73, 20, {0x54: 3, 0x55: []})
c.request("call_big_sync", 10, 2**40 + 5, {0x22: "echo", 0x21: [True, 1.5, -3]})
c.request("auth_guest_empty", 7, 21, {0x23: "guest", 0x21: []})
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
