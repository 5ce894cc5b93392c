#!/usr/bin/env bash
# Instructions, not time: runs every lua/*.lua script under callgrind with two
# interpreters, at two sizes (BENCH_SCALE=S1 and S2), and prints per script the
# instructions the extra work took (S2's count minus S1's, so start-up and the
# fixed parts cancel) for each, and the ratio A/B. Deterministic: a difference of
# 1% is real on any machine, where compare.sh's times move by 20% on a shared VM.
# It sees no cache or branch effects; compare.sh is the judge of time.
#   benches/instr.sh A_CMD B_CMD [regexp]      (S1=0.01 S2=0.03 by default)
# Needs valgrind (apt-get install valgrind).
set -u
A=${1:?usage: instr.sh A_CMD B_CMD [regexp]}
B=${2:?usage: instr.sh A_CMD B_CMD [regexp]}
ONLY=${3:-.}
S1=${S1:-0.01}
S2=${S2:-0.03}
HERE=$(cd "$(dirname "$0")" && pwd)
abs() { case "$1" in */*) echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")" ;; *) command -v "$1" ;; esac; }
A=$(abs "$A"); B=$(abs "$B")
count() { # interpreter script scale -> instructions
  (cd "$HERE/lua" && BENCH_SCALE=$3 timeout "${TIMEOUT:-600}" valgrind --tool=callgrind \
    --callgrind-out-file=/dev/null "$1" "$2" 2>&1 >/dev/null) |
    awk '/Collected :/ {print $4}'
}
printf "%-28s %14s %14s %8s\n" script "A instr" "B instr" "A/B"
for s in "$HERE"/lua/*.lua; do
  case $s in */benchlib.lua) continue ;; esac
  b=$(basename "$s" .lua)
  printf '%s' "$b" | grep -Eq "$ONLY" || continue
  a1=$(count "$A" "$s" "$S1"); a2=$(count "$A" "$s" "$S2")
  b1=$(count "$B" "$s" "$S1"); b2=$(count "$B" "$s" "$S2")
  if [ -z "$a1" ] || [ -z "$a2" ] || [ -z "$b1" ] || [ -z "$b2" ]; then
    printf "%-28s %14s %14s %8s\n" "$b" - - n/a; continue
  fi
  awk -v n="$b" -v a=$((a2 - a1)) -v b=$((b2 - b1)) \
    'BEGIN { printf "%-28s %14d %14d %8s\n", n, a, b, (a > 0 && b > 0) ? sprintf("%.3f", a / b) : "n/a" }'
done
