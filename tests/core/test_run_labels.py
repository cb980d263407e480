"""Run labels: flags win over PERFKIT_*, which win over what git gave; GitHub's variables fill in
only what git lacked (a detached checkout); the commands' help names the same variables."""

from __future__ import annotations

from perfkit.commands._run_labels import ENV_VARS as HELP_VARS
from perfkit.core.env import Env, GitState
from perfkit.core.run_labels import ENV_VARS, RunLabels, labelled, with_environment


def test_flags_then_perfkit_variables_then_git_then_ci() -> None:
    environ = {"PERFKIT_GPU": "H100", "PERFKIT_BRANCH": "ci-branch", "GITHUB_SHA": "f00d", "GITHUB_REF_NAME": "gh"}
    got = with_environment(RunLabels(branch="flag-branch"), environ)
    assert got == RunLabels(gpu="H100", branch="flag-branch")
    env = labelled(Env(git=GitState(commit="abc", branch=None)), got, environ)
    assert (env.label, env.git.branch, env.git.commit) == ("H100", "flag-branch", "abc")
    detached = labelled(Env(git=GitState()), RunLabels(), environ)
    assert (detached.git.branch, detached.git.commit, detached.label) == ("gh", "f00d", "cpu")
    assert HELP_VARS == ENV_VARS
