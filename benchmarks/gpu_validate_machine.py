"""The GPU validation's dealings with the machine: run a command in its own process group under a
time limit, name the card, find ncu, check what a step names exists, pack the logs.

Standard library only (it runs before the wheels are installed).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KILL_GRACE_S = 5


def run_command(argv: list[str], log: Path, limit_s: float, env: dict[str, str], stdout: Path | None = None) -> int | None:
    """Run one command in its own process group; its exit code, or None when it ran out of time."""
    with open(log, "ab") as err, open(stdout, "wb") if stdout else open(os.devnull, "wb") as out_file:
        err.write(f"$ {' '.join(argv)}\n".encode())
        err.flush()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out_file if stdout else err, stderr=err,
                                start_new_session=True)
        try:
            return proc.wait(timeout=max(limit_s, 1))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait_s in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def gpu_card() -> tuple[str | None, str]:
    """(the first GPU's name, or None; why there is none)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None, "nvidia-smi not found (no NVIDIA driver)"
    try:
        proc = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"nvidia-smi failed: {exc}"
    names = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not names:
        return None, f"nvidia-smi lists no GPU (exit code {proc.returncode})"
    return names[0], ""


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown"


NCU_SEARCH = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")  # as roofline.ncu.find_ncu


def find_ncu() -> str | None:
    """ncu where roofline.ncu.find_ncu looks (PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, NCU_SEARCH),
    without importing perfkit: this runs before the wheels are installed."""
    found = shutil.which("ncu")
    if found:
        return found
    homes = [os.path.join(os.environ[v], "bin", "ncu") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    return next((p for p in [*homes, *NCU_SEARCH] if os.path.isfile(p) and os.access(p, os.X_OK)), None)


def preflight_problem(commands: list[list[str]]) -> str | None:
    """What a step's commands name that is not here: the module of `python -m`, a spec under examples/."""
    for argv in commands:
        if len(argv) > 2 and argv[1] == "-m" and importlib.util.find_spec(argv[2]) is None:
            return f"module {argv[2]} not found"
        for arg in argv:
            if arg.startswith("examples/") and not (ROOT / arg).is_file():
                return f"{arg} not found"
    return None


def archive_logs(out: Path, extra: list[Path]) -> None:
    """One logs.tar.gz of the step logs and extra files; the loose logs go (few files come back)."""
    logs = sorted(out.glob("*.log"))
    files = logs + [p for p in extra if p.is_file()]
    if not files:
        return
    with tarfile.open(out / "logs.tar.gz", "w:gz") as tar:
        for path in files:
            tar.add(path, arcname=path.name)
    for path in logs:
        path.unlink()
