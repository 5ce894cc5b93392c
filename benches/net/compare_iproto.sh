#!/bin/sh
# The IPROTO server benches: Tarantool 2.6's net.box (iproto_caller.lua on
# `tarantool`) against each callee (iproto_callee.lua on `tarantool`, then
# on luafiber). Per mode, the median of RUNS runs (default 5) of REQUESTS
# requests (default 100000): requests/s (K) and the callee's CPU per
# request (microseconds; user + system of the callee process, all its
# threads, from /proc/PID/stat around the run); `heap` gives the callee's
# Lua heap growth per 1000 CALLs with its collector stopped (KB).
#   benches/net/compare_iproto.sh [LUAFIBER_BINARY]
# MODES (default: call eval ping pairs call1 heap), RUNS, REQUESTS.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
LUAFIBER=${1:-$here/../../target/release/luafiber}
RUNS=${RUNS:-5}
REQUESTS=${REQUESTS:-100000}
MODES=${MODES:-call eval ping pairs call1 heap}
tmp=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ticks PID: user + system clock ticks of the process (all its threads)
ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

# start_callee NAME BINARY: starts it, sets $port and $cpid
start_callee() {
    port=$(free_port)
    mkdir -p "$tmp/$1"
    (cd "$tmp/$1" && exec "$2" "$here/iproto_callee.lua" "$port" "$tmp/$1" >"$tmp/$1.out" 2>&1) &
    cpid=$!
    pids="$pids $cpid"
    i=0
    while [ $i -lt 100 ]; do
        grep -q PORT "$tmp/$1.out" 2>/dev/null && return 0
        sleep 0.1; i=$((i + 1))
    done
    echo "# $1 callee did not start: $(head -c 300 "$tmp/$1.out")" >&2
    port=""
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-6s %-10s %10s %16s %16s\n' mode callee krps callee_us_per_req heap_kb_per_1000
for callee in tarantool luafiber; do
    if [ "$callee" = tarantool ]; then cbin=tarantool; else cbin=$LUAFIBER; fi
    start_callee "$callee" "$cbin"
    [ -n "$port" ] || continue
    for mode in $MODES; do
        n=$REQUESTS
        [ "$mode" = call1 ] && n=$((REQUESTS / 5))
        : >"$tmp/runs"
        r=0
        while [ $r -lt "$RUNS" ]; do
            t0=$(ticks "$cpid")
            line=$(timeout 300 tarantool "$here/iproto_caller.lua" "127.0.0.1:$port" "$mode" "$n" || true)
            t1=$(ticks "$cpid")
            # requests krps callee_us heap
            echo "$line" | awk -v d=$((t1 - t0)) -v hz="$HZ" \
                '{ printf "%s %s %.2f %s\n", $2, $4, d / hz / $2 * 1e6, ($5 == "" ? "-" : $5) }' >>"$tmp/runs"
            r=$((r + 1))
        done
        krps=$(awk '{print $2}' "$tmp/runs" | median)
        cpu=$(awk '{print $3}' "$tmp/runs" | median)
        heap=$(awk '{print $4}' "$tmp/runs" | median)
        printf '%-6s %-10s %10s %16s %16s\n' "$mode" "$callee" "$krps" "$cpu" "$heap"
    done
done
