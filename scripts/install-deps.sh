#!/usr/bin/env bash
# Installs the Debian packages ridgeline needs to build and test, only those missing.
# Idempotent; talks to no network other than Debian's package registry.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ make          # build
  libcli11-dev                        # command-line parsing (CLI11)
  nlohmann-json3-dev                  # JSON output and config.json reading
  libyaml-cpp-dev                     # hardware files
  zlib1g-dev                          # gzipped PyTorch profiler traces
  libsimdjson-dev                     # streaming PyTorch trace reader (simdjson per event)
  libtbb-dev                          # parallel plan search (oneTBB)
  libopenblas-dev pkg-config          # validate's GEMMs (OpenBLAS, found through pkg-config)
  libdnnl-dev                         # validate's bf16 matmul and int8 GEMM (oneDNN, loaded at run time)
  libhwloc-dev                        # measure: the host's cache topology (hwloc)
  likwid                              # measure --compare likwid: likwid-bench's kernels beside ridgeline's
  pybind11-dev python3-dev            # the Python module
  python3-pytest python3-venv         # Python tests, and `pip install .` into a venv (make install-check)
  chromium                            # the HTML report's test in a real (headless) browser
  libfmt-dev                          # formatting of tables and numbers
  libfast-float-dev                   # numbers read alike in the native and WebAssembly builds (fast_float)
  libgtest-dev libgmock-dev           # unit and CLI tests
  librapidcheck-dev                   # property tests
  libbenchmark-dev                    # bench/
  clang libclang-rt-14-dev            # the sanitizer build: tests and libFuzzer targets (fuzz/)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 2
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
