"""What a run says it ran on, as the user (or the CI) names it: `--gpu`, `--branch`, `--commit`,
`--label`, or the environment variables PERFKIT_GPU, PERFKIT_BRANCH, PERFKIT_COMMIT,
PERFKIT_LABEL. A GitHub Actions job's GITHUB_HEAD_REF (a pull request's branch), else
GITHUB_REF_NAME, and GITHUB_SHA fill in the branch and commit only where the repository gave
none (a detached checkout). Flags win over PERFKIT_*, which win over what was captured.

The GPU label is what `BRANCH@GPU` matches and what the gate requires to be equal on both sides:
a serving run against a remote server names the server's GPU, not the client's CPU. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from perfkit.core.env import Env

ENV_VARS = {"gpu": "PERFKIT_GPU", "branch": "PERFKIT_BRANCH", "commit": "PERFKIT_COMMIT", "label": "PERFKIT_LABEL"}
CI_VARS = {"branch": ("GITHUB_HEAD_REF", "GITHUB_REF_NAME"), "commit": ("GITHUB_SHA",)}
MAX_CHARS = 200


@dataclass(frozen=True)
class RunLabels:
    gpu: str | None = None
    branch: str | None = None
    commit: str | None = None
    label: str | None = None

    def given(self) -> list[str]:
        """The options set, as flags (`--gpu`, ...)."""
        return [f"--{f.name}" for f in fields(self) if getattr(self, f.name) is not None]


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()[:MAX_CHARS]
    return value or None


def with_environment(flags: RunLabels, environ: Mapping[str, str]) -> RunLabels:
    """The flags, each missing one from its PERFKIT_* variable."""
    return RunLabels(**{name: _clean(getattr(flags, name)) or _clean(environ.get(var))
                        for name, var in ENV_VARS.items()})


def labelled(env: Env, labels: RunLabels, environ: Mapping[str, str] | None = None) -> Env:
    """`env` with the labels in force: the GPU label, the branch and commit (CI variables fill in
    what neither the labels nor the repository gave) and the run's free-text label."""
    ci = environ or {}
    git = env.git
    branch = labels.branch or git.branch or next((_clean(ci.get(v)) for v in CI_VARS["branch"] if _clean(ci.get(v))),
                                                 None)
    commit = labels.commit or git.commit or _clean(ci.get(CI_VARS["commit"][0]))
    return replace(env, git=replace(git, branch=branch, commit=commit),
                   gpu_label=labels.gpu or env.gpu_label, run_label=labels.label or env.run_label)
