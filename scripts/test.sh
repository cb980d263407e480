#!/usr/bin/env bash
# Run perfkit's checks: ruff, mypy, then the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/pytest -q "$@"
