"""YAML loading that remembers where every value came from (line and column), for errors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from perfkit.core.errors import SpecError, located


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


def load_yaml(path: str | Path) -> YamlDoc:
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise SpecError(f"{p}: file not found; pass the path of a model.yaml") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise SpecError(f"{p}: cannot read ({exc.__class__.__name__}); pass a readable YAML file") from None
    try:
        data = yaml.safe_load(text)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        problem = exc.problem or "invalid YAML"
        raise SpecError(located(str(p), line, col, f"YAML syntax error: {problem}; fix the syntax")) from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{p}: YAML error: {exc}; fix the syntax") from None
    return YamlDoc(path=str(p), data=data, root=root)
