#!/usr/bin/env bash
# Runs each fuzz target for a fixed number of inputs with a fixed seed (deterministic),
# starting from a copy of the checked-in corpus. Usage: run-fuzz.sh BUILD_DIR RUNS
set -euo pipefail
dir=$1
runs=${2:-20000}
root=$(cd "$(dirname "$0")/.." && pwd)
for t in units hardware_file model_config profile result serving; do
  work=$(mktemp -d)
  cp "$root/fuzz/corpus/$t/"* "$work/"
  n=$runs
  # A serving input may be a whole (small) simulation, ~1-10 ms under the sanitizers: an eighth
  # of the runs (a quarter took 394 s of CI's 30 minutes; the seed is fixed, so these are the
  # first half of those inputs).
  [ "$t" = serving ] && n=$((runs / 8))
  echo "fuzz_$t: $n runs"
  "$dir/fuzz_$t" -seed=1 -runs="$n" -max_len=4096 -timeout=10 -rss_limit_mb=2048 "$work" 2>&1 | tail -n 2
  rm -rf "$work"
done
