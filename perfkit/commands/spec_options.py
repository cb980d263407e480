"""A command's options derived from the `CliOption` markers on a spec model (perfkit.core.cli_option).

Three uses of one declaration: `add_options` builds the argparse arguments, `spec_dict` maps the
parsed arguments back into the spec's dict (what model.yaml would say), `option_at` names the
option behind a validation error's location. Nothing is mirrored by hand.
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin

from perfkit.core.cli_option import CliOption

if TYPE_CHECKING:
    from pydantic import BaseModel


@dataclass(frozen=True)
class Declared:
    path: tuple[str, ...]  # the field's place in the spec: ("load", "rate")
    option: CliOption
    annotation: Any


def _unwrap(annotation: Any) -> Any:
    """`X | None` -> X."""
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        return rest[0] if len(rest) == 1 else annotation
    return annotation


def declared(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> list[Declared]:
    """Every field of `model` (and of the models in its fields) that carries a CliOption, in order."""
    out: list[Declared] = []
    for name, info in model.model_fields.items():
        path = (*prefix, name)
        option = next((m for m in info.metadata if isinstance(m, CliOption)), None)
        if option is not None:
            out.append(Declared(path, option, info.annotation))
        inner = _unwrap(info.annotation)
        if isinstance(inner, type) and hasattr(inner, "model_fields"):  # a pydantic model
            out.extend(declared(inner, path))
    return out


def _argument(d: Declared) -> dict[str, Any]:
    option, kind = d.option, _unwrap(d.annotation)
    kw: dict[str, Any] = {"help": option.help}
    if kind is bool:
        return kw | {"action": "store_true"}
    if option.metavar:
        kw["metavar"] = option.metavar
    if option.parse is not None:
        return kw
    if get_origin(kind) is Literal:
        return kw | {"choices": get_args(kind)}
    if option.type is None and kind not in (int, float, str):
        raise TypeError(f"{option.flag}: a {kind} field needs CliOption(type=...) or parse=...")
    return kw | {"type": option.type or kind}


def add_options(parser: argparse.ArgumentParser, model: type[BaseModel]) -> None:
    """One argparse argument per CliOption of `model`; the options of one group exclude each other."""
    groups: dict[str, Any] = {}
    for d in declared(model):
        option, kw = d.option, _argument(d)
        if not option.flag.startswith("-"):
            parser.add_argument(option.flag, **kw)
            continue
        target: Any = parser
        if option.group:
            target = groups.get(option.group) or groups.setdefault(option.group, parser.add_mutually_exclusive_group())
        target.add_argument(option.flag, dest=option.dest, **kw, **({} if "action" in kw else {"default": None}))


def add_options_on_first_parse(parser: argparse.ArgumentParser, model: Callable[[], type[BaseModel]],
                               after: Callable[[argparse.ArgumentParser], None] | None = None) -> None:
    """add_options, deferred to the first time `parser` parses (its --help too): `perfkit --help`
    builds every command's parser and so imports no spec model (pydantic, msgspec). `after` adds
    the command's arguments that must follow the derived ones (a positional after the spec's)."""
    parse = parser.parse_known_args

    def first(*args: Any, **kwargs: Any) -> Any:
        parser.parse_known_args = parse  # type: ignore[method-assign]
        add_options(parser, model())
        if after is not None:
            after(parser)
        return parse(*args, **kwargs)

    parser.parse_known_args = first  # type: ignore[method-assign]


def _given(args: argparse.Namespace, option: CliOption) -> bool:
    value = getattr(args, option.dest, None)
    return value is not None and value is not False


def _put(tree: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    old = tree.get(path[-1])
    tree[path[-1]] = old | value if isinstance(old, dict) and isinstance(value, dict) else value


def spec_dict(args: argparse.Namespace, model: type[BaseModel]) -> dict[str, Any]:
    """The spec (as a dict, before validation) that the given options describe; options left out
    are left out, so the model's defaults apply."""
    found = declared(model)
    given_groups = {d.option.group for d in found if d.option.group and _given(args, d.option)}
    out: dict[str, Any] = {}
    for d in found:
        option = d.option
        if _given(args, option):
            value = getattr(args, option.dest)
        elif option.default is not None and option.group not in given_groups:
            value = option.default
        else:
            continue
        if option.parse is not None:
            value = option.parse(value, option.flag)
        elif option.invert:
            value = False
        _put(out, d.path, value)
        for key, also in option.also:
            _put(out, (*d.path[:-1], key), also)
    return out


def option_at(loc: Sequence[str], model: type[BaseModel], extra: Mapping[str, str] | None = None) -> str:
    """The option(s) behind a validation error at `loc` (a path into the spec): the option of the
    field, else of the nearest enclosing field, else the options that set a block (its group's
    when it has one: `--concurrency / --rate / --replay`)."""
    found = declared(model)
    at = {".".join(d.path): d.option.shown for d in found} | dict(extra or {})
    for i in range(len(loc), 0, -1):
        key = ".".join(loc[:i])
        if key in at:
            return at[key]
        under = [d for d in found if d.path[:i] == tuple(loc[:i])]
        if under:
            grouped = [d for d in under if d.option.group] or under
            return " / ".join(d.option.shown for d in grouped)
    return "an option"
