#!/usr/bin/env bash
# The criterion benches with their before/after variants: `cargo bench` with
# `--cfg luafiber_bench`, which turns on the bench knobs of the bridge
# (`NewThread`, `Handlers`, `call_by`/`eval_by`) that the product does not
# offer. A target dir of its own keeps the other builds' artifacts (other
# RUSTFLAGS would rebuild everything).
#   benches/bench.sh [cargo bench arguments]   e.g. --bench fiber_churn
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="${RUSTFLAGS:-} --cfg luafiber_bench"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/bench}"
exec cargo bench "$@"
