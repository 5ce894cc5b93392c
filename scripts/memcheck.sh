#!/usr/bin/env bash
# The memory checks of the test command (scripts/test.sh runs this), each
# skipped with a printed reason where its tool is missing:
#
# 1. valgrind memcheck over the integration tests that exercise unsafe
#    code: the drop paths, embedding calls, out of memory, Lua threads and
#    their pool, sockets, cords, the C module API (the `ci` profile's test
#    binaries, built by the `cargo test` step before this one), two
#    binaries at a time. Any error fails the step (`--error-exitcode`).
#    Tests that would run their body in a child process run it in the
#    checked one (`LUAFIBER_TEST_INLINE=1`, fiber/tests/support/child.rs);
#    tests whose subject is timing or scale, where memcheck's 20-50x
#    slowdown says nothing more, are left out by name below.
# 2. AddressSanitizer on the bridge's unit tests (`luafiber-lua --lib`),
#    on request (MEMCHECK_ASAN=1, see its section for why not by default)
#    where a nightly toolchain is present (`cargo +nightly`).
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
# Test binary -> tests it leaves out (`--skip` filters): two whose subject
# is scale (200,000 fibers into an 8 MB heap: over 250 s of CPU under
# memcheck; 10,000 fibers blocked at once), which check nothing more there.
# Not here: `yield_contexts` (over 2 minutes), `hub` (over 2.5 minutes),
# `churn` (its scale tests fail under memcheck's slowdown), `stacks` and
# the fiber crate's overflow tests (their children die by design).
# The costliest first, so the jobs end about together (docs/testing.md has
# each binary's cost).
VALGRIND_TESTS=(
    "gc_anchor:"
    "lua_cords:"
    "lua_socket:"
    "errors:"
    "embed_call:ten_thousand_lua_fibers_block_in_a_rust_function"
    "oom:fiber_creation_past_the_limit_is_a_lua_error"
    "drop_runtime:"
    "yield_refused:"
    "value_types:"
    "channel_values:"
    "c_api:"
    "c_modules:"
    "thread_pool:"
    "threads:"
    "slices:"
    "semantics:"
    "log:"
    "lua_fio:"
    "json:"
    "lua_io:"
    "top:"
    # Local cords on tokio workers. The test left out starts fibers on the
    # second cord of a host `Builder` runtime, where memcheck reports
    # invalid writes at fiber start (thread `luafiber-1`), as it does for
    # tests/embed_surface.rs on main: not the local cords'.
    "embed_local:on_a_cord_it_crosses_as_call_async"
)
# Binaries run side by side (valgrind runs a process on one core).
VALGRIND_JOBS=${VALGRIND_JOBS:-2}

if want valgrind; then
    if ! command -v valgrind >/dev/null; then
        note "skipped: valgrind is not installed (apt-get install valgrind)"
    else
        names=()
        for entry in "${VALGRIND_TESTS[@]}"; do names+=(--test "${entry%%:*}"); done
        # The executables of those test targets, as cargo reports them.
        mapfile -t bins < <(cargo test --profile ci --no-run --message-format=json "${names[@]}" 2>/dev/null |
            grep -o '"executable":"[^"]*"' | sed 's/"executable":"\(.*\)"/\1/')
        out=$(mktemp -d)
        # One binary under memcheck: its test count in $out/NAME.count, its
        # output in $out/NAME.log; a failure leaves $out/NAME.failed.
        check() {
            local name=$1 bin=$2
            shift 2
            local t0=$SECONDS
            # LUAFIBER_TEST_INLINE: the bodies of tests that would run in a
            # child process run in this one, under memcheck.
            if ! LUAFIBER_TEST_INLINE=1 valgrind --error-exitcode=99 --quiet --leak-check=no \
                --suppressions=scripts/valgrind.supp "$bin" --test-threads=1 "$@" \
                >"$out/$name.log" 2>&1; then
                touch "$out/$name.failed"
            fi
            grep -o '^test result: ok\. [0-9]* passed' "$out/$name.log" |
                grep -o '[0-9]*' >"$out/$name.count" || echo 0 >"$out/$name.count"
            note "memcheck: $name: $(cat "$out/$name.count") tests ($((SECONDS - t0)) s)"
        }
        start=$SECONDS
        : >"$out/queue"
        for entry in "${VALGRIND_TESTS[@]}"; do
            name=${entry%%:*}
            bin=
            for b in "${bins[@]}"; do
                case $(basename "$b") in "$name"-*) bin=$b ;; esac
            done
            [ -n "$bin" ] || { note "memcheck: no test binary for $name"; exit 1; }
            line="$name $bin"
            for s in ${entry#*:}; do line="$line --skip $s"; done
            echo "$line" >>"$out/queue"
        done
        # The jobs take the binaries in order, each the next one free.
        export out
        export -f check note
        xargs -P "$VALGRIND_JOBS" -L 1 bash -c 'check "$@"' _ <"$out/queue"
        total=0
        failed=
        for entry in "${VALGRIND_TESTS[@]}"; do
            name=${entry%%:*}
            total=$((total + $(cat "$out/$name.count")))
            if [ -e "$out/$name.failed" ]; then
                cat "$out/$name.log"
                failed="$failed $name"
            fi
        done
        rm -rf "$out"
        if [ -n "$failed" ]; then
            note "memcheck: failed under valgrind:$failed"
            exit 1
        fi
        note "memcheck: $total tests in ${#VALGRIND_TESTS[@]} binaries clean under valgrind in $((SECONDS - start)) s"
    fi
fi

# ----------------------------------------------------------- AddressSanitizer
# Opt-in (MEMCHECK_ASAN=1): fibers switch machine stacks (corosensei) with
# no AddressSanitizer annotations (`__sanitizer_start_switch_fiber`), so it
# warns that its reports from code on fiber stacks may be false. A trial on
# this repository (nightly 1.97, about 4 min of CPU to build): ASan warned "False
# positive error reports may follow" on the first fiber and reported a
# stack-buffer-overflow in LuaJIT's lj_ccall_func under a fiber's
# collectgarbage; with its default `use_sigaltstack` it also dies at a
# thread's exit, failing to unmap its signal stack (EINVAL).
if want asan; then
    if ! cargo +nightly --version >/dev/null 2>&1; then
        note "skipped: AddressSanitizer needs a nightly toolchain (cargo +nightly), which is not installed"
    elif [ -z "${MEMCHECK_ASAN:-}" ]; then
        note "skipped: AddressSanitizer: $(cargo +nightly --version) is here, but fiber stack switches are not annotated for it, so it cannot tell its true reports there from false ones (scripts/memcheck.sh says more; MEMCHECK_ASAN=1 runs it anyway)"
    else
        start=$SECONDS
        # Its own target dir: other flags would rebuild the others' builds.
        RUSTFLAGS="-Zsanitizer=address" RUSTDOCFLAGS="-Zsanitizer=address" \
            ASAN_OPTIONS="detect_leaks=0:detect_stack_use_after_return=0:use_sigaltstack=0" \
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
