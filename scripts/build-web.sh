#!/usr/bin/env bash
# `make web`: the WebAssembly build (docs/web.md) into build/web/: index.html, its script
# and style, the worker, ridgeline.js and ridgeline.wasm (the catalog and the bundled models
# are inside the module). Needs the native converter of the catalog (build/dev/web/tools).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# Debian's Emscripten runs its JavaScript optimiser with node and finds acorn among Debian's
# node modules; a node from another packaging does not look there by itself.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
start=$(date +%s)
emcmake cmake -S . -B build/web-cmake -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DRIDGELINE_ENABLE_TESTS=OFF -DRIDGELINE_ENABLE_BENCH=OFF -DRIDGELINE_ENABLE_PYTHON=OFF \
  -DRIDGELINE_YAML_JSON="$root/build/dev/web/tools/ridgeline_yaml_json" >/dev/null
cmake --build build/web-cmake -j 2 --target ridgeline_web
mkdir -p build/web
cp web/page/index.html web/page/app.js web/page/charts.js web/page/worker.js web/page/style.css build/web/
cp build/web-cmake/web/ridgeline.js build/web-cmake/web/ridgeline.wasm build/web/
# For the page opened from a file (file://), where browsers fetch no .wasm and start no
# worker: the same module as a script that holds it (base64), run on the page's thread.
node -e 'const fs = require("fs"); fs.writeFileSync(process.argv[2], "window.RIDGELINE_WASM_BASE64 = \"" + fs.readFileSync(process.argv[1]).toString("base64") + "\";\n")' \
  build/web/ridgeline.wasm build/web/ridgeline-inline.js
echo "web: build/web/ in $(( $(date +%s) - start )) s ($(du -k build/web/ridgeline.wasm | cut -f1) KiB of WebAssembly)"
