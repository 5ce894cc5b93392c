#!/usr/bin/env bash
# The memory checks of the test command (scripts/test.sh runs this), each
# skipped with a printed reason where its tool is missing:
#
# 1. valgrind memcheck over the integration tests that exercise unsafe
#    code: the drop paths, embedding calls, out of memory, Lua threads and
#    their pool, sockets, cords, the C module API (the `ci` profile's test
#    binaries, built by the `cargo test` step before this one). Any error
#    fails the step (`--error-exitcode`). Tests that run a child process
#    run it natively (no `--trace-children`); tests whose subject is
#    timing or scale, where memcheck's 20-50x slowdown says nothing more,
#    are left out by name below.
# 2. AddressSanitizer on the bridge's unit tests (`luafiber-lua --lib`),
#    where a nightly toolchain is present (`cargo +nightly`): the Rust code
#    instrumented, the engine's C code not.
# 3. Miri on the fiber crate's unit tests of its pure-Rust structures
#    (slots, ready ring, timers, wait lists), with strict provenance, where
#    the nightly toolchain has the `miri` component.
#
#   scripts/memcheck.sh            all three
#   ONLY=valgrind|asan|miri scripts/memcheck.sh
set -euo pipefail
cd "$(dirname "$0")/.."

only=${ONLY:-}
want() { [ -z "$only" ] || [ "$only" = "$1" ]; }
note() { printf '%s\n' "$*"; }

# ---------------------------------------------------------------- valgrind
# Test binary -> tests it leaves out (`--skip` filters).
VALGRIND_TESTS=(
    "drop_runtime:"
    "oom:"
    "embed_call:ten_thousand_lua_fibers_block_in_a_rust_function"
    "thread_pool:"
    "gc_anchor:"
    "lua_socket:pipelined_requests_get_every_reply"
    "lua_cords:many_threads_call_at_once_and_every_answer_is_right a_cord_in_a_long_lua_loop_does_not_stop_the_others calls_overlap_on_a_cord_when_they_yield"
    "c_api:"
    "yield_refused:"
)

if want valgrind; then
    if ! command -v valgrind >/dev/null; then
        note "skipped: valgrind is not installed (apt-get install valgrind)"
    else
        names=()
        for entry in "${VALGRIND_TESTS[@]}"; do names+=(--test "${entry%%:*}"); done
        # The executables of those test targets, as cargo reports them.
        mapfile -t bins < <(cargo test --profile ci --no-run --message-format=json "${names[@]}" 2>/dev/null |
            grep -o '"executable":"[^"]*"' | sed 's/"executable":"\(.*\)"/\1/')
        start=$SECONDS
        total=0
        for entry in "${VALGRIND_TESTS[@]}"; do
            name=${entry%%:*}
            skips=()
            for s in ${entry#*:}; do skips+=(--skip "$s"); done
            bin=
            for b in "${bins[@]}"; do
                case $(basename "$b") in "$name"-*) bin=$b ;; esac
            done
            [ -n "$bin" ] || { note "memcheck: no test binary for $name"; exit 1; }
            out=$(mktemp)
            t0=$SECONDS
            if ! valgrind --error-exitcode=99 --quiet --suppressions=scripts/valgrind.supp \
                "$bin" --test-threads=1 "${skips[@]}" >"$out" 2>&1; then
                cat "$out"
                note "memcheck: $name failed under valgrind"
                exit 1
            fi
            n=$(grep -o '^test result: ok\. [0-9]* passed' "$out" | grep -o '[0-9]* passed' | grep -o '[0-9]*' || echo 0)
            total=$((total + n))
            note "memcheck: $name: $n tests clean ($((SECONDS - t0)) s)"
            rm -f "$out"
        done
        note "memcheck: $total tests in ${#VALGRIND_TESTS[@]} binaries clean under valgrind in $((SECONDS - start)) s"
    fi
fi

# ----------------------------------------------------------- AddressSanitizer
if want asan; then
    if ! cargo +nightly --version >/dev/null 2>&1; then
        note "skipped: AddressSanitizer needs a nightly toolchain (cargo +nightly), which is not installed"
    else
        start=$SECONDS
        # Its own target dir: other flags would rebuild the others' builds.
        RUSTFLAGS="-Zsanitizer=address" RUSTDOCFLAGS="-Zsanitizer=address" \
            ASAN_OPTIONS="detect_leaks=0:detect_stack_use_after_return=0" \
            CARGO_TARGET_DIR=target/asan cargo +nightly test --profile ci \
            --target "$(rustc -vV | sed -n 's/^host: //p')" -p luafiber-lua --lib -- --test-threads=1 \
            2>&1 | tail -n 3
        note "asan: luafiber-lua's unit tests clean under AddressSanitizer in $((SECONDS - start)) s"
    fi
fi

# -------------------------------------------------------------------- Miri
if want miri; then
    if ! cargo +nightly miri --version >/dev/null 2>&1; then
        note "skipped: Miri needs the nightly toolchain's miri component (rustup +nightly component add miri rust-src), which is not installed"
    else
        start=$SECONDS
        MIRIFLAGS="-Zmiri-strict-provenance" CARGO_TARGET_DIR=target/miri \
            cargo +nightly miri test -p luafiber-fiber --lib 2>&1 | tail -n 3
        note "miri: luafiber-fiber's unit tests clean under Miri in $((SECONDS - start)) s"
    fi
fi
