"""The per-request file of a serving stage: one JSON object per request, gzip, written atomically.

Fields are RequestRecord's with the token times given per chunk (chunk_times_s, chunk_tokens);
`read_requests` gives the records back (token times rebuilt: a chunk of k tokens gives k times).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfkit.core.atomic import write_bytes_atomic
from perfkit.core.errors import StoreError
from perfkit.workloads.serving.records import RequestRecord


def _row(r: RequestRecord) -> dict[str, Any]:
    return {"index": r.index, "scheduled_s": r.scheduled_s, "sent_s": r.sent_s, "end_s": r.end_s,
            "chunk_times_s": list(r.chunk_times_s), "chunk_tokens": list(r.chunk_tokens),
            "input_tokens": r.input_tokens, "output_tokens": r.output_tokens, "token_source": r.token_source,
            "error": r.error, "server": r.server}


def write_requests(path: Path, records: Sequence[RequestRecord]) -> None:
    text = "".join(json.dumps(_row(r), separators=(",", ":"), allow_nan=False) + "\n" for r in records)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, gzip.compress(text.encode(), compresslevel=6, mtime=0))


def read_requests(path: Path) -> list[RequestRecord]:
    try:
        lines = gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()
        out = []
        for line in lines:
            d = json.loads(line)
            times = [t for t, k in zip(d["chunk_times_s"], d["chunk_tokens"], strict=True) for _ in range(int(k))]
            out.append(RequestRecord(
                index=int(d["index"]), scheduled_s=float(d["scheduled_s"]), sent_s=d["sent_s"],
                token_times_s=tuple(times), chunk_times_s=tuple(d["chunk_times_s"]),
                chunk_tokens=tuple(int(k) for k in d["chunk_tokens"]), end_s=d["end_s"],
                input_tokens=int(d["input_tokens"]), output_tokens=int(d["output_tokens"]),
                token_source=str(d["token_source"]), error=d["error"], server=dict(d.get("server") or {})))
        return out
    except (OSError, EOFError, ValueError, KeyError, TypeError, gzip.BadGzipFile) as exc:
        raise StoreError(f"{path}: not a readable serving requests file ({type(exc).__name__}); "
                         "re-run the stage") from None
