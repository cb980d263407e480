"""`perfkit history METRIC [--gpu G] [--since WHEN] [--values]`: change points of a metric over commits.

METRIC is a stored metric name or a glob ("gemm/*:time_s"). Each commit's value is the median
over its runs of each run's location; change points come from rank-based binary segmentation
with a permutation test and a minimum magnitude (perfkit/regression/changepoint/detect.py). Reported per change
point: the previous commit (the last at the old level), the commit (the first at the new level),
the magnitude (relative change of the level) and p-value. --values also prints each commit's value
and the noise band of its segment (the level between change points x/ exp(2 run-to-run sigma)),
in commit order: the numbers of the dashboard's History page; `--format json` always has them.
A slow creep is reported as a trend (its slope per commit and the commits it spans,
perfkit/regression/changepoint/trend.py) rather than as a staircase of change points; the
change points then listed are those left with the line taken out. List the runs themselves with `perfkit runs`. Exit 0; 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from perfkit.commands._store_args import add_db, add_format
from perfkit.commands._types import finite_at_least, positive_int, probability, seed


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    from perfkit.regression.changepoint.options import ChangePointOptions

    d = ChangePointOptions()
    p: argparse.ArgumentParser = subparsers.add_parser(
        "history", help="change points of a metric over commits (commit, magnitude, p-value)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("metric", metavar="METRIC", help="metric name or glob, e.g. 'gemm/*:time_s'")
    p.add_argument("--gpu", default=None, help="only this GPU (exact label or a part of it)")
    p.add_argument("--since", default=None, help="only runs since an ISO date/time or N days ago ('30d')")
    p.add_argument("--branch", default=None, help="only runs of this branch")
    p.add_argument("--max-p", type=probability, default=d.max_p, help=f"significance of a change point (default {d.max_p:g})")
    p.add_argument("--min-magnitude", type=finite_at_least(0), default=d.min_magnitude,
                   help=f"smallest relative change reported (default {d.min_magnitude:g} = {d.min_magnitude * 100:g}%%)")
    p.add_argument("--min-size", type=positive_int, default=d.min_size, help=f"fewest commits on each side (default {d.min_size})")
    p.add_argument("--seed", type=seed, default=d.seed, help=f"seed of the permutation test (default {d.seed})")
    p.add_argument("--values", action="store_true",
                   help="also print each commit's value and noise band (the JSON always has them)")
    add_db(p)
    add_format(p)
    return p


def _since_epoch(text: str | None) -> float | None:
    import time

    from perfkit.core.errors import SpecError, echo
    from perfkit.store.records import parse_time

    if text is None:
        return None
    value = text.strip()
    if value.endswith("d") and value[:-1].isdigit():
        return time.time() - int(value[:-1]) * 86400.0
    try:
        return parse_time(value).timestamp()
    except ValueError:
        raise SpecError(f"--since {echo(text)}: not an ISO date (2026-01-31) or N days ('30d')") from None


def run(args: argparse.Namespace) -> int:
    import difflib
    from dataclasses import replace

    from perfkit.core.errors import EXIT_OK, StoreError, echo
    from perfkit.regression.changepoint.options import ChangePointOptions
    from perfkit.reports import changepoints_render as cr
    from perfkit.store import read
    from perfkit.store.api import open_existing_store
    from perfkit.store.engine import describe
    from perfkit.store.url import normalize_db_url

    since = _since_epoch(args.since)
    engine = open_existing_store(args.db)
    if engine is None:
        raise StoreError(f"{normalize_db_url(args.db)}: no store there; store runs with `perfkit ingest` "
                         "or pass --db / PERFKIT_DB")
    opts = replace(ChangePointOptions(), max_p=args.max_p, min_magnitude=args.min_magnitude,
                   min_size=args.min_size, seed=args.seed)
    rows: list[cr.ChangeRow] = []
    series_info: list[cr.SeriesInfo] = []
    try:
        with engine.connect() as conn:
            glob = any(ch in args.metric for ch in "*?[")
            names = read.metric_names(conn, args.metric) if glob else [args.metric]
            known = read.metric_names(conn) if not glob else names
            if not names or (not glob and args.metric not in known):
                close = difflib.get_close_matches(args.metric, known, n=3, cutoff=0.4)
                hint = f"; did you mean {', '.join(close)}?" if close else "; list names with a glob such as '*'"
                raise StoreError(f"{describe(engine)}: no metric {echo(args.metric)}{hint}")
            for name in names:
                gpus = read.metric_gpus(conn, name)
                if args.gpu:
                    gpus = [g for g in gpus if g == args.gpu or args.gpu.lower() in g.lower()]
                for gpu in gpus:
                    hist = read.metric_history(conn, name, gpu=gpu, since_epoch=since, branch=args.branch)
                    if not hist:
                        continue
                    unit, direction = read.metric_unit_direction(conn, name, run_id=hist[-1].run_id)
                    info, changes = _one_series(name, gpu, hist, unit, direction, opts)
                    series_info.append(info)
                    rows += changes
    finally:
        engine.dispose()
    if not series_info:
        on_gpu = f" on a GPU matching {echo(args.gpu)}" if args.gpu else ""
        raise StoreError(f"{echo(args.metric)}: no stored runs{on_gpu}"
                         + (" in that time range" if since is not None else ""))
    if args.format == "json":
        sys.stdout.write(cr.render_json(rows, series_info))
    else:
        render = cr.render_markdown if args.format == "md" else cr.render_table
        sys.stdout.write(render(rows, series_info, values=args.values))
    return EXIT_OK



def _one_series(name: str, gpu: str, hist: Any, unit: str, direction: str, opts: Any) -> tuple[Any, list[Any]]:
    """One metric on one GPU: its commits with values and noise bands, and its change points."""
    from perfkit.comparison.series import commit_series, segment_bands
    from perfkit.comparison.trend import explain_series
    from perfkit.reports import changepoints_render as cr

    series = commit_series(hist)
    cps, trend = explain_series([s.value for s in series], [s.commit for s in series], opts)
    bands = segment_bands([s.value for s in series], [cp.index for cp in cps],
                          slope=trend.slope if trend is not None else 0.0)
    info = cr.SeriesInfo(name, gpu, len(series), unit, tuple(
        cr.ValueRow(s.commit, s.created_epoch, s.value, s.runs, b.level, b.low, b.high)
        for s, b in zip(series, bands, strict=True)), trend)
    changes = [cr.ChangeRow(metric=name, gpu=gpu, commit=series[cp.index].commit,
                            previous_commit=series[cp.index - 1].commit if cp.index > 0 else None,
                            index=cp.index, time=series[cp.index].created, magnitude=cp.magnitude,
                            p_value=cp.p_value, before=cp.before, after=cp.after, direction=direction, unit=unit)
               for cp in cps]
    return info, changes
