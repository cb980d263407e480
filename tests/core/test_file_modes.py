"""Every file perfkit writes gets the user's umask, as `open()` would give it: 0644 under umask
022 (others can read a shared runner's results), 0600 under 077; folders 0755 / 0700.

The session runs once, under umask 027 (files 0640, folders 0750): a file made 0600 (mkstemp's
mode, kept), one chmod-ed to 0644 or 0666, or a folder made 0700 or 0755 would each differ from
it, so this one umask catches what 022 and 077 caught together, in half the time.

One real session through the CLI, each command a subprocess started under the umask: two
profiles (run.partial.json while the sweep runs, run.json, traces, analysis tables, tune.csv /
tune.json, the SQLite store), report (HTML and Markdown), gate (--markdown, --junit,
$GITHUB_STEP_SUMMARY), calibrate (PERFKIT_HOME), roofline (roofline.html), analyze --out. Then
every file and folder the session made is checked.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfkit.core.atomic import write_bytes_atomic
from perfkit.core.run_layout import (
    ANALYSIS_DIR,
    PARTIAL_FILE,
    ROOFLINE_FIGURE,
    RUN_FILE,
    TRACES_DIR,
    TUNE_CSV,
    TUNE_JSON,
)

REPO = Path(__file__).resolve().parents[2]

SPEC = """\
name: modes
device: cpu
seed: 0
cpu_threads: 1
timing: {warmup_s: 0.0, budget_s: 0.03, min_reps: 6, target_rel_ci: 0.2}
profile: {torch_profiler: true, nvtx: false, profiled_iters: 1}
workloads:
  - kind: gemm
    name: sq
    m: [16, 32]
    n: 32
    k: 32
  - kind: custom
    name: summed
    entry: modes_op:make
    reference: modes_op:ref
    params: {n: 256}
    tune:
      axes: {CHUNK: [64, 256]}
    cost: {flop: n, bytes: 8*n}
"""

OP = '''
import torch


def chunked_sum(x, CHUNK):
    return sum(x[i:i + CHUNK].sum() for i in range(0, x.numel(), CHUNK))


def make(n, CHUNK, device):
    return chunked_sum, (torch.randn(n, device=device, dtype=torch.float64),), {"CHUNK": CHUNK}


def ref(x, CHUNK=None):
    return x.sum()
'''


class Session:
    """The CLI under one umask, in `root/work`; inputs live in `root/inputs` (not checked)."""

    def __init__(self, root: Path, umask: int) -> None:
        self.umask = umask
        self.inputs = root / "inputs"
        self.work = root / "work"
        self.inputs.mkdir()
        (self.inputs / "modes.yaml").write_text(SPEC)
        (self.inputs / "modes_op.py").write_text(OP)
        path = os.pathsep.join([str(self.inputs), os.environ.get("PYTHONPATH", "")])
        self.env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1",
                    "PERFKIT_HOME": str(self.work / "home"), "PERFKIT_DB": f"sqlite:///{self.work / 'store.db'}",
                    "GITHUB_STEP_SUMMARY": str(self.work / "step-summary.md")}
        old = os.umask(umask)  # the work folder itself, as a user's `mkdir` would make it
        try:
            self.work.mkdir()
        finally:
            os.umask(old)

    def start(self, *args: str) -> subprocess.Popen[str]:
        mask = self.umask
        return subprocess.Popen([sys.executable, "-m", "perfkit", *args], cwd=self.work, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: os.umask(mask))

    def profile(self) -> tuple[Path, int]:
        """A profile run: its directory and the mode run.partial.json had while the sweep ran."""
        proc = self.start("profile", str(self.inputs / "modes.yaml"), "--out", "runs", "--quiet", "--repo", str(REPO))
        seen: set[Path] = set(self.work.glob(f"runs/*/{RUN_FILE}"))
        partial_mode = None
        while proc.poll() is None:
            for partial in self.work.glob(f"runs/*/{PARTIAL_FILE}"):
                try:
                    partial_mode = stat.S_IMODE(partial.stat().st_mode)
                except FileNotFoundError:
                    continue
            time.sleep(0.005)  # the sweep's own cores: poll, do not spin
        _, err = proc.communicate()
        assert proc.returncode == 0, err
        (new,) = set(self.work.glob(f"runs/*/{RUN_FILE}")) - seen
        assert partial_mode is not None, "run.partial.json was never seen while the sweep ran"
        return new.parent, partial_mode


def _run(s: Session, *args: str) -> None:
    proc = s.start(*args)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, f"perfkit {' '.join(args)}: exit {proc.returncode}\n{err}"


def _modes(root: Path) -> dict[str, int]:
    """Every file and folder under `root` (itself excluded), relative path -> permission bits."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            out[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return out


@pytest.mark.slow
def test_every_output_gets_the_users_umask(tmp_path: Path) -> None:
    umask = 0o027
    s = Session(tmp_path, umask)
    base, partial_base = s.profile()
    cand, partial_cand = s.profile()
    _run(s, "report", str(cand), "--vs", str(base))  # RUN/report.html
    _run(s, "report", str(cand), "--vs", str(base), "--format", "md", "--out", "report.md")
    proc = s.start("gate", "--baseline", str(base), "--candidate", str(cand),
                   "--markdown", "gate.md", "--junit", "gate.xml")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode in (0, 1), err  # a verdict either way; the files are what is checked
    _run(s, "calibrate", "--device", "cpu", "--quick", "--dtypes", "fp32", "--quiet")
    _run(s, "roofline", str(base))  # RUN/roofline.html
    traces = sorted((base / TRACES_DIR).iterdir())
    _run(s, "analyze", str(traces[0]), "--out", "analyze-out")

    file_mode, dir_mode = 0o666 & ~umask, 0o777 & ~umask
    assert partial_base == partial_cand == file_mode
    modes = _modes(s.work)
    expected_kinds = {
        "run.json": f"runs/{base.name}/{RUN_FILE}",
        "a trace": f"runs/{base.name}/{TRACES_DIR}/{traces[0].name}",
        "tune.csv": f"runs/{base.name}/{TUNE_CSV}",
        "tune.json": f"runs/{base.name}/{TUNE_JSON}",
        "report.html": f"runs/{cand.name}/report.html",
        "report.md": "report.md",
        "gate.md": "gate.md",
        "gate.xml": "gate.xml",
        "step summary": "step-summary.md",
        "store": "store.db",
        "roofline.html": f"runs/{base.name}/{ROOFLINE_FIGURE}",
    }
    for kind, rel in expected_kinds.items():
        assert rel in modes, f"{kind} ({rel}) was not written; written: {sorted(modes)}"
    assert any(r.startswith(f"runs/{base.name}/{ANALYSIS_DIR}/") and r.endswith(".parquet") for r in modes)
    assert any(r.startswith("home/calibration/") and r.endswith(".json") for r in modes)
    assert any(r.startswith("analyze-out/") for r in modes)
    wrong = {rel: oct(mode) for rel, mode in modes.items()
             if mode != (dir_mode if (s.work / rel).is_dir() else file_mode)}
    assert not wrong, f"umask {umask:03o}: want files {file_mode:o}, folders {dir_mode:o}; got {wrong}"


def _current_umask() -> int:
    """The process umask from /proc (Linux), without os.umask's set-and-restore."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    pytest.skip("no Umask line in /proc/self/status")


def test_atomic_write_new_file_like_open_and_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    plain, atomic = tmp_path / "plain.txt", tmp_path / "atomic.txt"
    plain.write_bytes(b"x")
    write_bytes_atomic(atomic, b"x")
    want = 0o666 & ~_current_umask()
    assert stat.S_IMODE(atomic.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == want
    atomic.chmod(0o640)  # a user's choice on an existing file survives a rewrite, as with open("w")
    write_bytes_atomic(atomic, b"y")
    assert stat.S_IMODE(atomic.stat().st_mode) == 0o640 and atomic.read_bytes() == b"y"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["atomic.txt", "plain.txt"]  # no temp file left
