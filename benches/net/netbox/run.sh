#!/bin/sh
# The net.box benches: {tarantool, luafiber} caller x {tarantool, luafiber}
# callee, for CALL, EVAL and pairs() over 3 pushes; each cell is the median of
# RUNS runs (default 5) of REQUESTS requests (default 100000) from 100 fibers
# on one connection. Prints requests/s (K) and the caller's CPU per request
# (microseconds, from /proc/self/stat).
#   benches/net/netbox/run.sh [LUAFIBER_BINARY]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
LUAFIBER=${1:-$here/../../../target/release/luafiber}
RUNS=${RUNS:-5}
REQUESTS=${REQUESTS:-100000}
MODES=${MODES:-call eval pairs}
tmp=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_callee NAME BINARY: starts it, sets $port (empty when it cannot serve)
start_callee() {
    port=$(free_port)
    mkdir -p "$tmp/$1"
    (cd "$tmp/$1" && exec "$2" "$here/callee.lua" "$port" "$tmp/$1" >"$tmp/$1.out" 2>&1) &
    pids="$pids $!"
    i=0
    while [ $i -lt 100 ]; do
        grep -q PORT "$tmp/$1.out" 2>/dev/null && return 0
        sleep 0.1; i=$((i + 1))
    done
    echo "# $1 callee did not start: $(head -c 300 "$tmp/$1.out")" >&2
    port=""
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-6s %-10s %-10s %10s %14s\n' mode caller callee krps cpu_us_per_req
for callee in tarantool luafiber; do
    if [ "$callee" = tarantool ]; then cbin=tarantool; else cbin=$LUAFIBER; fi
    start_callee "$callee" "$cbin"
    [ -n "$port" ] || continue
    for mode in $MODES; do
        for caller in tarantool luafiber; do
            if [ "$caller" = tarantool ]; then bin=tarantool; else bin=$LUAFIBER; fi
            : >"$tmp/runs"
            r=0
            while [ $r -lt "$RUNS" ]; do
                timeout 300 "$bin" "$here/caller.lua" "127.0.0.1:$port" "$mode" "$REQUESTS" >>"$tmp/runs" || true
                r=$((r + 1))
            done
            krps=$(awk '{print $5}' "$tmp/runs" | median)
            cpu=$(awk '{print $6}' "$tmp/runs" | median)
            printf '%-6s %-10s %-10s %10s %14s\n' "$mode" "$caller" "$callee" "$krps" "$cpu"
        done
    done
done
