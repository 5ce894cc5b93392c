#!/usr/bin/env bash
# vshard router benchmark (issue 28): the same four Tarantool storages
# (tests/vshard/storages.sh), then bench_router.lua on router A and router B
# in turn (A B A B ...), each a fresh process doing REQUESTS callrw of a
# small get-or-put from 100 fibers. Prints per router the medians of
# requests/s, router CPU microseconds per request (/proc/PID/stat) and Lua
# heap KB allocated per 1,000 requests, and B/A.
#   VSHARD_PATH=/path/to/vshard benches/net/vshard/run.sh \
#       [A=tarantool] [B=target/release/luafiber] [runs=3] [requests=200000]
# A router that cannot load vshard.router (tests/vshard/probe.lua) is
# skipped with the probe's reason.
set -u
: "${VSHARD_PATH:?set VSHARD_PATH to a checkout of github.com/tarantool/vshard (README, vshard)}"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
A=${1:-tarantool}
B=${2:-$ROOT/target/release/luafiber}
RUNS=${3:-3}
REQUESTS=${4:-200000}
export CLK_TCK=$(getconf CLK_TCK)
tmp=$(mktemp -d)
spid=
cleanup() { [ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

"$ROOT/tests/vshard/storages.sh" "$tmp/cluster" > "$tmp/storages.out" 2>&1 &
spid=$!
for _ in $(seq 600); do grep -q '^ready' "$tmp/storages.out" && break; sleep 0.1; done
grep -q '^ready' "$tmp/storages.out" || { echo "storages did not start:"; cat "$tmp/storages.out"; exit 1; }
export $(grep -o 'VSHARD_PORTS=[0-9,]*' "$tmp/storages.out")

sides=()
for side in A B; do
    cmd=$A; [ $side = B ] && cmd=$B
    probe=$("$cmd" "$ROOT/tests/vshard/probe.lua" 2>&1)
    if [ "$(echo "$probe" | tail -n 1)" = ok ]; then
        sides+=($side)
    else
        echo "skipped: router $side ($cmd) cannot load vshard.router: $(echo "$probe" | grep '^missing' | tr '\n' ' ')"
    fi
done
[ ${#sides[@]} -gt 0 ] || exit 1

for r in $(seq "$RUNS"); do
    for side in "${sides[@]}"; do
        cmd=$A; [ $side = B ] && cmd=$B
        line=$(cd "$tmp" && timeout 900 "$cmd" "$HERE/bench_router.lua" "$REQUESTS" 100 2> "$tmp/router-$side.err" | grep '^result')
        if [ -z "$line" ]; then
            echo "router $side ($cmd) failed: $(grep -v '^20..-' "$tmp/router-$side.err" | tail -n 5)"
            continue
        fi
        echo "run $r $side: $line"
        echo "$side $line" >> "$tmp/raw"
    done
done
[ -s "$tmp/raw" ] || { echo "no results"; exit 1; }
awk -v A="$A" -v B="$B" '
  { side=$1; for (i=3;i<=NF;i++) { split($i, kv, "="); f[kv[1]]=kv[2] }
    n[side]++; k=n[side]
    rps[side,k]=f["requests"]/f["seconds"]; us[side,k]=f["cpu"]*1e6/f["requests"]; kb[side,k]=f["heap_kb_per_1000"] }
  function median(arr, side,   m,i,j,t,a) { m=n[side]; for(i=1;i<=m;i++) a[i]=arr[side,i]
    for(i=1;i<=m;i++) for(j=i+1;j<=m;j++) if (a[j]<a[i]) {t=a[i];a[i]=a[j];a[j]=t}
    return (m%2) ? a[(m+1)/2] : (a[m/2]+a[m/2+1])/2 }
  END {
    printf "| router | requests/s | router CPU us/request | Lua heap KB/1000 requests |\n|---|---|---|---|\n"
    for (s=1; s<=2; s++) { side = s==1 ? "A" : "B"; if (!(side in n)) continue
      ra[side]=median(rps,side); ua[side]=median(us,side); ka[side]=median(kb,side)
      printf "| %s %s | %.0f | %.2f | %.1f |\n", side, side=="A"?A:B, ra[side], ua[side], ka[side] }
    if (("A" in n) && ("B" in n))
      printf "| B/A | %.2f | %.2f | %.2f |\n", ra["B"]/ra["A"], ua["B"]/ua["A"], ka["B"]/ka["A"]
  }' "$tmp/raw"
