#!/usr/bin/env bash
# `make demo`: run Triton-made TTIR with `tilescope run` and check the results against numpy.
set -euo pipefail
TILESCOPE_BIN="$(realpath "${1:-build/tilescope}")" exec python3 "$(dirname "$0")/demo.py"
