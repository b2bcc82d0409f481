#!/usr/bin/env bash
# Install the dev build into a scratch prefix and build + run a consumer against it,
# so that `find_package(ridgeline)` and the exported target keep working.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install build/dev --prefix "$prefix/install" >/dev/null
test -f "$prefix/install/share/ridgeline/hardware/nvidia/h200.yaml"
test -f "$prefix/install/share/ridgeline/models/llama/llama-3.1-8b.json"
cmake -S tests/install -B "$prefix/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix/install" >/dev/null
cmake --build "$prefix/build" >/dev/null
"$prefix/build/consumer"
echo "install: ok (find_package(ridgeline) + ridgeline::ridgeline)"

# `pip install .` into a fresh venv, offline: the in-tree build backend packages the dev
# build's module (RIDGELINE_BUILD_DIR; without it the backend configures its own Release
# build), then the package and its console script run from outside the checkout.
/usr/bin/python3 -m venv "$prefix/venv"
RIDGELINE_BUILD_DIR=build/dev "$prefix/venv/bin/pip" install --no-index --quiet .
(cd "$prefix" && "$prefix/venv/bin/python" -c '
import ridgeline
r = ridgeline.op("matmul", m=256, k=4096, n=4096, hw="h200")
assert r["flops"] == 2 * 256 * 4096 * 4096, r["flops"]
try:
    ridgeline.op("matmul", m=0, k=1, n=1)
    raise SystemExit("no ValueError for --m 0")
except ValueError as e:
    assert "--m" in str(e), e
')
"$prefix/venv/bin/ridgeline" hw show h200 --json >/dev/null
echo "install: ok (pip install . -> import ridgeline, ridgeline console script)"
