"""The GPU validation's world-size-1 NCCL probe: one rank under torchrun proves the NCCL paths
that one GPU can hold (two NCCL ranks cannot share a GPU: "Duplicate GPU detected").

    python -m benchmarks.gpu_validate_nccl_probe [--out DIR] [--dry-run] [--timeout-s S]

Starts `torchrun --standalone --nproc-per-node 1` on this module's rank body, which runs
benchmarks/nccl_probe_checks.py: NCCL init (and version), the lock-step and nccl-tests timers,
every collective's numerics (fp32, bf16), EP with ep = 1 (three all_to_all_single), tp = 1
all_reduce hooks captured in a CUDA graph (logits equal the model without hooks), NCCL kernels
visible in the Kineto trace. Writes DIR/nccl_probe.json and DIR/nccl_probe.md (default DIR: a
new temporary folder). `--dry-run` (or no CUDA) runs the same rank on gloo on the CPU: what gloo
can run is checked for real, what needs CUDA is listed as skipped with what it would run.
Exit 1 when a check failed (or the rank did not finish), else 0.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.gpu_validate_probe_io import check, exit_code, finish, write_result

NAME, TITLE = "nccl_probe", "World-size-1 NCCL probe"
RANK_FLAG = "--rank-body"
DEFAULT_TIMEOUT_S = 240


def torchrun_command(out: Path, dry_run: bool) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1",
            "-m", "benchmarks.gpu_validate_nccl_probe", RANK_FLAG, "--out", str(out), *(["--dry-run"] if dry_run else [])]


def _rank_body(out: Path, dry_run: bool) -> int:
    import torch

    from benchmarks.nccl_probe_checks import run_all

    torch.manual_seed(0)
    cuda = torch.cuda.is_available() and not dry_run
    work = Path(tempfile.mkdtemp(prefix="perfkit-nccl-probe-work-"))  # the trace stays out of OUT
    result = {"probe": NAME, "dry_run": dry_run, "torch": torch.__version__, **run_all(cuda, work)}
    if not cuda and not dry_run:
        result["checks"].insert(0, check("cuda", "fail", "no CUDA device: the probe ran on gloo only"))
    write_result(out, NAME, TITLE, result)
    return exit_code(result)


def _text(data: str | bytes | None) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data or ""


def _last_lines(text: str, n: int = 5) -> str:
    return " / ".join(line.strip() for line in text.strip().splitlines()[-n:])


def run_probe(out: Path, dry_run: bool, timeout_s: float) -> dict[str, Any]:
    """torchrun the rank body; its result, or a failed one saying why there is none."""
    cmd = torchrun_command(out, dry_run)
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    (out / f"{NAME}.json").unlink(missing_ok=True)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, check=False)
        log, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        log, code = "".join(_text(x) for x in (exc.stdout, exc.stderr)), None
    (out / f"{NAME}.log").write_text(f"$ {' '.join(cmd)}\n{log}")
    js = out / f"{NAME}.json"
    if js.is_file():
        import json

        result: dict[str, Any] = json.loads(js.read_text())
        result["command"] = cmd
        return result
    why = f"timed out after {timeout_s:g} s" if code is None else f"exit code {code}: {_last_lines(log)}"
    return {"probe": NAME, "dry_run": dry_run, "command": cmd,
            "checks": [check("torchrun", "fail", f"the rank wrote no result ({why})")]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_validate_nccl_probe",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="folder for nccl_probe.json / .md (default: a new temporary one)")
    parser.add_argument("--dry-run", action="store_true", help="gloo on the CPU; CUDA-only checks listed as skipped")
    parser.add_argument("--timeout-s", type=float, default=DEFAULT_TIMEOUT_S, help="limit of the torchrun")
    parser.add_argument(RANK_FLAG, action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="perfkit-nccl-probe-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.rank_body:
        return _rank_body(out, args.dry_run)
    return finish(out, NAME, TITLE, run_probe(out, args.dry_run, args.timeout_s))


if __name__ == "__main__":
    sys.exit(main())
