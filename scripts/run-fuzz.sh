#!/usr/bin/env bash
# Runs each fuzz target for a fixed number of inputs with a fixed seed (deterministic),
# starting from a copy of the checked-in corpus. Usage: run-fuzz.sh BUILD_DIR RUNS
# The serving target, the longest by far, runs on one core while the other five run one after
# another on the other (CI machines have two): the wall time is the serving run's, not the sum.
set -euo pipefail
dir=$1
runs=${2:-20000}
root=$(cd "$(dirname "$0")/.." && pwd)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

run() {  # target, runs: the target's last two lines of output into $logs/target
  local t=$1 n=$2 work
  work=$(mktemp -d)
  cp "$root/fuzz/corpus/$t/"* "$work/"
  local rc=0
  "$dir/fuzz_$t" -seed=1 -runs="$n" -max_len=4096 -timeout=10 -rss_limit_mb=2048 "$work" > "$logs/$t" 2>&1 || rc=$?
  rm -rf "$work"
  return "$rc"
}

# A serving input may be a whole (small) simulation, ~1-10 ms under the sanitizers: an eighth
# of the runs (a quarter took 394 s of CI's 30 minutes; the seed is fixed, so these are the
# first half of those inputs).
run serving $((runs / 8)) &
serving=$!
status=0
for t in units hardware_file model_config profile result; do
  run "$t" "$runs" || status=1
done
wait "$serving" || status=1
for t in units hardware_file model_config profile result serving; do
  n=$runs
  [ "$t" = serving ] && n=$((runs / 8))
  echo "fuzz_$t: $n runs"
  tail -n 2 "$logs/$t"
done
# A failing target's whole output, where the crashing input and its stack are.
if [ "$status" != 0 ]; then
  for t in units hardware_file model_config profile result serving; do
    grep -q "Done [0-9]* runs" "$logs/$t" || { echo "--- fuzz_$t failed:"; cat "$logs/$t"; }
  done
fi
exit "$status"
