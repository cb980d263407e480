"""Resolve and call the user's functions named in model.yaml (`package.module:function`).

Every failure becomes an `EntryError` whose one-line message starts with the position of the
key in model.yaml (`FILE:LINE:COL: entry 'pkg.mod:fn' failed to import: ...; check ...`).
Modules are imported from the working directory (put first on sys.path, as `python -m` does)
and from installed packages.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from perfkit.core.errors import PerfkitError


class EntryError(PerfkitError):
    """A user function that cannot be imported, called, or whose result cannot be used.

    Raised while a point is built or checked; the point runner records it as the point's
    error (one line, starting with the spec position) and the sweep goes on.
    """


def short_error(exc: BaseException) -> str:
    """`TypeName: first line of the message` (at most 300 characters)."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text[:300]


def ensure_cwd_on_path() -> None:
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def import_module(ref: str, role: str, where: str) -> ModuleType:
    module_name = ref.partition(":")[0]
    ensure_cwd_on_path()
    importlib.invalidate_caches()
    try:
        return importlib.import_module(module_name)
    except Exception as exc:
        raise EntryError(
            f"{where}: {role} '{ref}' failed to import: {short_error(exc)}; check the module path "
            f"(modules are imported from the working directory {os.getcwd()} and installed packages)"
        ) from exc


def import_ref(ref: str, role: str, where: str) -> Callable[..., Any]:
    """The callable named by `ref` ("package.module:attr[.attr]")."""
    module = import_module(ref, role, where)
    obj: Any = module
    attr_path = ref.partition(":")[2]
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise EntryError(
                f"{where}: {role} '{ref}': module '{module.__name__}' has no attribute "
                f"'{attr_path}'; check the function name"
            ) from None
    if not callable(obj):
        raise EntryError(f"{where}: {role} '{ref}' is a {type(obj).__name__}, not a function; "
                         "name a function")
    return obj  # type: ignore[no-any-return]


def accepted_kwargs(fn: Callable[..., Any], available: Mapping[str, Any], role: str, ref: str,
                    where: str) -> dict[str, Any]:
    """The subset of `available` that `fn` accepts; an error when a required argument is missing."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return dict(available)
    params = sig.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return dict(available)
    out: dict[str, Any] = {}
    for p in params:
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if p.name in available and p.kind is not inspect.Parameter.POSITIONAL_ONLY:
            out[p.name] = available[p.name]
        elif p.default is inspect.Parameter.empty:
            known = ", ".join(available) or "none"
            raise EntryError(
                f"{where}: {role} '{ref}' needs argument '{p.name}', which the sweep does not "
                f"define (it passes: {known}); add it to params or give it a default"
            )
    return out


def call_ref(fn: Callable[..., Any], available: Mapping[str, Any], role: str, ref: str,
             where: str) -> Any:
    """Call `fn` with the keyword arguments it accepts out of `available`."""
    kwargs = accepted_kwargs(fn, available, role, ref, where)
    try:
        return fn(**kwargs)
    except Exception as exc:
        shown = ", ".join(f"{k}={v}" for k, v in kwargs.items() if k != "seed")
        raise EntryError(f"{where}: {role} '{ref}' raised {short_error(exc)} (called with {shown}); "
                         "fix the function or the parameters") from exc


def triton_objects(module: ModuleType) -> list[Any]:
    """Triton kernels (jit / interpreted / autotuned functions) among a module's globals.

    Also looks one level into modules of the same top-level package that it refers to.
    """
    top = module.__name__.split(".")[0]
    seen: set[int] = set()
    found: list[Any] = []
    todo = [module]
    for mod in todo:
        for value in list(vars(mod).values()):
            if isinstance(value, ModuleType):
                if value.__name__.split(".")[0] == top and mod is module and id(value) not in seen:
                    seen.add(id(value))
                    todo.append(value)
                continue
            if type(value).__module__.startswith("triton.") and hasattr(value, "fn"):
                found.append(value)
    return found


def innermost_kernel(obj: Any) -> Any:
    """Unwrap triton.autotune / triton.heuristics wrappers down to the jit function."""
    for _ in range(8):
        inner = getattr(obj, "fn", None)
        if inner is None or not type(inner).__module__.startswith("triton."):
            return obj
        obj = inner
    return obj
