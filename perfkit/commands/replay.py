"""`perfkit replay TRACE (--kernel NAME | --op NAME) [--out model.yaml] [--device cpu|cuda]`: a
model.yaml that runs the op (or the op that launched the kernel, or the op naming a range's class)
alone with the trace's shapes and dtypes (perfkit.analyzers.replay.shapes): gemm, attention,
kernels (norms, softmax, ...) or moe; to profile the suspect of a kernel-level why. A field the
trace does not say is FILL, named in the header; `perfkit profile` refuses the spec until then."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "replay", help="write a model.yaml that runs one op or kernel of a trace alone, with its shapes")
    p.add_argument("trace", help="a Kineto trace (.json / .json.gz)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--kernel", help="a GPU kernel's exact name: its launching op is replayed")
    which.add_argument("--op", help="a CPU op's or range's exact name (aten::mm, perfkit_attention, ...)")
    p.add_argument("--out", help="where to write the spec (default: print it)")
    p.add_argument("--device", default="cpu", help="the spec's device (default cpu)")
    return p


def spec_text(trace: str, name: str, kernel: bool, device: str) -> str:
    import yaml

    from perfkit.analyzers.loaders.kineto.load import load_trace
    from perfkit.analyzers.loaders.trace_files import load_trace_file, trace_format
    from perfkit.analyzers.replay.shapes import replay_entry
    from perfkit.core.fill import FILL

    # every op's shapes (the analyses keep only those of the ops they cost)
    table = load_trace(trace, shapes="all") if trace_format(trace) == "kineto" else load_trace_file(trace)
    r = replay_entry(table, name, kernel)
    head = [f"# perfkit replay {trace} {'--kernel' if kernel else '--op'} {name}",
            f"# {r.op}: {r.same_shape} of {r.calls} calls with this shape"]
    head += [f"# {n}" for n in r.notes]
    head += [f"# {FILL}: fill `{f}` (the trace does not say it); perfkit profile refuses the spec until then"
             for f in r.missing]
    doc = {"name": str(r.entry["name"]), "description": f"{r.op} alone, with its shapes in {Path(trace).name}",
           "device": device, "seed": 0, "workloads": [r.entry]}
    return "\n".join(head) + "\n" + yaml.safe_dump(doc, sort_keys=False)


def run(args: argparse.Namespace) -> int:
    text = spec_text(args.trace, args.kernel or args.op, args.kernel is not None, args.device)
    if args.out:
        from perfkit.core.atomic import write_bytes_atomic

        write_bytes_atomic(args.out, text.encode())
        print(f"wrote {args.out}")
    else:
        sys.stdout.write(text)
    return 0
