#!/usr/bin/env bash
# Starts the vshard test cluster's four Tarantool storages (cluster.lua:
# 2 replica sets x 2, loopback) in the foreground, for the benchmark
# (benches/net/vshard/run.sh), the example (examples/vshard_router) and
# trying things by hand; Ctrl-C, TERM or the end of the shell stops them.
#   VSHARD_PATH=/path/to/vshard tests/vshard/storages.sh DIR [PORTS]
# DIR holds each storage's data and log (DIR/s1a.log, ...); PORTS is
# "p1,p2,p3,p4" (default: four free ports). When all four are ready it
# prints `ready VSHARD_PORTS=p1,p2,p3,p4`: routers take that variable.
set -u
DIR=${1:?usage: storages.sh DIR [PORTS]}
: "${VSHARD_PATH:?set VSHARD_PATH to a checkout of github.com/tarantool/vshard (README, vshard)}"
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
PORTS=${2:-$(python3 -c '
import socket
ss = [socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1", 0))
print(",".join(str(s.getsockname()[1]) for s in ss))')}
export VSHARD_PATH VSHARD_PORTS=$PORTS

pids=()
stop() { [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; }
trap 'stop' EXIT
trap 'exit 130' INT TERM
for name in s1a s1b s2a s2b; do
    rm -f "$DIR/$name/ready"
    (cd "$DIR" && exec tarantool "$HERE/storage.lua" "$name" "$DIR/$name") >> "$DIR/$name.log" 2>&1 &
    pids+=($!)
done
for name in s1a s1b s2a s2b; do
    for _ in $(seq 600); do [ -e "$DIR/$name/ready" ] && break; sleep 0.1; done
    if [ ! -e "$DIR/$name/ready" ]; then
        echo "storage $name did not start; $DIR/$name.log:" >&2
        tail -n 20 "$DIR/$name.log" >&2
        exit 1
    fi
done
echo "ready VSHARD_PORTS=$PORTS"
wait
