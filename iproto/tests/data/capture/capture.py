#!/usr/bin/env python3
"""Re-records iproto/tests/data/{requests,responses}.txt from real clients
and a real server. Needs Debian's `tarantool` (2.6.0) and the venv of
scripts/setup.sh (tarantool-python, msgpack). Run from anywhere:

    target/venv/bin/python iproto/tests/data/capture/capture.py

requests.txt: packets that Tarantool 2.6's net.box (netbox_client.lua) and
tarantool-python 1.3.0 (python_client.py) sent to record_server.py (fixed
greeting uuid, salt = bytes 0..31, user alice / password secret).
responses.txt: packets a real Tarantool 2.6.0 (server.lua) answered to
raw_client.py, plus its greeting.
"""
import os, socket, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)
PY = sys.executable

NETBOX_LABELS = {
    1: ["auth", "select_vspace", "select_vindex", "select_vcollation", "ping",
        "call", "call_16", "eval", "select", "insert", "replace", "update",
        "upsert", "delete"],
    2: ["guest_select_vspace", "guest_select_vindex", "guest_select_vcollation",
        "call_dotted_no_args", "eval_quit"],
}
PYTHON_LABELS = {1: ["python_id", "python_auth", "python_ping", "python_call"]}


def record(version, client_cmd, labels, prefix):
    with tempfile.TemporaryDirectory() as tmp:
        port_file, out = os.path.join(tmp, "port"), os.path.join(tmp, "out")
        srv = subprocess.Popen([PY, os.path.join(HERE, "record_server.py"),
                                port_file, out, version])
        for _ in range(100):
            if os.path.exists(port_file) and open(port_file).read():
                break
            time.sleep(0.05)
        port = open(port_file).read()
        subprocess.run(client_cmd + [port], check=True, timeout=30, cwd=HERE)
        srv.terminate()
        srv.wait()
        seen = {}
        lines = []
        for line in open(out):
            conn, kind, hexed = line.split()
            conn = int(conn)
            i = seen.get(conn, 0)
            seen[conn] = i + 1
            lines.append("%s %s %s" % (prefix, labels[conn][i], hexed))
        return lines


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    reqs = ["# Requests as real clients sent them (see capture/capture.py).",
            "# <client> <label> <hex of the packet, size prefix included>"]
    reqs += record("2.6.0", ["tarantool", "netbox_client.lua"], NETBOX_LABELS, "netbox26")
    reqs += record("2.11.0", [PY, "python_client.py"], PYTHON_LABELS, "python130")
    with open(os.path.join(DATA, "requests.txt"), "w") as f:
        f.write("\n".join(reqs) + "\n")

    with tempfile.TemporaryDirectory() as tmp:
        port = str(free_port())
        srv = subprocess.Popen(["tarantool", "server.lua", port, tmp], cwd=HERE)
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", int(port))).close()
                    break
                except OSError:
                    time.sleep(0.1)
            out = os.path.join(tmp, "resp")
            subprocess.run([PY, "raw_client.py", port, out], check=True,
                           timeout=30, cwd=HERE)
            resp = ["# Responses of a real Tarantool 2.6.0 (see capture/capture.py).",
                    "# <label> <hex of the packet, size prefix included>"]
            resp += open(out).read().split("\n")
        finally:
            srv.terminate()
            srv.wait()
    with open(os.path.join(DATA, "responses.txt"), "w") as f:
        f.write("\n".join(l for l in resp if l) + "\n")


if __name__ == "__main__":
    main()
