"""A small, safe arithmetic evaluator for cost expressions and tune filters in model.yaml.

    flop:  2*m*n*k
    bytes: sizeof(dtype) * (m*k + k*n + m*n)
    where: BLOCK_SIZE <= max(n, 256) and num_warps * 32 <= BLOCK_SIZE

The source is parsed with `ast` (never `eval`) and only a whitelist of nodes is accepted:
numbers and short strings, names (the sweep parameters and the constants `pi`, `e`),
+ - * / // % ** (exponent at most MAX_EXPONENT in magnitude), comparisons, and/or/not,
`a if cond else b`, and calls of the functions in FUNCTIONS by plain name. Attribute access,
subscripts, keyword arguments, lambdas, comprehensions, imports and anything else are refused
when the expression is parsed, so a bad expression is a spec error before anything runs.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MAX_SOURCE_CHARS = 500
MAX_NODES = 200
MAX_EXPONENT = 64
MAX_MAGNITUDE = 1e300
MAX_STRING_CHARS = 64

Value = int | float | bool | str


class ExprError(ValueError):
    """An expression that cannot be parsed, refers to unknown names, or cannot be evaluated."""


def _cdiv(a: Any, b: Any) -> int:
    """Ceiling division of integers (triton.cdiv)."""
    if b == 0:
        raise ExprError("cdiv by zero")
    return -(-int(a) // int(b))


def _sizeof(dtype: Any) -> int:
    """Bytes per element of a dtype name (fp32, bf16, fp16, fp8, fp64, int8, ...)."""
    from perfkit.workloads.dtypes import DTYPE_BYTES, canonical

    if not isinstance(dtype, str):
        raise ExprError(f"sizeof() takes a dtype name, got {dtype!r}")
    extra = {"int8": 1, "uint8": 1, "int16": 2, "int32": 4, "int64": 8, "bool": 1}
    key = dtype.strip().lower()
    if key in extra:
        return extra[key]
    try:
        return DTYPE_BYTES[canonical(key)][0]
    except ValueError as exc:
        raise ExprError(str(exc)) from None


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "ceil": math.ceil,
    "floor": math.floor,
    "sqrt": math.sqrt,
    "log": math.log,
    "log2": math.log2,
    "exp": math.exp,
    "cdiv": _cdiv,
    "sizeof": _sizeof,
}

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}

_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CMPOPS: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_ALLOWED = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
    ast.Constant, ast.Name, ast.Load, ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or,
    *_BINOPS, *_CMPOPS,
)
_DESCRIBE = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscripts",
    ast.Lambda: "lambdas",
    ast.ListComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.NamedExpr: "assignment (:=)",
    ast.JoinedStr: "f-strings",
    ast.List: "lists",
    ast.Tuple: "tuples",
    ast.Dict: "dicts",
    ast.Set: "sets",
    ast.Starred: "star arguments",
    ast.Await: "await",
    ast.LShift: "shifts",
    ast.RShift: "shifts",
    ast.BitAnd: "bitwise operators",
    ast.BitOr: "bitwise operators",
    ast.BitXor: "bitwise operators",
    ast.Invert: "bitwise operators",
    ast.MatMult: "the @ operator",
    ast.In: "'in'",
    ast.NotIn: "'not in'",
    ast.Is: "'is'",
    ast.IsNot: "'is not'",
}


@dataclass(frozen=True)
class Expr:
    """A parsed, checked expression; evaluate it with `evaluate(expr, values)`."""

    source: str
    tree: ast.Expression
    names: frozenset[str]  # parameter names it reads

    def __str__(self) -> str:
        return self.source


def parse_expr(source: str | int | float, allowed_names: Iterable[str]) -> Expr:
    """Parse and check `source`; names must be in `allowed_names` or CONSTANTS.

    Raises ExprError with one line: what is wrong and what to do.
    """
    text = str(source).strip() if not isinstance(source, bool) else ""
    if not text:
        raise ExprError("empty expression; write arithmetic over the parameters, e.g. 2*m*n*k")
    if len(text) > MAX_SOURCE_CHARS:
        raise ExprError(f"expression is {len(text)} characters (limit {MAX_SOURCE_CHARS}); simplify it")
    try:
        tree = ast.parse(text, mode="eval")
    except (RecursionError, MemoryError):
        raise ExprError(f"'{text[:40]}...' is nested too deeply; simplify it") from None
    except SyntaxError as exc:
        col = f" at column {exc.offset}" if exc.offset else ""
        raise ExprError(f"'{text}' is not an arithmetic expression (syntax error{col}); "
                        "write e.g. 2*m*n*k") from None
    allowed = set(allowed_names)
    names: set[str] = set()
    for count, node in enumerate(ast.walk(tree), start=1):
        if count > MAX_NODES:
            raise ExprError(f"'{text}' has more than {MAX_NODES} parts; simplify it")
        _check_node(node, text, allowed, names)
    return Expr(source=text, tree=tree, names=frozenset(names))


def _check_node(node: ast.AST, text: str, allowed: set[str], names: set[str]) -> None:
    if not isinstance(node, _ALLOWED):
        what = _DESCRIBE.get(type(node), type(node).__name__)
        raise ExprError(f"'{text}': {what} is not allowed; use arithmetic on the parameters "
                        f"and the functions {', '.join(FUNCTIONS)}")
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, str):
            if len(v) > MAX_STRING_CHARS:
                raise ExprError(f"'{text}': string constant longer than {MAX_STRING_CHARS} characters")
        elif not isinstance(v, int | float) or isinstance(v, complex):
            raise ExprError(f"'{text}': constant {v!r} is not allowed; use numbers")
    elif isinstance(node, ast.Call):
        fname = node.func.id if isinstance(node.func, ast.Name) else None
        if fname is None or fname not in FUNCTIONS:
            shown = fname or ast.unparse(node.func)
            raise ExprError(f"'{text}': calling '{shown}' is not allowed; the functions are "
                            f"{', '.join(FUNCTIONS)}")
        if node.keywords:
            raise ExprError(f"'{text}': keyword arguments are not allowed in {fname}()")
        if not node.args:
            raise ExprError(f"'{text}': {fname}() needs arguments")
    elif isinstance(node, ast.Name):
        _check_name(node, text, allowed, names)


def _check_name(node: ast.Name, text: str, allowed: set[str], names: set[str]) -> None:
    name = node.id
    if name in FUNCTIONS:
        return  # checked as a call; a bare function name fails at evaluation
    if name in allowed:
        names.add(name)
        return
    if name in CONSTANTS:
        return
    import difflib

    close = difflib.get_close_matches(name, sorted(allowed), n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    known = ", ".join(sorted(allowed)) or "none"
    raise ExprError(f"'{text}': unknown name '{name}'{hint} (parameters: {known})")


def evaluate(expr: Expr, values: Mapping[str, Any]) -> Value:
    """The value of `expr` with `values` bound to its names; ExprError when it cannot be computed."""
    try:
        return _eval(expr.tree.body, values, expr.source)
    except ExprError:
        raise
    except ZeroDivisionError:
        raise ExprError(f"'{expr.source}': division by zero with {_shown(expr, values)}") from None
    except OverflowError:
        raise ExprError(f"'{expr.source}': result too large with {_shown(expr, values)}") from None
    except (TypeError, ValueError) as exc:
        raise ExprError(f"'{expr.source}': {exc} with {_shown(expr, values)}") from None


def evaluate_number(expr: Expr, values: Mapping[str, Any]) -> float:
    """Evaluate and require a finite number (costs)."""
    v = evaluate(expr, values)
    if isinstance(v, str):
        raise ExprError(f"'{expr.source}' is a name, not a number; use sizeof({expr.source}) "
                        "for bytes per element")
    out = float(v)
    if not math.isfinite(out):
        raise ExprError(f"'{expr.source}' is not finite with {_shown(expr, values)}")
    return out


def _shown(expr: Expr, values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={values.get(k)!r}" for k in sorted(expr.names)) or "no parameters"


def _number(v: Any, source: str) -> int | float:
    if isinstance(v, str):
        raise ExprError(f"'{source}': '{v}' is a name, not a number; use sizeof() for dtypes")
    if isinstance(v, bool):
        return int(v)
    if not isinstance(v, int | float):
        raise ExprError(f"'{source}': {v!r} is not a number")
    if abs(v) > MAX_MAGNITUDE:
        raise ExprError(f"'{source}': intermediate value too large ({float(v):.3g})")
    return v


def _eval(node: ast.AST, env: Mapping[str, Any], src: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        raise ExprError(f"'{src}': no value for '{node.id}'")
    if isinstance(node, ast.BinOp):
        left = _number(_eval(node.left, env, src), src)
        right = _number(_eval(node.right, env, src), src)
        if isinstance(node.op, ast.Pow):
            return _power(left, right, src)
        return _number(_BINOPS[type(node.op)](left, right), src)
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.Not):
            return not _eval(node.operand, env, src)
        v = _number(_eval(node.operand, env, src), src)
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        result: Any = is_and
        for value in node.values:
            result = _eval(value, env, src)
            if bool(result) != is_and:
                return result
        return result
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env, src)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _eval(comp, env, src)
            if isinstance(left, str) != isinstance(right, str) and not isinstance(op, ast.Eq | ast.NotEq):
                raise ExprError(f"'{src}': cannot order {left!r} and {right!r}")
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, env, src) else node.orelse, env, src)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        fn = FUNCTIONS[node.func.id]
        args = [_eval(a, env, src) for a in node.args]
        if node.func.id != "sizeof":
            args = [_number(a, src) for a in args]
        return _number(fn(*args), src) if node.func.id != "sizeof" else fn(*args)
    raise ExprError(f"'{src}': cannot evaluate {type(node).__name__}")  # unreachable: parse checks


def _power(base: int | float, exponent: int | float, src: str) -> int | float:
    if abs(exponent) > MAX_EXPONENT:
        raise ExprError(f"'{src}': exponent {exponent} is too large (limit {MAX_EXPONENT})")
    if base != 0 and abs(exponent) * math.log10(abs(base)) > 300:
        raise ExprError(f"'{src}': {base}**{exponent} is too large")
    return _number(base**exponent, src)
