# Quick start: `make demo` and `make test`. Everything else is optional.
RIDGELINE := build/dev/apps/ridgeline/ridgeline

.PHONY: all deps configure build test demo docs bench asan fuzz install install-check web test-web clean
all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake --preset dev >/dev/null

build: configure
	@cmake --build --preset dev

test: build
	@ctest --preset dev

# The demo builds the command-line tool only and writes under build/demo.
demo: configure
	@cmake --build --preset dev --target ridgeline_cli
	@bash scripts/demo.sh $(RIDGELINE)

# The README's charts redrawn into docs/img, and every sample output in README.md and
# docs/ checked against the binary (the docs_samples test does the latter too).
docs: configure
	@cmake --build --preset dev --target ridgeline_cli
	@bash scripts/demo.sh $(RIDGELINE) docs/img >/dev/null
	@python3 scripts/check_docs.py $(RIDGELINE) .

bench: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release --target ridgeline_bench
	@build/release/bench/ridgeline_bench

# The tests and the libFuzzer targets share one clang build under AddressSanitizer + UBSan
# (build/asan): `make asan` builds both and runs the tests, `make fuzz` runs the targets.
asan: deps
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan
	@ctest --preset asan

fuzz: deps
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan --target fuzz_units fuzz_hardware_file fuzz_model_config fuzz_profile fuzz_result fuzz_serving
	@bash scripts/run-fuzz.sh build/asan/fuzz 80000

# The CLI into PREFIX/bin (with the library, headers and CMake package): `make install
# PREFIX=~/.local` puts `ridgeline` on a PATH that has ~/.local/bin.
PREFIX ?= /usr/local
install: build
	@cmake --install build/dev --prefix $(PREFIX)
	@echo "ridgeline installed: $(PREFIX)/bin/ridgeline"

install-check: build
	@bash scripts/check-install.sh

# The static page with the engine in WebAssembly (docs/web.md), into build/web/; its tests:
# the same JSON as the CLI for a set of cases, and the page in headless Chromium.
web: configure
	@bash scripts/install-web-deps.sh
	@cmake --build --preset dev --target ridgeline_yaml_json ridgeline_cli
	@bash scripts/build-web.sh

test-web: web
	@node web/test/size.mjs build/web
	@node web/test/equality.mjs $(RIDGELINE) build/web
	@node web/test/browser.mjs build/web build/web-test $(RIDGELINE)

clean:
	rm -rf build
