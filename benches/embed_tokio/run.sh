#!/usr/bin/env bash
# benches/embed_tokio: luafiber against mlua calling the same Lua from a tokio
# program (README.md). Builds both sides (each a crate of its own, in
# target/embed_tokio), then runs the calls bench ROUNDS times, the sides (the
# floor with no Lua, mlua, luafiber with call_async, luafiber with call_local)
# in turns, and the HTTP services under wrk (-t2 -c64, SECS seconds each).
#   benches/embed_tokio/run.sh [ROUNDS] [SECS]      (3 and 5 by default)
set -eu
ROUNDS=${1:-3}
SECS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HERE/../../target/embed_tokio}
for side in mlua luafiber; do
  (cd "$HERE/$side" && cargo build --release -q)
done
BIN=$CARGO_TARGET_DIR/release
echo "side case calls/s cpu_us_per_call"
for _ in $(seq "$ROUNDS"); do
  "$BIN/floor" "$SECS"
  "$BIN/embed-tokio-mlua" "$SECS"
  "$BIN/embed-tokio-luafiber" "$SECS"
  "$BIN/embed-tokio-luafiber" "$SECS" local
done
command -v wrk >/dev/null || { echo "no wrk: benches/net/setup.sh installs it"; exit 0; }
echo "side http requests cpu_us_per_request; wrk's requests/s"
for _ in $(seq "$ROUNDS"); do
  for srv in axum_mlua:8091: axum_lua:8092: axum_lua:8093:local; do
    name=${srv%%:*} rest=${srv#*:} port=${rest%:*} mode=${rest#*:}
    "$BIN/$name" "$port" "$((SECS + 2))" ${mode:+"$mode"} &
    pid=$!
    sleep 1
    wrk -t2 -c64 -d"${SECS}s" "http://127.0.0.1:$port/" | awk -v n="$name${mode:+-$mode}" '/Requests\/sec/ {print n, "wrk requests/s", $2}'
    wait "$pid"
  done
done
