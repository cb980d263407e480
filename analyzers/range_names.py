"""The name a range is grouped by: its text without the per-call decorations torch adds.

`torch.autograd.profiler.emit_nvtx` (and so an Nsight Systems export of a torch run) names
each op's NVTX range `aten::mm, seq = 45718, op_id = 992236, sizes = [[8, 4096], [4096, 4096]],
input_op_ids = [...]`: one distinct text per call, so a table per text has a row per call. The
group name drops the `, seq = ...`, `, op_id = ...`, `, sizes = ...` and `, input_op_ids = ...`
parts (`aten::mm`), as `nsys stats --report nvtx_sum` would need them dropped to sum the op's
calls. Any other text is its own group (record_function names, ProfilerStep#N, user ranges).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

_DECORATION = re.compile(r", (?:seq|op_id|sizes|input_op_ids|stream|forward op_id) = .*$", re.S)


def group_name(text: str) -> str:
    """`text` without torch's per-call NVTX decorations (the whole text when it has none)."""
    return _DECORATION.sub("", text) or text


def group_ids(names: Sequence[str]) -> tuple[npt.NDArray[np.int64], tuple[str, ...]]:
    """(group id per name id, group names): names with the same group name share an id."""
    ids: dict[str, int] = {}
    lut = np.fromiter((ids.setdefault(group_name(n), len(ids)) for n in names), dtype=np.int64, count=len(names))
    return lut, tuple(ids)
