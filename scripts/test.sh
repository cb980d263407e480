#!/usr/bin/env bash
# Run perfkit's checks: ruff, mypy, then the test suite.
#
#   scripts/test.sh             everything (what CI runs): every test, in parallel workers (~19 min on 2 cores)
#   scripts/test.sh --fast      the inner loop: ruff, mypy on its cache, every test not marked slow
#                               (~75 s on 2 cores; the first mypy run fills .mypy_cache)
#
# Other arguments go to pytest (e.g. scripts/test.sh --fast tests/store -x).
# PERFKIT_TEST_WORKERS sets the number of pytest workers (default: one per core, at most 4; 0 or 1
# runs the tests in this process).
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

fast=0
print_workers=0
args=()
for arg in "$@"; do
  if [ "$arg" = "--fast" ]; then fast=1
  elif [ "$arg" = "--print-workers" ]; then print_workers=1  # say how many workers, run nothing
  else args+=("$arg"); fi
done
# GNU nproc honours OMP_NUM_THREADS (set to 1 above): count the cores without it
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)
workers=${PERFKIT_TEST_WORKERS:-$(( cores < 4 ? cores : 4 ))}
if [ "$print_workers" = 1 ]; then echo "$workers"; exit 0; fi

.venv/bin/ruff check .
.venv/bin/mypy  # incremental: .mypy_cache keeps what did not change

marks=()
dist=(--dist loadgroup)  # a module whose tests share a fixture of its own wider than a test (a server,
                         # a profiled run) goes to one worker whole; every other test to whichever
                         # worker is free, slow tests first (tests/conftest.py: balance)
if [ "$fast" = 1 ]; then
  marks=(-m "not slow")
  dist=(--dist load)  # no such fixture among the fast tests: balance test by test
fi
if [ "$workers" -gt 1 ]; then
  exec .venv/bin/pytest -q -n "$workers" "${dist[@]}" "${marks[@]}" ${args[@]+"${args[@]}"}
fi
exec .venv/bin/pytest -q "${marks[@]}" ${args[@]+"${args[@]}"}
