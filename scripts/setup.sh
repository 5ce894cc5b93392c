#!/usr/bin/env bash
# What the tests need beyond Rust, installed when missing (idempotent; run
# by scripts/test.sh, safe to run by hand):
#   - `tarantool` (Debian's 2.6.0, as root or with sudo): the reference the
#     interop, net.box and cluster tests run against;
#   - the Python connectors `tarantool` and `asynctnt` from PyPI, in a
#     virtualenv at target/venv, with `gevent` (the HTTP server of
#     Tarantool's http_client_test.lua);
#   - the Node connector `tarantool-driver` from npm, under target/node
#     (only when `node` and `npm` are there).
# A tool that cannot be installed is reported here and its tests skip,
# saying so; nothing else fails.
#   scripts/setup.sh
set -u
cd "$(dirname "$0")/.."

SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive

if ! command -v tarantool >/dev/null 2>&1; then
    echo "setup: installing tarantool (apt-get)"
    $SUDO apt-get install -y -q --no-install-recommends tarantool >/dev/null 2>&1 ||
        { $SUDO apt-get update -q >/dev/null 2>&1 &&
          $SUDO apt-get install -y -q --no-install-recommends tarantool >/dev/null 2>&1; } ||
        echo "setup: could not install tarantool; the tests that need it skip"
fi
# Debian's package starts an example instance; nothing else may listen.
$SUDO systemctl disable --now tarantool@example 2>/dev/null >/dev/null || true

venv=target/venv
if ! "$venv/bin/python" -c 'import tarantool, asynctnt, gevent' 2>/dev/null; then
    echo "setup: installing tarantool-python, asynctnt and gevent into $venv"
    { python3 -m venv "$venv" &&
      "$venv/bin/pip" install -q --disable-pip-version-check 'tarantool==1.3.0' 'asynctnt==2.4.0' \
          'gevent==26.9.0'; } \
        >/dev/null 2>&1 ||
        echo "setup: could not install the Python connectors and gevent; their tests skip"
fi

if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
    if ! [ -d target/node/node_modules/tarantool-driver ]; then
        echo "setup: installing tarantool-driver into target/node"
        mkdir -p target/node
        npm install --silent --no-audit --no-fund --prefix target/node 'tarantool-driver@3.1.0' \
            >/dev/null 2>&1 || echo "setup: could not install tarantool-driver; its tests skip"
    fi
else
    echo "setup: no node/npm: the tarantool-driver tests skip"
fi
exit 0
