"""Which files are JAX / XLA traces, and loading several of them as one job.

- `*.xplane.pb`: an XSpace (analyzers.loaders.xla.xplane);
- a Chrome-format JSON (.json / .json.gz) whose first SNIFF_BYTES name an XLA plane as a
  process ("/host:CPU", "/device:GPU:0", ...): a JAX JSON trace (analyzers.loaders.xla.json_trace).
Several files (one per host) are one job: their devices are numbered one after another, like
nsys exports (ranks 0..n-1 of the first file, then n.. of the next).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from perfkit.analyzers.event_table import EventTable, concat_tables
from perfkit.analyzers.loaders.file_head import file_head
from perfkit.analyzers.loaders.xla.builder import HLO_EXTRA
from perfkit.core.errors import TraceError

XPLANE_SUFFIX = ".xplane.pb"
SNIFF_BYTES = 1 << 16
_PLANE_NAMES = (b'"/host:CPU"', b'"/device:GPU:', b'"/device:TPU:', b'"/host:metadata"')


def xla_format(path: str | Path) -> str | None:
    """"xplane", "jax-json", or None for a file that is no JAX / XLA trace."""
    path = Path(path)
    if path.name.endswith(XPLANE_SUFFIX):
        return "xplane"
    head = file_head(path, SNIFF_BYTES)
    compact = head.replace(b'": "', b'":"')
    if any(p in compact for p in _PLANE_NAMES) and b'"process_name"' in head:
        return "jax-json"
    return None


def _remap_hlo(tables: list[EventTable], joined: EventTable) -> EventTable:
    """concat_tables re-interns `names` but not the HLO ids in `extra`: map them the same way."""
    if not all(k in joined.extra for k in HLO_EXTRA):
        return joined
    index = {n: i for i, n in enumerate(joined.names)}
    extra = dict(joined.extra)
    parts: dict[str, list[int]] = {k: [] for k in HLO_EXTRA}
    for t in tables:
        lut = [index[n] for n in t.names]
        for k in HLO_EXTRA:
            values = t.extra.get(k)
            parts[k] += [] if values is None else [lut[v] if v >= 0 else -1 for v in values.tolist()]
    for k in HLO_EXTRA:
        extra[k] = np.asarray(parts[k], dtype=np.int64)
    return EventTable(joined.columns, joined.names, joined.args_text, joined.meta, extra, joined.extra_rows, joined.extra_code)


def load_xla_files(paths: Sequence[str | Path]) -> EventTable:
    """The JAX / XLA trace files of one job in one table (TraceError with one line on bad input)."""
    from perfkit.analyzers.loaders.xla.json_trace import load_jax_json
    from perfkit.analyzers.loaders.xla.xplane import load_xplane

    if not paths:
        raise TraceError("no trace files given; pass .xplane.pb or JAX trace.json.gz files")
    tables = []
    offset = 0
    for p in paths:
        table = load_xplane(p, offset) if xla_format(p) == "xplane" else load_jax_json(p, offset)
        tables.append(table)
        offset = max(table.ranks, default=offset - 1) + 1
    return tables[0] if len(tables) == 1 else _remap_hlo(tables, concat_tables(tables))
