"""One call of an op as a trace records it (record_shapes): name, `Input Dims`, `Input type` and
`Concrete Inputs` (the scalars' values), with the readers every replay class shares."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# `Input type` spellings -> perfkit dtype names
DTYPES = {"float": "fp32", "c10::BFloat16": "bf16", "c10::Half": "fp16", "double": "fp64",
          "c10::Float8_e4m3fn": "fp8_e4m3", "c10::Float8_e5m2": "fp8_e5m2"}


@dataclass(frozen=True)
class OpCall:
    name: str
    dims: tuple[Any, ...] = ()  # one entry per input: a list of ints (a tensor), [] (a scalar or None)
    types: tuple[Any, ...] = ()
    concrete: tuple[Any, ...] = ()  # the scalars' values as text ('' for tensors)

    def shape(self, i: int) -> list[int] | None:
        """Input i's shape when it is a tensor with one (None otherwise)."""
        d = self.dims[i] if i < len(self.dims) else None
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
            return [int(x) for x in d]
        return None

    def tensors(self) -> list[list[int]]:
        """Every input tensor's shape, those of a tensor list (einsum's operands) in order."""
        out: list[list[int]] = []
        for d in self.dims:
            if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
                out.append([int(x) for x in d])
            elif isinstance(d, list):
                out += [[int(x) for x in t] for t in d
                        if isinstance(t, list) and t and all(isinstance(x, int) for x in t)]
        return out

    def dtype(self, i: int = 0) -> str | None:
        t = self.types[i] if i < len(self.types) else None
        return DTYPES.get(str(t)) if t is not None else None

    def scalar(self, i: int) -> str | None:
        """The text of scalar input i ('True', '0.', '2', '[64]'), or None when not recorded."""
        v = self.concrete[i] if i < len(self.concrete) else None
        return str(v) if v not in (None, "") else None

    def flag(self, i: int) -> bool | None:
        v = self.scalar(i)
        return {"True": True, "False": False, "1": True, "0": False}.get(v) if v is not None else None

    def text(self) -> str:
        shapes = ", ".join("x".join(map(str, s)) for s in self.tensors())
        return f"{self.name}({shapes}) {self.dtype() or '?'}"


def rows_and_width(shape: list[int]) -> tuple[int, int]:
    """[..., h] -> (rows, h): every leading dimension is a row."""
    return int(math.prod(shape[:-1])), int(shape[-1])
