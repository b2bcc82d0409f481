#!/usr/bin/env bash
# What `make web` and `make test-web` need beyond scripts/install-deps.sh: Debian's
# Emscripten (the compiler of the WebAssembly build) and Node.js (which Emscripten runs, and
# which runs the equality and browser tests), then the tests' npm packages as pinned in
# web/package-lock.json (`npm ci`: playwright-core, which drives Debian's Chromium; it
# downloads no browser). Idempotent; talks to no network but Debian's registry and npm's.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(emscripten chromium)
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then missing+=("$p"); fi
done
# Node.js may come from Debian's nodejs or another packaging of it: any node >= 18 with npm.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then missing+=(nodejs npm); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-web-deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
      echo "install-web-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 2
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm ci only when web/node_modules is not what the lock file pins.
if ! cmp -s web/package-lock.json web/node_modules/.ridgeline-lock 2>/dev/null; then
  (cd web && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  cp web/package-lock.json web/node_modules/.ridgeline-lock
fi
