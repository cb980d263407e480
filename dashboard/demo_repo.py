"""The demo's git repository: a tiny project whose linear layer `perfkit dashboard --demo` profiles.

`demo_history(n, change_at)` is its history, one real commit per demo commit: commit 1 adds
`demo_ops/linear.py` (y = x W^T reading the transposed weight in place), commit `change_at`
changes that code path (the weight's transpose is made contiguous on every call: a copy of W per
call, so the same point key gets slower), and every other commit touches files the benchmark
never runs (README, CHANGELOG, another module). `commit_all` writes a commit's files and commits
them on branch `main`; the git identity and configuration are the demo's own (no user hooks, no
signing).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from perfkit.core.errors import StoreError

BRANCH = "main"
MARKER = "perfkit-demo"  # a file in .git/: this repository was made here and may be rebuilt
_IDENTITY = ("-c", "user.name=perfkit demo", "-c", "user.email=demo@perfkit.invalid", "-c", "commit.gpgsign=false")

LINEAR = '''\
"""A linear layer y = x W^T, the weight stored [out_features, in_features] as torch.nn.Linear does."""

import torch


def linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
{body}


def linear_case(tokens: int, d_model: int, device: str):
    """perfkit's factory (kind: custom): inputs of one point and the function timed on them."""
    x = torch.randn(tokens, d_model, device=device)
    weight = torch.randn(d_model, d_model, device=device) / d_model**0.5
    return linear, (x, weight)


def linear_reference(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x.double() @ weight.double().t()
'''
FAST_BODY = "    return x @ weight.t()  # BLAS reads the transposed view in place"
SLOW_BODY = ("    w_t = weight.t().contiguous()  # row-major W^T for the matmul: copies all of W on every call\n"
             "    return x @ w_t")
CHANGE_MESSAGE = "linear: make W^T contiguous before the matmul"

ACTIVATION = '''\
"""Activations of the demo model."""

import torch


def silu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)
'''
GELU = '''

def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x**3)))
'''
# Commits that change files the benchmark never runs: (message, path, text appended to the file).
FILLERS = (
    ("README: how it is benchmarked", "README.md",
     "\nperfkit times `demo_ops.linear:linear_case` (a `kind: custom` workload).\n"),
    ("Add the SiLU activation", "demo_ops/activation.py", ACTIVATION),
    ("Add a CHANGELOG", "CHANGELOG.md", "# Changelog\n\n## 0.1.0\n- linear layer\n"),
    ("activation: GELU, tanh approximation", "demo_ops/activation.py", GELU),
    ("README: requirements", "README.md", "\nRequires torch.\n"),
    ("CHANGELOG: 0.2.0", "CHANGELOG.md", "\n## 0.2.0\n- activations\n"),
    ("README: the dashboard", "README.md", "\nResults: `perfkit dashboard`.\n"),
    ("Add a test of the activations", "tests/test_activation.py",
     "from demo_ops.activation import silu\n\n\ndef test_silu_at_zero():\n"
     "    import torch\n\n    assert float(silu(torch.zeros(1))) == 0.0\n"),
    ("CHANGELOG: 0.3.0", "CHANGELOG.md", "\n## 0.3.0\n- tests\n"),
    ("README: license", "README.md", "\nLicense: Apache-2.0.\n"),
)


@dataclass(frozen=True)
class DemoCommit:
    message: str
    files: dict[str, str]  # path -> the file's whole text after this commit
    slow: bool  # the linear layer copies its weight on every call from here on


def demo_history(n: int, change_at: int) -> list[DemoCommit]:
    """The n commits of the demo repository; commit `change_at` (1-based, > 1) slows `linear`."""
    if not 1 < change_at <= n:
        raise ValueError(f"change_at {change_at}: must be in 2..{n}")
    state = {".gitignore": "__pycache__/\n", "README.md": "# demo-model\n\nA tiny model for the perfkit demo.\n",
             "demo_ops/__init__.py": '"""Operators of the demo model."""\n',
             "demo_ops/linear.py": LINEAR.format(body=FAST_BODY)}
    out = [DemoCommit("Add the linear layer and its fp64 reference", dict(state), slow=False)]
    fillers = iter(range(n))
    for i in range(2, n + 1):
        if i == change_at:
            changed = {"demo_ops/linear.py": LINEAR.format(body=SLOW_BODY)}
            message = CHANGE_MESSAGE
        else:
            k = next(fillers)
            message, path, text = FILLERS[k % len(FILLERS)]
            if k >= len(FILLERS):
                message, path, text = f"{message} ({k // len(FILLERS) + 1})", "NOTES.md", f"- {message}\n"
            changed = {path: state.get(path, "") + text}
        state.update(changed)
        out.append(DemoCommit(message, changed, slow=i >= change_at))
    return out


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with the demo's own configuration; its stdout. A failure is a StoreError."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0"}
    try:
        proc = subprocess.run(["git", *_IDENTITY, "-C", str(repo), *args], capture_output=True, text=True,
                              env=env, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StoreError(f"{repo}: git {args[0]} failed ({exc}); the demo needs git on PATH") from None
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise StoreError(f"{repo}: git {args[0]} failed ({tail}); the demo needs a working git")
    return proc.stdout.strip()


def _replace(path: Path) -> None:
    """Remove a repository the demo made before at `path`; refuse anything else."""
    import shutil

    if path.exists():
        if not (path / ".git" / MARKER).is_file():
            raise StoreError(f"{path}: exists and is not a perfkit demo repository; pass another --demo-dir")
        shutil.rmtree(path)


def _mark(repo: Path) -> None:
    (repo / ".git" / MARKER).write_text("made by perfkit dashboard --demo; rebuilt with --rebuild-demo\n")


def init_repo(repo: Path) -> None:
    """A new, empty repository on branch main (an earlier demo repository there is replaced)."""
    _replace(repo)
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", BRANCH)
    _mark(repo)


def fresh_clone(origin: Path, dest: Path) -> Path:
    """A clone of the demo repository at `dest` (an earlier demo clone there is replaced)."""
    _replace(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    git(origin, "clone", "-q", str(origin), str(dest))
    _mark(dest)
    return dest


def commit_all(repo: Path, commit: DemoCommit) -> str:
    """Write the commit's files, commit them on `main`; the new commit's SHA."""
    for path, text in commit.files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(repo, "add", "--", *commit.files)
    git(repo, "commit", "-q", "-m", commit.message)
    return git(repo, "rev-parse", "HEAD")
