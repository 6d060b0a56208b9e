# tilescope: make setup | build | demo | test | bench
# `make demo` and `make test` do all the set-up on a fresh machine (Debian + PyPI).
SHELL := /bin/bash
BUILD ?= build
PY ?= python3
APT_PACKAGES := g++ cmake ninja-build ccache libgtest-dev nlohmann-json3-dev libcli11-dev libfmt-dev libeigen3-dev clang-format llvm-14-tools
JOBS ?= $(shell nproc)

.PHONY: setup build demo test test-cpp test-python test-peers bench bench-peers clean format

setup:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi
	@$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt

# One build of the CMake project in $(BUILD)/, shared by the C++ tests and the Python package:
# scikit-build-core configures and builds it (the `tilescope` command, the native module
# tilescope._native, the GoogleTest binary) incrementally and installs the package (with the
# auto-activation .pth); ctest runs in the same tree. Reinstalled only when a source changed.
BUILD_STAMP := $(BUILD)/.installed
BUILD_SOURCES := $(shell find src include python examples tests/cpp -type f \( -name '*.cpp' -o -name '*.h' \
  -o -name '*.def' -o -name '*.inc' -o -name '*.py' -o -name '*.pth' -o -name '*.sh' \) 2>/dev/null) \
  CMakeLists.txt pyproject.toml
build: $(BUILD_STAMP)
$(BUILD_STAMP): $(BUILD_SOURCES)
	@echo "building tilescope in $(BUILD)/ and installing the Python package"
	@set -o pipefail; CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PY) -m pip install -q --disable-pip-version-check \
	  --no-build-isolation --no-deps -C build-dir=$(BUILD) -C cmake.define.TILESCOPE_TESTS=ON . 2>&1 \
	  | { grep -v -e "as the 'root' user" -e "^WARNING: Location" || true; }
	@$(PY) -c "import tilescope._native" && touch $@

demo: setup build
	@bash examples/demo.sh $(BUILD)/tilescope

test: setup build
	$(MAKE) test-cpp test-python

test-cpp:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-python:
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope $(PY) -m pytest -q tests/python tests/robustness

# Liger-Kernel's own tests (from its PyPI sdist, into .peer/) under tilescope and TRITON_INTERPRET=1: bench/PEERS.md.
test-peers: setup build
	@$(PY) -m pip install -q --disable-pip-version-check pytest-timeout transformers
	@$(PY) -m pip install -q --disable-pip-version-check --no-deps liger-kernel==0.8.5
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope $(PY) bench/peer_suite.py $(PEER_ARGS)

bench: setup build
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope $(PY) bench/run.py

fidelity: setup build
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope $(PY) tests/gpu/fidelity.py

# tilescope's sanitizer against triton-viz's and TRITON_INTERPRET=1 (bench/peers.py; about 10 minutes).
bench-peers: setup build
	@$(PY) -m pip install -q --disable-pip-version-check -r bench/requirements-peers.txt
	@$(PY) -m pip install -q --disable-pip-version-check --no-deps triton-viz==3.0
	$(PY) bench/peers.py

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf $(BUILD)
