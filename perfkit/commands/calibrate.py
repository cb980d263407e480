"""`perfkit calibrate`: measure the ceilings of this device (ERT-style) and store them.

The calibration is stored per device fingerprint under $PERFKIT_HOME/calibration/ and reused by
`perfkit profile` and `perfkit roofline` until the next `perfkit calibrate`. On a CPU it is
measured with one torch thread by default, as the examples (`cpu_threads: 1`) and perfkit.bench
run; `--threads N` measures the roof of runs made with N threads (`perfkit roofline` prints the
exact command for a run it has no calibration for).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from perfkit.commands._types import positive_int


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "calibrate",
        help="measure this device's ceilings (memory bandwidth, GEMM peak per dtype)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N, or auto (cuda when available; default)")
    p.add_argument("--threads", type=positive_int, default=None,
                   help="CPU: torch threads to measure with (default 1, as the examples' cpu_threads and "
                        "perfkit.bench; match the runs you will place: `perfkit roofline` prints the command)")
    p.add_argument("--dtypes", type=dtype_list, default=None, metavar="DTYPE[,DTYPE...]",
                   help="comma-separated GEMM dtypes (default: fp32,tf32,bf16,fp16,fp8 on a GPU; fp32,bf16 on a CPU)")
    p.add_argument("--quick", action="store_true", help="smaller sweeps and budgets (a rough roof)")
    p.add_argument("--show", action="store_true", help="print the stored calibration of this device; measure nothing")
    p.add_argument("--no-save", action="store_true", help="measure and print, but do not store")
    p.add_argument("--json", action="store_true", help="print the calibration as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--wide", action="store_true", help="every column and whole names (default: fit the terminal's width)")
    return p


def dtype_list(text: str) -> list[str]:
    """--dtypes: comma-separated GEMM dtype names (fp32, bf16, torch.float16, ...), each one known."""
    from perfkit.roofline.units import UnitError, normalize_dtype

    names = [d.strip() for d in text.split(",") if d.strip()]
    try:
        for name in names:
            normalize_dtype(name)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return names


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from perfkit.core.terminal import terminal_width
    from perfkit.core.timing import DEFAULT_CPU_THREADS
    from perfkit.roofline import calibration as store
    from perfkit.roofline.calibrate.detect import detect, resolve_device
    from perfkit.roofline.calibrate.run import calibrate
    from perfkit.roofline.calibration_checks import datasheet_flags
    from perfkit.roofline.devices import lookup
    from perfkit.roofline.table import calibration_text, flags_text

    device = resolve_device(args.device)
    threads = args.threads if args.threads is not None or device != "cpu" else DEFAULT_CPU_THREADS
    if args.show:
        info = detect(device, threads=threads)
        cal = store.load_for(info)
        if cal is None:
            print(f"no stored calibration for {info.name} ({info.fingerprint}); run `perfkit calibrate`")
            return 0
    else:
        if not args.no_save:  # where the result goes is checked before a measurement of minutes
            store.check_writable()
        dtypes = args.dtypes or None
        progress = None if (args.quiet or args.json) else (lambda msg: print(f"  {msg}", file=sys.stderr))
        cal = calibrate(device, threads=threads, dtypes=dtypes, quick=args.quick, progress=progress)
        if not args.no_save:
            path = store.save(cal)
            cal = store.load_file(path)
        cal = replace(cal, stale_flags=store.staleness(cal, cal.device))  # rounds that disagreed
    spec = lookup(cal.device.name, kind=cal.device.kind)
    if args.json:
        flags_json = [*cal.stale_flags, *datasheet_flags(cal, spec)]
        print(json.dumps({**cal.to_dict(), "path": cal.path, "flags": flags_json}, indent=1))
        return 0
    threads = f", {cal.device.threads} thread(s)" if cal.device.kind == "cpu" else ""
    print(f"{cal.device.name}{threads}: calibrated {cal.created} in {cal.duration_s:.1f} s")
    width = None if args.wide else terminal_width()
    print(calibration_text(cal, spec, width))
    if spec is None:
        print(flags_text([f"{cal.device.name} is not in roofline/devices.yaml: measured ceilings only"], "note", width))
    flags = [*cal.stale_flags, *datasheet_flags(cal, spec)]
    if flags:
        print(flags_text(flags, width=width))
    if cal.path:
        print(f"stored: {cal.path}")
    return 0
