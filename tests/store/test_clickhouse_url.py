"""ClickHouse store URLs: an embedded folder (relative after three slashes, absolute after four)
or a server (the SQLAlchemy dialect of clickhouse-connect)."""

from __future__ import annotations

from pathlib import Path

from perfkit.store.clickhouse_url import embedded_dir, is_clickhouse, server_url
from perfkit.store.url import file_path


def test_embedded_folder_and_server_urls() -> None:
    assert embedded_dir("clickhouse:///store/ch") == Path("store/ch")
    assert embedded_dir("clickhouse:////data/perf/ch") == Path("/data/perf/ch")
    assert file_path("clickhouse:////data/perf/ch?x=1") == Path("/data/perf/ch")
    url = "clickhouse://perf:secret@ch.internal:8123/perf"
    assert is_clickhouse(url) and embedded_dir(url) is None and file_path(url) is None
    assert server_url(url) == "clickhousedb://perf:secret@ch.internal:8123/perf"
    assert not is_clickhouse("clickhousedb://x") and not is_clickhouse("lake:///x")
