"""The smoke runs of benchmarks/: each benchmark's tiny mode, run as `python -m benchmarks.<name>`
(tests/benchmarks/test_smoke*.py; the table and the runner are shared by their two halves).

`python -m benchmarks.<name> <smoke args>` from the repository root (PYTHONPATH the root, one
thread), with PERFKIT_HOME and the store in tmp_path; it must exit 0, print its comparison (or,
where it needs a GPU, ncu or a baseline that is absent here, the reason it skipped that part)
and leave benchmarks/results/ as it was. Each run is a process of its own, forked from one
interpreter that imported perfkit, torch and the rest once (tests/helpers/forked_cli.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.forked_cli import PRELOAD, ForkedCli

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
RESULTS = BENCHMARKS / "results"
SHARED = REPO.parent / "shared" / "bench"
SMALL_TRACE = SHARED / "traces" / "hta_cp_alexnet_a100.json.gz"
NSYS_EXPORT = SHARED / "nsys" / "mfu_2gpu_before.sqlite"
RUN_TIMEOUT_S = 300


@dataclass(frozen=True)
class Smoke:
    args: tuple[str, ...]  # "{tmp}" is replaced by the test's tmp_path
    prints: tuple[str, ...]  # regular expressions the output must each match
    slow: bool = False  # takes more than ~3 s
    needs: Path | None = None  # shared input data (the test skips where it is absent)
    out_env: bool = False  # OUT={tmp}/out (gpu_validate's reports)


SMOKE: dict[str, Smoke] = {
    "analyze_startup": Smoke(
        ("--runs", "1", "--old", "{tmp}/no-old-checkout"),
        (r"Old side skipped: no perfkit checkout", r"new analyze: median [\d.]+ s, target < 0\.8 s")),
    "analyzer_hta_reference": Smoke(
        ("--smoke", "--out", "{tmp}/hta.json"),
        (r"skipped: HolisticTraceAnalysis is not installed|wrote .*hta\.json",), needs=SMALL_TRACE),
    "analyzer_speed": Smoke(
        ("--smoke", "--dir", "{tmp}"),
        (r"HTA skipped: no HolisticTraceAnalysis|x faster", r"20,000 events(, perfkit alone|: perfkit is)"),
        slow=True, needs=SMALL_TRACE),
    "analyzer_ranks_parallel": Smoke(
        ("--smoke", "--dir", "{tmp}/ranks"), (r"4 ranks x 20,000 events on \d+ cores; one process", r"tables equal: True"),
        slow=True, needs=SMALL_TRACE),
    "analyzer_scaling": Smoke(("--smoke", "--dir", "{tmp}/scaling"), (r"\| collectives \| ", r"exponent limit 1\.15"),
                              slow=True, needs=SHARED / "traces" / "hta_nccl_data_a100.json.gz"),
    "analyzer_tiled_trace": Smoke(
        (str(SMALL_TRACE), "{tmp}/tiled.json", "--events", "5000"), (r"tiled\.json: \d{4,} events",),
        needs=SMALL_TRACE),
    "calibrate_gemm_sweep": Smoke(("--smoke",), (r"measured: 2 placed", r"% measured"), slow=True),
    "calibrate_repeat": Smoke(
        ("--smoke",), (r"gemm\.fp32 .*GFLOP/s .*GFLOP/s", r"targets \(each run < 60 s, spread <= 10%\)"), slow=True),
    "changepoint_heldout": Smoke(("--smoke",), (r"\| pooled \| [\d.]+ \| ", r"Pooled F1 per seed: 12: [\d.]+"), slow=True),
    "changepoint_trend": Smoke(("--smoke",), (r"\| creep \| gaussian \| 3 \| [\d.]+ -> [\d.]+ \|",), slow=True),
    "categories_speed": Smoke(
        ("--smoke",), (r"Equal categories, old and new: (\d+) of \1 names|old side skipped",
                      r"old / new: [\d.]+x faster|old side skipped")),
    "dashboard_history": Smoke(
        ("--smoke", "--db", "{tmp}/history.db"), (r"page cold \(all caches empty\)\s+[\d.]+ s\s+\(\s*[\d.]+ x target\)",),
        slow=True),
    "decode_gpu": Smoke(("--smoke", "--work", "{tmp}/work"), (r'"decode_tokens_per_s"', r'"prefill_flash_over_math',
                                                                  r'"cpu_ops_per_step": \d', r'"read_over_copy"'),
                        slow=True),
    "gpu_validate_tools": Smoke(("--dry-run", "--out", "{tmp}/tools"), (r"(ok|skipped)  nsys: ", r"wrote .*tools\.md")),
    "gpu_validate_nccl_probe": Smoke(("--dry-run", "--out", "{tmp}/probe"),
                                     (r"ok  collectives_numerics: 10 of 10 exact", r"wrote .*nccl_probe\.md"), slow=True),
    "gate_cli_speed": Smoke(("--smoke",), (r"\| 20 \| 20 \| 20 \| [\d.]+ \|", r"\| 7 \| 21 \| 7 \| [\d.]+ \|"), slow=True),
    "gate_improvements": Smoke(("--smoke",), (r"\| improvement-only \| [\d.]+ \+- [\d.]+ \|",)),
    "gate_misses": Smoke(("--smoke",), (r"## Operating points", r"\| t3 run offsets \| [\d.]+ / [\d.]+ \+- "),
                         slow=True),
    "gate_round3": Smoke(("--smoke", "--workers", "1"),
                         (r"\| step 1 back \| false regressions / 1,000 unchanged \| [\d.]+ \(", r"\| step 1 back \| .* \| [\d.-]+ \|"),
                         slow=True),
    "gate_round3_calls": Smoke(("--gates", "1", "--cell", "gaussian", "--no-write", "--workers", "1"),
                               (r"\| gaussian \| [\d.]+ / [\d.]+ / [\d.]+ \| [\d.]+ / ", r"\| gaussian \| [\d.]+ \| "),
                               slow=True),
    "gate_loaded_machine": Smoke(("--smoke",), (r"\| default: max\(1%, 2 x sample spread\) \| \d+ \|",), slow=True),
    "gate_quality": Smoke(
        ("--smoke", "--workers", "1"),
        (r"change points skipped: baselines missing|## Change points", r"## Gate: share of trials",
         r"Target met in \*\*\d+ of 20\*\*", r"## Samples and history needed", r"## Issue 30 cells"), slow=True),
    "gpu_validate_memory": Smoke(
        ("--out", "{tmp}/memory", "--dry-run"),
        (r"memory budget \(cpu", r"skipped +budget_vs_nvml: reason=dry run: needs a CUDA GPU"), slow=True),
    "gpu_validate": Smoke(
        ("--dry-run", "env", "gemm"), (r"env: ok", r"gemm: skipped .*: dry run: needs a CUDA GPU"), slow=True,
        out_env=True),
    "graph_trace_probe": Smoke(("--smoke",), (r"no CUDA device: nothing to probe|graph launches",), slow=True),
    "hostile_fuzz": Smoke(("--per-seed", "0", "--only", "ingest:csv"),
                          (r"# hostile_fuzz: \d+ cases, 0 BAD", r"\| ingest:csv \| \d+ \| \d+ \| 0 \|"), slow=True),
    "memory_snapshot": Smoke(("--smoke",), (r"10,000 events \(\d+ MiB pickle\): load [\d.]+ s, .*total [\d.]+ s",),
                             slow=True),
    "ncu_checks": Smoke(
        ("metrics", "--smoke"), (r"ncu metrics for gh100: (\d+ requested; check skipped: ncu not found|missing)",)),
    "nsys_load": Smoke(("--smoke",), (r"x2: peak RSS \d+ MiB", r"x2, no NVTX: peak RSS \d+ MiB"), slow=True,
                       needs=NSYS_EXPORT),
    "nsys_scale_export": Smoke(
        (str(NSYS_EXPORT), "{tmp}/scaled.sqlite", "--kernels", "1"), (r"CUPTI_ACTIVITY_KIND_KERNEL \d+",),
        needs=NSYS_EXPORT),
    "pytest_plugin_import": Smoke(("--smoke",), (r"Goal < 50 ms: import [\d.]+ ms",), slow=True),
    "serving_client_error": Smoke(("--smoke",), (r"\| 2 \| idle \| [\d.]+ \| ", r"stages whose actual error exceeded "
                                                    r"the stated bound: \d+, not flagged \d+"), slow=True),
    "serving_fuzz": Smoke(("--streams", "300"), (r"# serving_fuzz: 300 streams, 2 stages, 0 BAD",
                                                   r"\| honest \| (\d+) \| \1 \|"), slow=True),
    # the peers are skipped unless $PERFKIT_AIPERF / $PERFKIT_GUIDELLM name them
    "serving_peers": Smoke(("--smoke",), (r"4-per-chunk-no-usage perfkit c=1: ttft_p50 [\d.]+ ms .*tokens 9\.0",
                                          r"(aiperf skipped: |4-per-chunk-no-usage aiperf c=1)"), slow=True),
    "serving_gate": Smoke(("--smoke",), (r"\| same server: failed \| 6 \|", r"\| \+20%: tpot_p50_s regressed \| 3 \|"),
                          slow=True),
    # without $PERFKIT_LLAMA_SERVER it says so; with one, a one-stage table
    "serving_llama": Smoke(("--smoke",), (r"no llama-server .*nothing to compare|\| 1 \| \d+ of \d+ \|",)),
    "store_scale": Smoke(("--runs", "20", "--repeat", "1", "--dir", "{tmp}/stores"),
                         (r"\| SQLite \| 10,000 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| 1,000 \|",
                          r"\| DuckDB \| 10,000 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| 1,000 \|",
                          r"\| lake \| 10,000 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| 1,000 \|"),
                         slow=True),
    "serving_why_kernels": Smoke(("--smoke",), (r"pair 0: changed -> ", r"slowed class named first: \d/1"), slow=True),
    "serving_profile_window": Smoke(("--smoke",), (r"round 0: ttft_p50_s [\d.]+", r"tpot_p50_s +[\d.]+ +-"), slow=True),
    "short_kernels": Smoke(("--device", "cuda", "--out", "{tmp}/short.json"),
                           (r"numel +\d+: timer +[\d.]+ us +kernel", r"no CUDA device: the CPU part ran|inflation")),
    "gpu_validate_serve": Smoke(
        ("--device", "cpu", "--model", "tiny", "--dtype", "fp32", "--concurrency", "1", "--requests", "2",
         "--input-len", "8", "--output-len", "4", "--out", "{tmp}/serve"),
        (r'"decode_step_s": [\d.e-]+', r'"energy_per_output_tok_j": "not measured"', r'"tpot_c1_over_decode": [\d.e-]+',
         r'"status": "ok"'), slow=True),
    "timer_floor": Smoke(("--smoke",), (r"paired ratio", r"all within target: (True|False)"), slow=True),
    "timer_vs_do_bench": Smoke(
        ("--smoke",), (r"needs a CUDA device; nothing to compare|worst \|ratio - 1\|",), slow=True),
}

# Modules that are no benchmark of their own: each is run by the smoke run of the one named.
HELPERS = {
    "serving_gate_runs": "serving_gate",
    "serving_peers_tools": "serving_peers",
    "hostile_fuzz_mutations": "hostile_fuzz",
    "hostile_fuzz_seeds": "hostile_fuzz",
    "hostile_fuzz_formats": "hostile_fuzz",
    "gate_noise": "gate_quality",
    "gate_scale": "gate_quality",
    "gate_cells": "gate_quality",
    "decode_kernels": "decode_gpu",
    "gpu_validate_machine": "gpu_validate",
    "gpu_validate_report": "gpu_validate",
    "gpu_validate_steps": "gpu_validate",
    "gpu_validate_probe_io": "gpu_validate_tools",
    "nccl_probe_checks": "gpu_validate_nccl_probe",
}




def smoke_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


def fork_server() -> ForkedCli:
    """A fork server for the smoke runs (the libraries the benchmarks import, imported once)."""
    return ForkedCli(smoke_env(), (*PRELOAD, "scipy.stats", "perfkit.store.api", "perfkit.analyzers.suite"))


def params(names: list[str]) -> list[object]:
    return [pytest.param(name, marks=[pytest.mark.slow] if SMOKE[name].slow else [], id=name) for name in sorted(names)]


def results_state() -> dict[str, int]:
    """benchmarks/results/ and the default store ./perfkit.db, each file with its mtime."""
    files = [*RESULTS.rglob("*"), *REPO.glob("perfkit.db*")]
    return {str(p.relative_to(REPO)): p.stat().st_mtime_ns for p in files}


def run_smoke(name: str, tmp_path: Path, server: ForkedCli) -> None:
    """Run benchmark `name`'s smoke entry and check what it printed and that it wrote no results."""
    case = SMOKE[name]
    if case.needs is not None and not case.needs.exists():
        pytest.skip(f"{case.needs} is absent")
    env = {**smoke_env(), "PERFKIT_HOME": str(tmp_path / "home"), "PERFKIT_DB": f"sqlite:///{tmp_path / 'perfkit.db'}"}
    if case.out_env:
        env["OUT"] = str(tmp_path / "out")
    args = [a.replace("{tmp}", str(tmp_path)) for a in case.args]
    before = results_state()
    proc = server.run(args, REPO, env, timeout_s=RUN_TIMEOUT_S, module=f"benchmarks.{name}")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, (proc.returncode, output[-3000:])
    for pattern in case.prints:
        assert re.search(pattern, output), f"{pattern!r} not in the output of {name}:\n{output[-3000:]}"
    assert results_state() == before, "a smoke run wrote into benchmarks/results/ or ./perfkit.db"

# The smoke runs of tests/benchmarks/test_smoke_serving.py (about half the time of them all); the
# rest are in tests/benchmarks/test_smoke.py.
SECOND_HALF = {name for name in SMOKE if name.startswith(("serving_", "gate_", "changepoint_"))} | {"gpu_validate_serve"}
