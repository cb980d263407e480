"""The text stats of XLA device events: `kernel_details` and `memcpy_details`.

kernel_details is `key:value` pairs separated by spaces, spelled by the GPU tracer of each
backend: CUDA "regs:32 static_shared:0 dynamic_shared:0 grid:1,1,1 block:128,1,1 occ_pct:50",
ROCm "grid:219,40,1 block:256,1,1 private_mem:0 group_mem:49280 occ_pct:0". memcpy_details:
"kind:Unknown size:655360 dest:2 async:1". Values are read leniently (a key absent or not a
number gives -1): a detail never loses an event.
"""

from __future__ import annotations

import re

_PAIR = re.compile(r"(\w+):([-\w.,]+)")
# extra column -> (key in kernel_details, index in a comma list; -1: a single number)
KERNEL_DETAIL_KEYS: dict[str, tuple[tuple[str, ...], int]] = {
    "grid_x": (("grid",), 0),
    "grid_y": (("grid",), 1),
    "grid_z": (("grid",), 2),
    "block_x": (("block",), 0),
    "block_y": (("block",), 1),
    "block_z": (("block",), 2),
    "registers": (("regs",), -1),
    "static_smem_bytes": (("static_shared", "group_mem"), -1),
    "dynamic_smem_bytes": (("dynamic_shared",), -1),
}


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return -1


def pairs(details: str) -> dict[str, str]:
    return dict(_PAIR.findall(details))


def kernel_config(details: object) -> tuple[int, ...]:
    """The KERNEL_DETAIL_KEYS values of a kernel_details stat, in that order (-1 where absent)."""
    found = pairs(details) if isinstance(details, str) else {}
    out = []
    for keys, index in KERNEL_DETAIL_KEYS.values():
        raw = next((found[k] for k in keys if k in found), None)
        if raw is None:
            out.append(-1)
            continue
        parts = raw.split(",")
        out.append(_int(parts[index] if index >= 0 and index < len(parts) else parts[0] if index < 0 else ""))
    return tuple(out)


def memcpy_bytes(details: object) -> int:
    """The `size:` of a memcpy_details stat (-1 when absent)."""
    if not isinstance(details, str):
        return -1
    size = pairs(details).get("size")
    return -1 if size is None else _int(size)
