"""The streaming read kernel of the read-only roof: its launch plan covers every element, and its
partial sums add up to the buffer's sum (run under Triton's interpreter on the CPU)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from perfkit.roofline.calibrate.read_kernel import BLOCK, partials_count, stride_steps


@pytest.mark.parametrize("numel", [1, BLOCK - 1, BLOCK, 10 * BLOCK + 3, 1 << 22])
@pytest.mark.parametrize("n_sms", [1, 132])
def test_the_grid_covers_every_element_once(numel: int, n_sms: int) -> None:
    programs = partials_count(n_sms)
    steps = stride_steps(numel, programs)
    assert programs * steps * BLOCK >= numel  # covered
    assert programs * (steps - 1) * BLOCK < numel  # no step past the end is planned
    seen = sorted((i * programs + pid) for i in range(steps) for pid in range(programs))
    assert seen == list(range(programs * steps))  # each block index once


SCRIPT = """
import torch
from perfkit.roofline.calibrate.read_kernel import read_fn
torch.manual_seed(0)
for numel in (7, 4096, 3 * 4096 + 5, 50_000):
    x = torch.rand(numel, dtype=torch.float32)
    call, partials = read_fn(x, n_sms=3)
    got = float(call().double().sum())
    want = float(x.double().sum())
    assert abs(got - want) <= 1e-5 * max(1.0, abs(want)), (numel, got, want)
print("ok")
"""


@pytest.mark.slow
def test_the_partials_add_up_to_the_sum_in_the_interpreter() -> None:
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
