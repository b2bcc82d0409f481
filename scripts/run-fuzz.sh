#!/usr/bin/env bash
# Runs each fuzz target for a fixed number of inputs with a fixed seed (deterministic),
# starting from a copy of the checked-in corpus. Usage: run-fuzz.sh BUILD_DIR RUNS
# The targets run in two lanes, one a core (CI machines have two), each lane's targets one after
# another; the lanes' times are about even, so the wall time is about half the sum. Measured in a
# fresh-clone CI run (2026-12-05, these runs): serving 307 s + result 22 s against profile 270 s +
# hardware_file 35 s + units 19 s + model_config 11 s, 329 s against 335 s (the serving target's
# later inputs are whole simulations of larger mutated workloads: a tenth of its runs takes a
# twenty-fifth of its time). At 100000 runs a fresh-clone CI of 2026-12-05 spent 382-398 s in
# this stage of its 1656-1868 s (the limit is 1800 s): `make fuzz` runs 80000 (the serving
# target 10000), about 300-320 s.
set -euo pipefail
dir=$1
runs=${2:-20000}
root=$(cd "$(dirname "$0")/.." && pwd)
lanes=("serving result" "profile hardware_file units model_config")
read -ra targets <<< "${lanes[*]}"  # every target, once
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# A serving input may be a whole (small) simulation, ~1-10 ms under the sanitizers: an eighth
# of the runs.
runs_of() { if [ "$1" = serving ]; then echo $((runs / 8)); else echo "$runs"; fi; }

run() {  # target: its whole output into $logs/target
  local t=$1 work rc=0
  work=$(mktemp -d)
  cp "$root/fuzz/corpus/$t/"* "$work/"
  "$dir/fuzz_$t" -seed=1 -runs="$(runs_of "$t")" -max_len=4096 -timeout=10 -rss_limit_mb=2048 "$work" > "$logs/$t" 2>&1 || rc=$?
  rm -rf "$work"
  return "$rc"
}

pids=()
for lane in "${lanes[@]}"; do
  (
    rc=0
    for t in $lane; do run "$t" || rc=1; done
    exit "$rc"
  ) &
  pids+=("$!")
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
for t in "${targets[@]}"; do
  echo "fuzz_$t: $(runs_of "$t") runs"
  grep -h "^Done [0-9]* runs" "$logs/$t" || tail -n 2 "$logs/$t"
done
# A failing target's whole output, where the crashing input and its stack are.
if [ "$status" != 0 ]; then
  for t in "${targets[@]}"; do
    grep -q "Done [0-9]* runs" "$logs/$t" || { echo "--- fuzz_$t failed:"; cat "$logs/$t"; }
  done
fi
exit "$status"
