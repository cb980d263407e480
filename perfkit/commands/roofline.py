"""`perfkit roofline RUN`: place every point (and every ncu-measured kernel) on the roof.

Prints the placement table (arithmetic intensity, achieved flop/s and bytes/s, attainable,
percent of roof, bound; MBU / MFU for decode steps) against the measured roof (the run's
calibration, else this machine's stored one for that device) and the datasheet roof, and writes
the roofline figure (self-contained HTML) into the run directory. A run with `kind: collectives`
points also gets "collectives vs link": busbw against the datasheet link bandwidth per
direction (NVLink / PCIe), % of link and the latency / bandwidth regime (roofline/links.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfkit.commands._types import run_path
from perfkit.core.run_layout import RunDir

if TYPE_CHECKING:  # `--help` loads every command module: no record types (msgspec) for it
    from perfkit.core.artifacts import Artifacts


def calibrate_command(info: Any, device: str) -> str:
    """perfkit.roofline.for_run.calibrate_command (the note of a run without a calibration)."""
    from perfkit.roofline.for_run import calibrate_command as command

    return command(info, device)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "roofline",
        help="place a run's points and kernels on the measured and datasheet roofs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_dir", metavar="RUN", type=run_path, help="run directory (or its run.json)")
    p.add_argument("--calibration", default=None, help="a calibration JSON to use as the measured roof")
    p.add_argument("--ncu", default=None, help="an ncu raw-page CSV to place (default: the run's, if any)")
    p.add_argument("--roof", choices=("both", "measured", "datasheet"), default="both")
    p.add_argument("--out", default=None, help="figure path (default: RUN/roofline.html)")
    p.add_argument("--no-figure", action="store_true", help="print the table only")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table", help="table output format")
    p.add_argument("--wide", action="store_true",
                   help="table format: every column and whole names (default: fit the terminal's width)")
    return p


def run(args: argparse.Namespace) -> int:
    from perfkit.core.atomic import write_bytes_atomic
    from perfkit.core.record import load_run
    from perfkit.core.terminal import terminal_width
    from perfkit.roofline.calibration import load_file
    from perfkit.roofline.ceilings import roof_labels
    from perfkit.roofline.devices import lookup
    from perfkit.roofline.figure import roofline_figure
    from perfkit.roofline.for_run import roofline_for_run
    from perfkit.roofline.links import place_collectives
    from perfkit.roofline.ncu import load_csv, load_meta
    from perfkit.roofline.ncu_kernels import kernel_table
    from perfkit.roofline.place import place_kernels, place_points
    from perfkit.roofline.table import flags_text

    run_ = load_run(args.run_dir)
    run_dir = Path(args.run_dir) if Path(args.run_dir).is_dir() else Path(args.run_dir).parent
    given = load_file(args.calibration) if args.calibration else None
    roof = roofline_for_run(run_, given, args.roof)
    info, cal, roofs, notes = roof.device, roof.calibration, roof.roofs, list(roof.notes)
    if info is None:
        print(f"perfkit: {run_dir}: {roof.missing} (pass --calibration)", file=sys.stderr)
        return 2
    labels = roof_labels(roofs)
    placed = place_points(run_, roofs)
    notes += over_roof_notes(placed, labels, run_.device)
    links = place_collectives(run_, lookup(info.name, kind=info.kind), info.kind, info.name, calibrated=cal is not None)
    notes += links.notes
    kernels = None
    ncu_csv = args.ncu or _ncu_artifact(run_.artifacts, run_dir)
    if ncu_csv:
        kernels = place_kernels(kernel_table(load_csv(ncu_csv), origin=str(ncu_csv)), roofs)
        clock = load_meta(ncu_csv).get("clock_control", "unknown")
        notes.append(f"ncu kernels: clock control {clock} (base clocks run slower than the boost-clock roof)")
    width = None if args.wide else terminal_width()
    _print(args.format, placed, kernels, labels, info.name, roofs, links, width)
    if notes and args.format == "table":
        print(flags_text(notes, prefix="note", width=width))
    elif notes:
        print(flags_text(notes, prefix="note"), file=sys.stderr)
    if not args.no_figure:
        import pandas as pd

        both = pd.concat([placed, kernels], ignore_index=True) if kernels is not None and len(kernels) else placed
        fig = roofline_figure(both, roofs, title=f"Roofline: {run_.run_id} on {info.name}")
        out = Path(args.out) if args.out else RunDir(run_dir).roofline_figure
        write_bytes_atomic(out, fig.to_html(include_plotlyjs=True, full_html=True).encode("utf-8"))
        print(f"figure: {out}", file=sys.stderr if args.format != "table" else sys.stdout)
    return 0


def over_roof_notes(placed: Any, labels: list[str], device: str) -> list[str]:
    """Points above 100% of a roof: say what that means rather than leave it unexplained."""
    notes = []
    for label in labels:
        column = f"pct_of_roof_{label}"
        if column not in placed.columns:
            continue
        over = int((placed[column] > 100.0).sum())
        if over:
            why = (
                "their data stayed in cache (CPU timing does not flush caches) or the roof was measured low"
                if device == "cpu"
                else "the roof was measured low (recalibrate) or the cost model undercounts"
            )
            notes.append(f"{over} point(s) above 100% of the {label} roof: {why}")
    return notes


def _ncu_artifact(artifacts: Artifacts, run_dir: Path) -> str | None:
    value = artifacts.ncu_csv_file
    if not value:
        return None
    return str(Path(value) if Path(value).is_absolute() else RunDir(run_dir).file(value))


def _print(fmt: str, placed: Any, kernels: Any, labels: list[str], device: str, roofs: Any, links: Any,
           width: int | None) -> None:
    from perfkit.roofline.table import collectives_text, placement_text, wrapped
    from perfkit.roofline.units import format_bytes_per_s

    if fmt == "csv":  # cells through the CSV rule (perfkit.core.csv_cells)
        from perfkit.core.csv_cells import csv_frame

        print(csv_frame(placed).to_csv(index=False), end="")
        if kernels is not None:
            print(csv_frame(kernels).to_csv(index=False), end="")
        if len(links.table):
            print(csv_frame(links.table).to_csv(index=False), end="")
        return
    if fmt == "json":
        out = {
            "device": device,
            "roofs": {k: r.to_dict() for k, r in roofs.items()},
            "points": json.loads(placed.to_json(orient="records")),
            "kernels": json.loads(kernels.to_json(orient="records")) if kernels is not None else [],
            "collectives": {
                "link": links.roof.to_dict() if links.roof is not None else None,
                "points": json.loads(links.table.to_json(orient="records")),
            },
        }
        print(json.dumps(out, indent=1))
        return
    for label in labels:
        roof = roofs[label]
        print(wrapped(f"{label} roof: {roof.device} ({roof.source})", width))
    if not labels:
        print(f"no roof for {device}: achieved numbers only")
    print(placement_text(placed, labels, width=width) if len(placed) else "no point with a cost and a time to place")
    if kernels is not None:
        print()
        print(f"kernels measured by ncu ({len(kernels)}):")
        print(placement_text(kernels, labels, name_col="name", width=width))
    if len(links.table):
        print()
        roof = links.roof
        where = (f"{roof.label} link roof: {roof.fabric} {format_bytes_per_s(roof.bytes_per_s)} per direction "
                 f"({roof.source})") if roof is not None else "no link roof"
        print(wrapped(f"collectives vs link ({len(links.table)}; busbw against the per-direction link; {where}):",
                      width))
        print(collectives_text(links.table, width))
