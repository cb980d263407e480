"""The safe arithmetic evaluator behind cost expressions and tune filters."""

from __future__ import annotations

import math

import pytest

from perfkit.workloads.expr import (
    MAX_EXPONENT,
    MAX_NODES,
    MAX_SOURCE_CHARS,
    ExprError,
    evaluate,
    evaluate_number,
    parse_expr,
)

NAMES = ("m", "n", "k", "dtype", "causal", "BLOCK_SIZE")
VALUES = {"m": 64, "n": 128, "k": 32, "dtype": "bf16", "causal": True, "BLOCK_SIZE": 256}


def value(source: str, values: dict[str, object] | None = None) -> object:
    return evaluate(parse_expr(source, NAMES), values or VALUES)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("2*m*n*k", 2 * 64 * 128 * 32),
        ("2*(m*k + k*n + m*n)", 2 * (64 * 32 + 32 * 128 + 64 * 128)),
        ("sizeof(dtype) * (m*k + k*n + m*n)", 2 * (64 * 32 + 32 * 128 + 64 * 128)),
        ("sizeof('fp32') * m", 4 * 64),
        ("sizeof('fp8') + sizeof('int32')", 1 + 4),
        ("m / n", 0.5),
        ("n // 3", 42),
        ("n % 3", 2),
        ("m ** 2", 4096),
        ("2 ** -1", 0.5),
        ("-m + +n", 64),
        ("cdiv(n, 48)", 3),
        ("max(m, n, k) - min(m, n, k)", 96),
        ("abs(k - m)", 32),
        ("ceil(n / 3) + floor(n / 3)", 43 + 42),
        ("sqrt(m)", 8.0),
        ("log2(BLOCK_SIZE)", 8.0),
        ("(4 if causal else 2) * m", 256),
        ("(2 - causal) * m", 64),
        ("BLOCK_SIZE >= n and BLOCK_SIZE % 32 == 0", True),
        ("m < n < k", False),
        ("not causal or m > 1", True),
        ("dtype == 'bf16'", True),
        ("dtype != 'bf16'", False),
        ("1e3 * m", 64000.0),
    ],
)
def test_values(source: str, expected: object) -> None:
    assert value(source) == expected


def test_constants_and_names_read() -> None:
    assert value("2 * pi") == pytest.approx(2 * math.pi)
    assert value("exp(1) - e") == pytest.approx(0.0)
    expr = parse_expr("2*m*n + k", NAMES)
    assert expr.names == frozenset({"m", "n", "k"})
    assert str(expr) == "2*m*n + k"


def test_numbers_in_yaml_are_expressions_too() -> None:
    assert evaluate_number(parse_expr(4096, NAMES), VALUES) == 4096.0
    assert evaluate_number(parse_expr(1.5e9, NAMES), VALUES) == 1.5e9


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("m.__class__", "attribute access is not allowed"),
        ("().__class__.__bases__[0]", "is not allowed"),
        ("m[0]", "subscripts is not allowed"),
        ("open('/etc/passwd')", "calling 'open' is not allowed"),
        ("__import__('os').system('true')", "is not allowed"),
        ("eval('1')", "calling 'eval' is not allowed"),
        ("(lambda: 1)()", "calling 'lambda: 1' is not allowed"),
        ("[x for x in (1, 2)]", "comprehensions is not allowed"),
        ("max(m, key=abs)", "keyword arguments are not allowed"),
        ("max(*[m, n])", "is not allowed"),
        ("(y := 3)", "assignment (:=) is not allowed"),
        ("1 << 100000", "shifts is not allowed"),
        ("m if m in (1, 2) else n", "is not allowed"),
        ("f'{m}'", "f-strings is not allowed"),
        ("b'x'", "constant b'x' is not allowed"),
        ("1j * m", "constant 1j is not allowed"),
        ("q * 2", "unknown name 'q'"),
        ("mm * 2", "did you mean 'm'?"),
        ("", "empty expression"),
        ("2 *", "syntax error"),
        ("import os", "syntax error"),
        ("m = 2", "syntax error"),
        ("2*m; import os", "syntax error"),
    ],
)
def test_refused_at_parse(source: str, message: str) -> None:
    with pytest.raises(ExprError) as info:
        parse_expr(source, NAMES)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_size_limits() -> None:
    with pytest.raises(ExprError, match="characters"):
        parse_expr("m+" * MAX_SOURCE_CHARS + "m", NAMES)
    with pytest.raises(ExprError, match="parts"):
        parse_expr("+".join(["m"] * (MAX_NODES // 2 + 1)), NAMES)
    with pytest.raises(ExprError):
        parse_expr("(" * 250 + "m" + ")" * 250, NAMES)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("9 ** 9 ** 9", "exponent 387420489 is too large"),
        (f"2 ** {MAX_EXPONENT + 1}", "too large"),
        ("10 ** 64 * 10 ** 64 * 10 ** 64 * 10 ** 64 * 10 ** 64", "too large"),
        ("1e200 * 1e200", "too large"),
        ("1e300 ** 2", "too large"),
        ("exp(1000)", "too large"),
        ("m / (n - n)", "division by zero with m=64, n=128"),
        ("cdiv(m, 0)", "cdiv by zero"),
        ("sqrt(-m)", "math domain error"),
        ("dtype * 2", "'bf16' is a name, not a number"),
        ("sizeof(m)", "sizeof() takes a dtype name"),
        ("sizeof('int7')", "unknown dtype"),
        ("dtype < 3", "cannot order"),
    ],
)
def test_refused_at_evaluation(source: str, message: str) -> None:
    expr = parse_expr(source, NAMES)
    with pytest.raises(ExprError) as info:
        evaluate_number(expr, VALUES)
    assert message in str(info.value)


def test_evaluate_number_rejects_names_and_needs_values() -> None:
    with pytest.raises(ExprError, match="not a number"):
        evaluate_number(parse_expr("dtype", NAMES), VALUES)
    with pytest.raises(ExprError, match="no value for 'k'"):
        evaluate(parse_expr("m * k", NAMES), {"m": 2})


def test_big_but_reasonable_costs_are_exact() -> None:
    # a 16k^3 GEMM: 8.8e12 flop, exact in integers
    flop = evaluate_number(parse_expr("2*m*n*k", NAMES), {"m": 16384, "n": 16384, "k": 16384})
    assert flop == 2 * 16384**3
