"""YAML loading that remembers where every value came from (line and column), for errors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from perfkit.core.errors import SpecError, located
from perfkit.core.regular_file import check_not_special


@dataclass(frozen=True)
class YamlDoc:
    path: str
    data: Any
    root: yaml.Node | None

    def where(self, loc: Sequence[str | int], key: bool = False) -> tuple[int, int]:
        """1-based (line, column) of the value at `loc` (or of its key when `key` is true).

        Falls back to the deepest existing ancestor when part of the path is missing.
        """
        node = self.root
        if node is None:
            return 1, 1
        mark = node.start_mark
        for i, part in enumerate(loc):
            last = i == len(loc) - 1
            if isinstance(node, yaml.MappingNode):
                found = None
                for k_node, v_node in node.value:
                    if str(k_node.value) == str(part):
                        found = (k_node, v_node)
                        break
                if found is None:
                    break
                node = found[1]
                mark = found[0].start_mark if (last and key) else found[1].start_mark
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                if part >= len(node.value):
                    break
                node = node.value[part]
                mark = node.start_mark
            else:
                break
        return mark.line + 1, mark.column + 1

    def error(self, loc: Sequence[str | int], message: str, key: bool = False) -> SpecError:
        line, col = self.where(loc, key=key)
        return SpecError(located(self.path, line, col, message))


MAX_DEPTH = 100  # nesting of mappings / sequences
MAX_VALUES = 200_000  # values built, aliases expanded (an alias bomb stops here, not at 1 GB)
MAX_TEXT_CHARS = 160  # of a YAML problem quoted in a message
_MERGE_TAG = "tag:yaml.org,2002:merge"


def load_yaml(path: str | Path) -> YamlDoc:
    """Parse `path` keeping every node's position; bad input raises one located SpecError.

    Refused with their position: syntax errors, nesting deeper than MAX_DEPTH, more than
    MAX_VALUES values after alias expansion, and a key given twice in one mapping.
    """
    p = Path(path)
    check_not_special(p, SpecError)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise SpecError(f"{p}: file not found; check the path") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise SpecError(f"{p}: cannot read ({exc.__class__.__name__}); pass a readable YAML file") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        problem = _short(exc.problem or "invalid YAML")
        raise SpecError(located(str(p), line, col, f"YAML syntax error: {problem}; fix the syntax")) from None
    except RecursionError:
        raise SpecError(f"{p}: YAML nested too deeply to read; flatten it") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{p}: YAML error: {_short(str(exc))}; fix the syntax") from None
    data = _Builder(str(p)).build(root, 0) if root is not None else None
    return YamlDoc(path=str(p), data=data, root=root)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TEXT_CHARS else text[: MAX_TEXT_CHARS - 3] + "..."


class _Builder:
    """Python values from composed nodes (safe types only), with the caps above."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.values = 0
        self.scalars = yaml.constructor.SafeConstructor()

    def fail(self, node: yaml.Node, message: str) -> SpecError:
        return SpecError(located(self.path, node.start_mark.line + 1, node.start_mark.column + 1, message))

    def build(self, node: yaml.Node, depth: int) -> Any:
        self.values += 1
        if self.values > MAX_VALUES:
            raise self.fail(node, f"more than {MAX_VALUES} values once aliases are expanded; "
                                  "write the spec without nested aliases")
        if depth > MAX_DEPTH:
            raise self.fail(node, f"nested more than {MAX_DEPTH} levels deep; flatten it")
        if isinstance(node, yaml.SequenceNode):
            return [self.build(child, depth + 1) for child in node.value]
        if isinstance(node, yaml.MappingNode):
            return self.mapping(node, depth)
        try:
            return self.scalars.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise self.fail(node, f"cannot read this value ({_short(str(exc))}); quote it or fix it") from None

    def mapping(self, node: yaml.MappingNode, depth: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        first: dict[Any, yaml.Node] = {}
        merged: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:  # `<<: *defaults`: explicit keys win
                value = self.build(value_node, depth + 1)
                for part in value if isinstance(value, list) else [value]:
                    if not isinstance(part, dict):
                        raise self.fail(value_node, "'<<' merges a mapping (or a list of mappings); fix it")
                    merged = {**part, **merged}
                continue
            key = self.build(key_node, depth + 1)
            if isinstance(key, (list, dict)):
                raise self.fail(key_node, "a mapping key must be a plain value; fix it")
            if key in first:
                line = first[key].start_mark.line + 1
                raise self.fail(key_node, f"key '{key}' is given twice (first at line {line}); keep one")
            first[key] = key_node
            out[key] = self.build(value_node, depth + 1)
        return {**merged, **out}
