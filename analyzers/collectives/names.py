"""One name per collective, whatever spelled it: torch's c10d (`allreduce`, `_allgather_base`,
`reduce_scatter_tensor_coalesced`, `alltoall_base`), gloo annotations (`all_reduce`), kernel
names (`AllReduce` -> `all_reduce`) and custom kernels (`cross_device_reduce`). The collectives
table, its kernel rows and a run's collectives points then group and compare alike.

Names: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, gather, scatter,
send, recv, send_recv, barrier, wait, and anything else lower-cased as given.
"""

from __future__ import annotations

import re

_SQUASHED = {  # the name without underscores, prefixes and suffixes -> the one name
    "allreduce": "all_reduce", "allgather": "all_gather", "allgatherintotensor": "all_gather",
    "reducescatter": "reduce_scatter", "reducescattertensor": "reduce_scatter", "alltoall": "all_to_all",
    "alltoallv": "all_to_all", "crossdevicereduce": "all_reduce", "sendrecv": "send_recv",
}  # fmt: skip
_AFFIXES = re.compile(r"^_+|(_base|_coalesced|_single)+$")


def canonical_collective(name: str) -> str:
    """The one name of a collective (module docstring); "" stays ""."""
    plain = _AFFIXES.sub("", name.strip().lower())
    plain = _AFFIXES.sub("", plain)  # `_allgather_base` loses both its prefix and suffix
    return _SQUASHED.get(plain.replace("_", ""), plain)
