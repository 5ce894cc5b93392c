#!/bin/sh
# Instructions per request of an IPROTO callee (callgrind): runs
# iproto_callee.lua on BINARY under valgrind, drives each MODE with
# Tarantool 2.6's net.box (iproto_caller.lua on `tarantool`, REQUESTS
# requests plus its 2,000 warm-up ones), zeroing the counters before and
# dumping them after each mode, and prints the callee's instructions per
# request. Deterministic up to the batching (how many requests one wakeup
# finds), which valgrind's slowness makes larger than a real run's.
#   benches/net/instr_iproto.sh [BINARY]        (default target/release/luafiber)
# MODES (default: call eval ping pairs), REQUESTS (default 20000),
# KEEP=DIR keeps the callgrind dumps in DIR (callgrind_annotate them).
# Needs valgrind.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
BIN=${1:-$here/../../target/release/luafiber}
MODES=${MODES:-call eval ping pairs}
REQUESTS=${REQUESTS:-20000}
tmp=$(mktemp -d)
out=${KEEP:-$tmp}
mkdir -p "$out"
vpid=""
cleanup() { [ -n "$vpid" ] && kill "$vpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$tmp" && exec valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out.%p" \
    "$BIN" "$here/iproto_callee.lua" "$port" "$tmp" >"$tmp/callee.out" 2>&1) &
vpid=$!
i=0
until grep -q PORT "$tmp/callee.out" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 600 ] || { echo "callee did not start" >&2; exit 1; }
    sleep 0.1
done
# The dumps' total instructions.
total() { awk '/^(summary|totals):/ {print $2; exit}' "$1"; }
printf '%-6s %10s %14s\n' mode requests instr/req
for mode in $MODES; do
    callgrind_control -z "$vpid" >/dev/null 2>&1
    tarantool "$here/iproto_caller.lua" "127.0.0.1:$port" "$mode" "$REQUESTS" >/dev/null
    callgrind_control -d "mode-$mode" "$vpid" >/dev/null 2>&1
    f=$(ls -t "$out"/callgrind.out.* | head -1)
    n=$((REQUESTS + 2000))
    awk -v i="$(total "$f")" -v n=$n -v m="$mode" 'BEGIN { printf "%-6s %10d %14.0f\n", m, n, i / n }'
    [ -n "${KEEP:-}" ] && mv "$f" "$out/$mode.callgrind"
done
