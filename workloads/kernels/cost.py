"""Analytic cost of the small kernels (REFERENCE.md). No torch.

T rows (tokens) of width h, E = T h elements, b bytes per element. exp, erf, rsqrt and
division count as one flop each.
| op           | flop | bytes           | what is read / written                      |
|--------------|------|-----------------|---------------------------------------------|
| rmsnorm      | 4E   | b (2E + h)      | x, weight -> y                              |
| layernorm    | 8E   | b (2E + 2h)     | x, weight, bias -> y                        |
| softmax      | 5E   | 2bE             | x -> y (rows of h)                          |
| swiglu       | 5E   | 3bE             | gate, up -> silu(gate) * up                 |
| gelu         | 5E   | 2bE             | x -> 0.5 x (1 + erf(x / sqrt 2))            |
| residual_add | E    | 3bE             | x, residual -> x + residual                 |
| add_rmsnorm  | 5E   | b (4E + h)      | x, residual, weight -> sum, rmsnorm(sum)    |
"""

from __future__ import annotations

from perfkit.core.cost import Cost

OPS = ("rmsnorm", "layernorm", "softmax", "swiglu", "gelu", "residual_add", "add_rmsnorm")

# op -> (flop per element, element-sized tensors moved, width-sized parameter vectors read)
_TABLE: dict[str, tuple[float, int, int]] = {
    "rmsnorm": (4.0, 2, 1),
    "layernorm": (8.0, 2, 2),
    "softmax": (5.0, 2, 0),
    "swiglu": (5.0, 3, 0),
    "gelu": (5.0, 2, 0),
    "residual_add": (1.0, 3, 0),
    "add_rmsnorm": (5.0, 4, 1),
}


def kernel_cost(op: str, tokens: int, hidden: int, b: int) -> Cost:
    flop_per_el, tensors, vectors = _TABLE[op]
    elements = tokens * hidden
    return Cost(flop=flop_per_el * elements, bytes=float(b) * (tensors * elements + vectors * hidden))
