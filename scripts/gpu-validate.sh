#!/usr/bin/env bash
# Validate perfkit's GPU paths on one H100 / H200 in a few minutes (docs/gpu-validation.md).
# A thin wrapper: the steps, their time limits, the deadline, the wheel install from .whl/ and
# the reports are benchmarks/gpu_validate.py.
# Run:  scripts/gpu-validate.sh [--dry-run] [STEP ...]     (default: every step)
# Steps: env specs tests timer gemm decode doctor calib ncu_metrics ncu ncu_flops graph_trace triton.
# OUT=DIR        reports and results (default benchmarks/results/gpu/<card>/; a temporary
#                folder with --dry-run): report.md, report.json, result JSONs, logs.tar.gz
# DEADLINE_S=N   the whole run's deadline (default 420); steps it leaves < 10 s for are skipped
# PYTHON=python3 the interpreter that runs every step
# --dry-run      no GPU needed: the GPU (and ncu) steps are reported as skipped with the reason
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
exec "${PYTHON:-python3}" -m benchmarks.gpu_validate "$@"
