#!/usr/bin/env bash
# Runs Tarantool's own tests, ported verbatim into this folder (app-tap/,
# app-luatest/, app/, box-luatest/ and box/, from Tarantool master's
# test/app-tap, test/app-luatest, test/app (console tests with their .result
# files), the test/box-luatest files that need no storage and the test/box
# console tests of net.box that need none, run on an instance listening on a
# Unix socket, as test-run's box/box.lua);
# lib/ holds the tap, luatest and console shims), on an interpreter:
#
#   tests/tarantool/run.sh INTERPRETER        every *.test.lua
#   ONLY=regexp tests/tarantool/run.sh ...    only files matching regexp
#
# `require('tap')` finds lib/tap.lua, which records every assertion with its
# full name; a luatest file runs through lib/run_luatest.lua, whose
# lib/luatest.lua records each test function as one assertion
# ("GROUP.TEST"). An assertion that fails and is listed in skips.tsv for this
# engine (the deliberate differences, docs/testing.md "Tarantool's tests") counts as
# skipped; any other failure fails the run. Each test runs in a scratch copy
# of its folder (some write log files). Exit status 0 when nothing failed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
interp=$(realpath "$1")
engine=$("$interp" -e "print(jit and 'luajit' or 'lua54')")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# skips.tsv: ENGINE<TAB>FILE<TAB>ASSERTION<TAB>REASON; ENGINE is luajit,
# lua54 or all; ASSERTION is a full assertion name, a prefix of names
# ending in '*', or '*' for the whole file; for a console test (app/,
# box/), '(stop at N)' runs no statement from line N on (what follows
# would wait for ever on what the skipped part did not make), counted as
# one skip.
skips=$(grep -v '^#' "$here/skips.tsv" | awk -F'\t' -v e="$engine" \
    'NF >= 3 && ($1 == e || $1 == "all") { print $2 "\t" $3 }')

skipped_name() { # FILE NAME -> status 0 when listed
    local file=$1 name=$2 f pat
    while IFS=$'\t' read -r f pat; do
        [ "$f" = "$file" ] || continue
        if [ "$pat" = "*" ] || [ "$pat" = "$name" ]; then return 0; fi
        case "$pat" in
            *'*') [ "${name#"${pat%\*}"}" != "$name" ] && return 0 ;;
        esac
    done <<< "$skips"
    return 1
}

# http_client_test.lua's server (httpd.py) needs Python's gevent:
# scripts/setup.sh puts it in target/venv; without it that file skips.
venv_python="$here/../../target/venv/bin/python"
if "$venv_python" -c 'import gevent' 2>/dev/null; then
    export PYTHON_EXECUTABLE=$venv_python
elif ! python3 -c 'import gevent' 2>/dev/null; then
    no_gevent=1
fi

# TARANTOOL_SRC_DIR: a directory whose `test` is this folder (the http
# client test runs $TARANTOOL_SRC_DIR/test/app-luatest/httpd.py).
mkdir -p "$scratch/src" && ln -s "$here" "$scratch/src/test"

total_pass=0 total_fail=0 total_skip=0
for path in "$here"/app-tap/*.test.lua "$here"/app-luatest/*_test.lua "$here"/app/*.test.lua \
        "$here"/box-luatest/*_test.lua "$here"/box/*.test.lua; do
    [ -e "$path" ] || continue
    file=${path#"$here"/}
    if [ -n "${ONLY:-}" ] && ! [[ $file =~ $ONLY ]]; then continue; fi
    if skipped_name "$file" "*" && grep -qP "^\Q$file\E\t\*$" <<< "$skips"; then
        printf '%-50s skipped (whole file, see skips.tsv)\n' "$file"
        total_skip=$((total_skip + 1))
        continue
    fi
    if [ -n "${no_gevent:-}" ] && [ "$file" = app-luatest/http_client_test.lua ]; then
        printf '%-50s skipped: no Python gevent for its httpd.py (scripts/setup.sh)\n' "$file"
        total_skip=$((total_skip + 1))
        continue
    fi
    work="$scratch/$(dirname "$file")"
    rm -rf "$work" && mkdir -p "$work" && cp -r "$here/$(dirname "$file")"/. "$work"
    log="$scratch/tap.log" && : > "$log"
    # A luatest file runs through lib/run_luatest.lua, a console test
    # through lib/console_run.lua, a tap one as a script.
    case $file in
        app-luatest/* | box-luatest/*) set -- "$here/lib/run_luatest.lua" "$(basename "$file")" ;;
        app/* | box/*) set -- "$here/lib/console_run.lua" "$(basename "$file")" ;;
        *) set -- "$(basename "$file")" ;;
    esac
    # test/box's console tests run on an instance that box.cfg{listen}
    # configured (test-run's box/box.lua): console_run.lua does it first.
    box_listen=
    case $file in box/*) box_listen="unix/:$work/box.iproto" ;; esac
    stop_at=$(awk -F'\t' -v f="$file" '$1 == f && $2 ~ /^\(stop at [0-9]+\)$/ {
        gsub(/[^0-9]/, "", $2); print $2 }' <<< "$skips")
    (cd "$work" && LUA_PATH="$here/lib/?.lua;;" LUAFIBER_TAP_LOG="$log" \
        LUAFIBER_BOX_LISTEN="$box_listen" LUAFIBER_TEST_STOP_AT="$stop_at" \
        LUAFIBER_TEST_OUT="$scratch/out" TARANTOOL_SRC_DIR="$scratch/src" \
        LUAFIBER_CONSOLE_YAML="$here/../../src/console/yaml.lua" \
        timeout 120 "$interp" -e "require('compat')" "$@" \
        > "$scratch/out" 2>&1)
    status=$?
    # A file that ran out of time hung: a failure, whatever it printed.
    if [ "$status" -eq 124 ]; then
        printf 'not ok\t(hung): no end within 120 s\n' >> "$log"
    elif grep -q '^luafiber: ' "$scratch/out"; then
        printf 'not ok\t(died): %s\n' "$(grep -m1 '^luafiber: ' "$scratch/out")" >> "$log"
    elif [ "$status" -gt 1 ]; then
        printf 'not ok\t(died): exit status %s\n' "$status" >> "$log"
    fi
    pass=0 fail=0 skip=0
    [ -n "$stop_at" ] && skip=1
    while IFS=$'\t' read -r result name; do
        if [ "$result" = ok ]; then
            pass=$((pass + 1))
        elif skipped_name "$file" "$name"; then
            skip=$((skip + 1))
        else
            fail=$((fail + 1))
            echo "    FAILED: $name"
        fi
    done < "$log"
    if [ "$fail" -gt 0 ]; then
        sed 's/^/    | /' "$scratch/out" | grep -E 'not ok|died|luafiber:' | head -20
    fi
    printf '%-50s %d passed, %d failed, %d skipped\n' "$file" "$pass" "$fail" "$skip"
    total_pass=$((total_pass + pass))
    total_fail=$((total_fail + fail))
    total_skip=$((total_skip + skip))
done
echo "tarantool tests ($engine): $total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
