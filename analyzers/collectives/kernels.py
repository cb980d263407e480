"""The collective an NCCL / RCCL / MSCCL kernel runs, read from its name.

NCCL names its kernels `ncclKernel_<Op>_<ALGO>_<PROTO>_<RedOp>_<type>` (NCCL 2.x before 2.19,
e.g. `ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)`) or `ncclDevKernel_<Op>_<RedOp>_
<type>_<ALGO>_<PROTO>` (2.19 on, e.g. `ncclDevKernel_AllReduce_Sum_bf16_RING_LL`); RCCL keeps
the older spelling; `ncclDevKernel_SendRecv(...)` and `ncclDevKernel_Generic` carry no type.
`collective_of(name)` gives (collective, dtype label): the operation by its one name
(perfkit.analyzers.collectives.names: all_reduce, all_gather, reduce_scatter, broadcast, reduce, send_recv, send, recv, all_to_all,
generic) and the element type as perfkit labels dtypes ("" when the name carries none).
Whether a kernel is communication at all is the categories' call (perfkit.analyzers.categories).
"""

from __future__ import annotations

import re

from perfkit.analyzers.collectives.names import canonical_collective

_PREFIX = re.compile(r"^(?:void\s+)?(?:nccl|rccl|msccl)\w*?(?:Dev)?Kernel_(\w+)", re.I)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_DTYPES = {  # NCCL's type spellings in kernel names -> perfkit's dtype labels
    "int8_t": "int8", "i8": "int8", "uint8_t": "uint8", "u8": "uint8", "int32_t": "int32", "i32": "int32",
    "uint32_t": "uint32", "u32": "uint32", "int64_t": "int64", "i64": "int64", "uint64_t": "uint64",
    "u64": "uint64", "half": "fp16", "f16": "fp16", "float": "fp32", "f32": "fp32", "double": "fp64",
    "f64": "fp64", "__nv_bfloat16": "bf16", "bf16": "bf16", "rccl_bfloat16": "bf16",
    "__nv_fp8_e4m3": "fp8_e4m3", "f8e4m3": "fp8_e4m3", "__nv_fp8_e5m2": "fp8_e5m2", "f8e5m2": "fp8_e5m2",
}  # fmt: skip
_TYPE = re.compile("_(" + "|".join(sorted(map(re.escape, _DTYPES), key=len, reverse=True)) + ")_", re.I)


_CUSTOM = re.compile(r"(all_?reduce|cross_device_reduce|all_?gather|reduce_?scatter|all_?to_?all)", re.I)


def collective_of(name: str) -> tuple[str, str]:
    """(collective, dtype label) of an NCCL-family kernel name, or of a custom collective kernel
    named after what it does (vLLM's cross_device_reduce: all_reduce); ("", "") when neither."""
    m = _PREFIX.match(name)
    if m is None:
        custom = _CUSTOM.search(name)
        return (canonical_collective(custom.group(1)), "") if custom else ("", "")
    head, _, rest = m.group(1).partition("_")
    found = _TYPE.search("_" + rest + "_")
    return canonical_collective(_CAMEL.sub("_", head)), _DTYPES[found.group(1).lower()] if found else ""
