#!/usr/bin/env bash
# `make demo`: run the bundled buggy Triton examples under `tilescope sanitize` (findings with source
# lines), then show the engine running Triton-made TTIR with `tilescope run` (checked against numpy).
# Usage: examples/demo.sh [path/to/tilescope] [--quick | --only buggy_x.py]
set -euo pipefail
bin="${1:-build/tilescope}"
shift || true
TILESCOPE_BIN="$(realpath "$bin")" exec python3 "$(dirname "$0")/demo.py" "$@"
