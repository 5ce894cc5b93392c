#!/usr/bin/env bash
# The project's test command (README): formatting, lints, the docs' links, the Rust tests and
# the Lua conformance cases, for both Lua engines (LuaJIT and Lua 5.4), and
# once more on LuaJIT with every fast path off (`--cfg
# luafiber_no_fast_paths`), so the C API paths that the fast paths skip stay
# tested.
# The full run also runs the memory checks (scripts/memcheck.sh: valgrind
# memcheck over the integration tests that exercise unsafe code;
# AddressSanitizer and Miri where a nightly toolchain has them, else it says
# they skipped) on the LuaJIT build; the fuzz targets run bounded, with a
# fixed seed, as ordinary tests (tests/fuzz.rs, iproto/tests/decode_fuzz.rs).
#   scripts/test.sh            everything
#   QUICK=1 scripts/test.sh    LuaJIT only (fast paths on), no fmt, clippy,
#                              doc or memory checks
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

# What the interop tests need (tarantool, the Python and Node connectors).
step "set-up (scripts/setup.sh)"
scripts/setup.sh

if [ -z "${QUICK:-}" ]; then
    step "cargo fmt --check"
    cargo fmt --all -- --check
    step "cargo clippy (LuaJIT)"
    cargo clippy --workspace --all-targets -- -D warnings
    step "cargo clippy (Lua 5.4)"
    CARGO_TARGET_DIR=target/lua54 cargo clippy --workspace --all-targets \
        --no-default-features --features lua54 -- -D warnings
    step "the documents' links"
    scripts/check_docs.sh
    # Broken or private intra-doc links fail here, not in a reader's browser.
    step "cargo doc"
    RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -D warnings" cargo doc --workspace --no-deps --profile ci
fi

# The `ci` profile is the release code without link-time optimisation
# (Cargo.toml): the same behaviour, far shorter links.
step "cargo test (LuaJIT)"
cargo test --workspace --profile ci
if [ -z "${QUICK:-}" ]; then
    # On the test binaries the step above built.
    step "memory checks (scripts/memcheck.sh)"
    scripts/memcheck.sh
    # Its own target dir: other RUSTFLAGS would rebuild the others' builds.
    step "cargo test (LuaJIT, no fast paths)"
    RUSTFLAGS="${RUSTFLAGS:-} --cfg luafiber_no_fast_paths" CARGO_TARGET_DIR=target/nofast \
        cargo test --workspace --profile ci
    step "cargo test (Lua 5.4)"
    CARGO_TARGET_DIR=target/lua54 cargo test --workspace --profile ci \
        --no-default-features --features lua54
fi

# Conformance cases an engine is let off (none now): regexps of case names.
SKIP_LUAJIT=${SKIP_LUAJIT:-'^$'}
SKIP_LUA54=${SKIP_LUA54:-'^$'}

# LuaJIT's cases run on the binary that ships (`--release`, with link-time
# optimisation), Lua 5.4's on the tests' build.
step "conformance (LuaJIT)"
cargo build --release --bin luafiber
SKIP="$SKIP_LUAJIT" tests/conformance/run.sh target/release/luafiber
if [ -z "${QUICK:-}" ]; then
    step "conformance (LuaJIT, no fast paths)"
    SKIP="$SKIP_LUAJIT" tests/conformance/run.sh target/nofast/ci/luafiber
    step "conformance (Lua 5.4)"
    CARGO_TARGET_DIR=target/lua54 cargo build --profile ci --bin luafiber \
        --no-default-features --features lua54
    SKIP="$SKIP_LUA54" tests/conformance/run.sh target/lua54/ci/luafiber
fi

# Tarantool's own tests (tests/tarantool: ported verbatim, deliberate
# differences in tests/tarantool/skips.tsv).
step "tarantool tests (LuaJIT)"
tests/tarantool/run.sh target/release/luafiber
if [ -z "${QUICK:-}" ]; then
    step "tarantool tests (Lua 5.4)"
    tests/tarantool/run.sh target/lua54/ci/luafiber
fi
