#!/usr/bin/env bash
# The network benches' set-up (docs/performance.md, "Network benches"): installs the load
# generators (wrk, redis-benchmark from redis-tools) and the C servers that
# compare_net.sh runs for `c-servers` (nginx-light, redis-server), then stops
# and disables their system services, so that nothing else listens or takes
# CPU while the benches run. Debian/Ubuntu, as root (or with sudo).
#   benches/net/setup.sh
set -eu
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends wrk redis-tools nginx-light redis-server
for svc in nginx redis-server; do
    # No systemd in a container: stop what the package started either way.
    $SUDO systemctl disable --now "$svc" 2>/dev/null || $SUDO service "$svc" stop 2>/dev/null || true
done
command -v wrk redis-benchmark nginx redis-server
