#!/bin/sh
# The IPROTO server benches: Tarantool 2.6's net.box (iproto_caller.lua on
# `tarantool`) against each callee (iproto_callee.lua on `tarantool`, then
# on luafiber). Per mode, the median of RUNS runs (default 5) of REQUESTS
# requests (default 100000): requests/s (K) and the callee's CPU per
# request (microseconds; user + system of the callee process, all its
# threads, from /proc/PID/task/*/schedstat around the run); `heap` gives
# the callee's Lua heap growth per 1000 CALLs with its collector stopped
# (KB).
#   benches/net/compare_iproto.sh [LUAFIBER_BINARY]
# MODES (default: call eval ping pairs call1 heap), RUNS, REQUESTS.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
LUAFIBER=${1:-$here/../../target/release/luafiber}
RUNS=${RUNS:-5}
REQUESTS=${REQUESTS:-200000}
MODES=${MODES:-call eval ping pairs call1 heap}
tmp=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# cpu_ns PID: the CPU time the process's threads have run so far, in
# nanoseconds (the scheduler's own count, /proc/PID/task/*/schedstat: user
# and system, at the nanosecond where /proc/PID/stat counts 10 ms ticks)
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

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

# Both callees run side by side; each run measures one, then the other
# (A B A B ...), so a change of the machine's load hits both alike.
start_callee tarantool tarantool; tport=$port; tpid=$cpid
start_callee luafiber "$LUAFIBER"; lport=$port; lpid=$cpid
[ -n "$tport" ] && [ -n "$lport" ] || exit 1

# measure MODE N PORT PID OUT: one run, appended to OUT as
# "requests krps callee_us heap"
measure() {
    t0=$(cpu_ns "$4")
    line=$(timeout 300 tarantool "$here/iproto_caller.lua" "127.0.0.1:$3" "$1" "$2" || true)
    t1=$(cpu_ns "$4")
    echo "$line" | awk -v d=$((t1 - t0)) \
        'NF >= 4 { printf "%s %s %.3f %s\n", $2, $4, d / $2 / 1e3, ($5 == "" ? "-" : $5) }' >>"$5"
}

printf '%-6s %10s %10s %12s %12s %8s %10s %10s\n' mode t_krps l_krps t_us_req l_us_req cpu_l/t t_heap_kb l_heap_kb
for mode in $MODES; do
    n=$REQUESTS
    [ "$mode" = call1 ] && n=$((REQUESTS / 5))
    : >"$tmp/t"; : >"$tmp/l"
    r=0
    while [ $r -lt "$RUNS" ]; do
        measure "$mode" "$n" "$tport" "$tpid" "$tmp/t"
        measure "$mode" "$n" "$lport" "$lpid" "$tmp/l"
        r=$((r + 1))
    done
    tk=$(awk '{print $2}' "$tmp/t" | median); lk=$(awk '{print $2}' "$tmp/l" | median)
    tc=$(awk '{print $3}' "$tmp/t" | median); lc=$(awk '{print $3}' "$tmp/l" | median)
    th=$(awk '{print $4}' "$tmp/t" | median); lh=$(awk '{print $4}' "$tmp/l" | median)
    ratio=$(awk -v a="$lc" -v b="$tc" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
    printf '%-6s %10s %10s %12s %12s %8s %10s %10s\n' "$mode" "$tk" "$lk" "$tc" "$lc" "$ratio" "$th" "$lh"
done
