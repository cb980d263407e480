"""After the sweep of `perfkit profile`: write the tune table (tune.csv, tune.json) and print it.

`tune_step(spec, run, run_dir, show)` is the pipeline's tune-tables step, called by
perfkit/pipeline/profile.py after the sweep. For every `kind: custom` workload with a `tune:`
block it writes, into the run directory, `tune.json` (through perfkit/core/tune_result.py: every
configuration of every shape, best, runner-up, verdict, and the `triton.Config(...)` list to
paste into `@triton.autotune`) and
`tune.csv` (one row per shape), returns them as artifacts for run.json, and prints the table.
It also prints why timing was skipped for custom points that were only checked for numerics.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from perfkit.core.artifacts import Artifacts, TuneArtifacts
from perfkit.core.atomic import write_bytes_atomic
from perfkit.core.csv_cells import csv_cell
from perfkit.core.record import Run
from perfkit.core.run_layout import TUNE_CSV, TUNE_JSON
from perfkit.core.terminal import terminal_safe
from perfkit.core.tune_result import TuneResult, triton_config, write_tune_json
from perfkit.core.units import fmt_ratio, fmt_time
from perfkit.pipeline.spec import RunSpec
from perfkit.workloads.tune import autotune_snippets, tune_results


def tuned_workloads(spec: RunSpec) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    from perfkit.workloads.custom.spec import CustomSpec

    return {
        w.label: (w.shape_names, w.config_names)
        for w in spec.workloads
        if isinstance(w, CustomSpec) and w.tune is not None
    }


STAT_COLUMNS = ("median_s", "ci_low_s", "ci_high_s", "samples", "runner_up", "runner_up_median_s",
                "speedup_vs_runner_up", "distinguishable", "configs_timed", "configs_failed",
                "triton_config", "note")


def _column(name: str) -> str:
    """A parameter's CSV column; prefixed when it would collide with a fixed column."""
    return f"param_{name}" if name in STAT_COLUMNS or name == "workload" else name


def csv_rows(results: list[TuneResult]) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per shape: the shape, its best configuration, statistics and the verdict."""
    param_cols: list[str] = []
    for r in results:
        names = [*r.shape, *(k for c in r.configs for k in c.config)]
        param_cols += [_column(k) for k in names if _column(k) not in param_cols]
    rows = []
    for r in results:
        row: dict[str, Any] = {"workload": r.workload, **{_column(k): v for k, v in r.shape.items()}}
        b, ru = r.best, r.runner_up
        if b is not None:
            row.update({_column(k): v for k, v in b.config.items()})
            row.update(median_s=b.median_s, ci_low_s=b.ci_low_s, ci_high_s=b.ci_high_s,
                       samples=b.n, triton_config=triton_config(b.config))
        if ru is not None:
            row.update(runner_up=" ".join(f"{k}={v}" for k, v in ru.config.items()),
                       runner_up_median_s=ru.median_s, speedup_vs_runner_up=r.speedup_vs_runner_up)
        row.update(distinguishable=r.distinguishable, configs_timed=r.timed,
                   configs_failed=r.failed, note=r.note)
        rows.append(row)
    return ["workload", *param_cols, *STAT_COLUMNS], rows


def write_tune(run_dir: Path, run: Run, results: list[TuneResult],
               tuned: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> TuneArtifacts:
    cols, rows = csv_rows(results)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")  # cells through the CSV rule (perfkit.core.csv_cells)
    writer.writerow([csv_cell(c) for c in cols])
    writer.writerows([csv_cell(row.get(c, "")) for c in cols] for row in rows)
    write_bytes_atomic(run_dir / TUNE_CSV, buf.getvalue().encode())
    write_tune_json(run_dir / TUNE_JSON, results, run_id=run.run_id, device=run.device,
                    autotune=autotune_snippets(results, tuned))
    return TuneArtifacts(json=TUNE_JSON, csv=TUNE_CSV)


def _cells(*texts: str) -> list[Any]:
    """Table cells as plain text (never rich markup) through the terminal's escaping rule."""
    from rich.text import Text

    return [Text(terminal_safe(t)) for t in texts]


def print_tune(results: list[TuneResult], snippets: dict[str, dict[str, Any]]) -> None:

    from rich import box
    from rich.console import Console
    from rich.table import Table

    from perfkit.core.terminal import terminal_width

    table = Table(title="tune: best configuration per shape", box=box.SIMPLE_HEAD, collapse_padding=True,
                  pad_edge=False)
    for col in ("workload", "shape", "best", "median", "95% CI", "runner-up", "speedup", "distinct"):
        table.add_column(col)
    for r in results:
        shape = " ".join(f"{k}={v}" for k, v in r.shape.items())
        b, ru = r.best, r.runner_up
        if b is None:
            table.add_row(*_cells(r.workload, shape, "-", "-", "-", "-", "-", r.note))
            continue
        ci = (f"{fmt_time(b.ci_low_s)}..{fmt_time(b.ci_high_s)}"
              if b.ci_low_s is not None and b.ci_high_s is not None else "-")
        runner = " ".join(f"{k}={v}" for k, v in ru.config.items()) if ru else "-"
        speed = fmt_ratio(r.speedup_vs_runner_up)
        dist = {True: "yes", False: "no (CIs overlap)", None: "-"}[r.distinguishable]
        table.add_row(*_cells(r.workload, shape, " ".join(f"{k}={v}" for k, v in b.config.items()),
                              fmt_time(b.median_s), ci, runner, speed, dist))
    console = Console(soft_wrap=False, width=terminal_width())
    console.print(table)
    for workload, snip in snippets.items():
        if snip["configs"]:
            console.print(f"{terminal_safe(workload)}: @triton.autotune(configs=[{', '.join(snip['configs'])}], "
                          f"key={snip['key']!r})", markup=False, highlight=False, soft_wrap=True)  # code: never wrapped


def timing_skip_notes(run: Run) -> dict[str, int]:
    """Distinct reasons timing was skipped for custom points, with how many points each."""
    notes: dict[str, int] = {}
    for p in run.points:
        reason = p.metrics.get("timing_skipped")
        if p.kind == "custom" and reason:
            notes[str(reason)] = notes.get(str(reason), 0) + 1
    return notes


def tune_step(spec: RunSpec, run: Run, run_dir: Path, show: bool = True) -> Artifacts:
    """Write (and print) the tune table of a finished sweep; return the artifacts it produced."""
    if show:
        for reason, count in timing_skip_notes(run).items():
            print(terminal_safe(f"perfkit: {count} point{'s' if count > 1 else ''}: {reason}"))
    tuned = tuned_workloads(spec)
    if not tuned or not run.points:
        return Artifacts()
    results = tune_results(run, tuned)
    files = write_tune(run_dir, run, results, tuned)
    if show:
        print_tune(results, autotune_snippets(results, tuned))
        print(f"perfkit: tune table -> {run_dir / TUNE_CSV} and {run_dir / TUNE_JSON}")
    return Artifacts(tune=files)
