"""The server block's grid -> configurations, and the placeholders filled into command and env."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from perfkit.workloads.serving.launch.grid import (
    argv_of,
    configurations,
    endpoint_of,
    env_of,
    url_on,
)
from perfkit.workloads.serving.launch.spec import ServerSpec


def test_grid_is_the_product_first_key_slowest() -> None:
    s = ServerSpec(command="srv --seqs {seqs} --block {block} --port {port}", grid={"seqs": [8, 16], "block": [16, 32]})
    names = [c.name for c in configurations(s)]
    assert names == ["seqs=8,block=16", "seqs=8,block=32", "seqs=16,block=16", "seqs=16,block=32"]
    c = configurations(s)[2]
    assert argv_of(s, c, 1234) == ["srv", "--seqs", "16", "--block", "16", "--port", "1234"]


def test_env_literal_braces_and_scalar_value() -> None:
    s = ServerSpec(command=["srv", "--port", "{port}", "--json", "{{a}}"], env={"FRAC": "{frac}"}, grid={"frac": 0.5})
    (c,) = configurations(s)
    assert env_of(s, c, 9) == {"FRAC": "0.5"}
    assert argv_of(s, c, 9)[-1] == "{a}"
    assert endpoint_of(s, 9) == "http://127.0.0.1:9"
    assert url_on("http://h:1", "/health") == "http://h:1/health"
    assert url_on("http://h:1", "http://x:2/r") == "http://x:2/r"


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"command": "srv --port {port} --x {nope}"}, "not a grid key"),
    ({"command": "srv --port {port}", "grid": {"seqs": [8]}}, "appears nowhere"),
    ({"command": "srv --port {port} --s {seqs}", "grid": {"seqs": []}}, "is empty"),
    ({"command": "srv --port {port} --s {seqs}", "grid": {"seqs": [8, 8]}}, "twice"),
    ({"command": "srv"}, "does not say the port"),
    ({"command": ""}, "command is empty"),
    ({"command": "srv 'open --port {port}"}, "quotes"),
    ({"command": "srv --port {port:d}"}, "a placeholder is"),
])
def test_bad_blocks_say_the_fix(kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        ServerSpec.model_validate(kwargs)
