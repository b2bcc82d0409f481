#!/usr/bin/env bash
# Install the dev build into a scratch prefix and build + run a consumer against it,
# so that `find_package(ridgeline)` and the exported target keep working.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install build/dev --prefix "$prefix/install" >/dev/null
cmake -S tests/install -B "$prefix/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix/install" >/dev/null
cmake --build "$prefix/build" >/dev/null
"$prefix/build/consumer"
echo "install: ok (find_package(ridgeline) + ridgeline::ridgeline)"
