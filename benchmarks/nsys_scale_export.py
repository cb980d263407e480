"""Build a synthetic Nsight Systems export of ~N kernels from a real one (for benchmarks).

    python -m benchmarks.nsys_scale_export SRC.sqlite OUT.sqlite --kernels 1000000

The activity tables of SRC (kernels, memcpy, memset, CUDA API calls, NVTX events) are copied
N times (N = the smallest with N * SRC kernels >= --kernels; by doubling, then the last few
copies): each copy is the whole set shifted in time by the source span and in correlationId by
the span of the source's ids (so ids stay as compact as a longer capture's),
so copies follow one another on the same GPUs, threads and streams, and every kernel still
links to its own runtime call. Names (StringIds) and the other tables stay as they are. Plain
SQL (`INSERT ... SELECT`), so the result has the real export's schema and row shapes.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sqlite3
import sys
from pathlib import Path

TIMED = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
         "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")  # fmt: skip
CORRELATED = TIMED[:4]


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]


def _bounds(conn: sqlite3.Connection, tables: list[str]) -> tuple[int, int, int]:
    """(first start, last end, span of the correlationIds) over the activity tables."""
    lo, hi, c_lo, c_hi = None, 0, None, 0
    for t in tables:
        a, b = conn.execute(f'SELECT min(start), max(coalesce("end", start)) FROM "{t}"').fetchone()
        if a is not None:
            lo = a if lo is None else min(lo, a)
            hi = max(hi, b)
        if t in CORRELATED:
            a, b = conn.execute(f'SELECT min(correlationId), max(correlationId) FROM "{t}" WHERE correlationId > 0').fetchone()
            if a is not None:
                c_lo = a if c_lo is None else min(c_lo, a)
                c_hi = max(c_hi, b)
    return lo or 0, hi, (c_hi - c_lo + 1) if c_lo is not None else 0


def scale(src: Path, out: Path, kernels: int, nvtx: bool = True) -> dict[str, int]:
    """Write the scaled export to `out`; return {table: rows}. Without `nvtx`, the NVTX_EVENTS
    table is left out (the shape of `nsys profile --trace=cuda`: GPU work and API calls only)."""
    shutil.copyfile(src, out)
    out.chmod(0o644)
    conn = sqlite3.connect(out)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    tables = [t for t in TIMED if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (t,)).fetchone()]
    base = conn.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    lo, hi, corr = _bounds(conn, tables)
    span = hi - lo + 1000
    want = max(1, math.ceil(max(kernels, 1) / base))  # copies of the source
    present = 1
    while present < want:
        add = min(present, want - present)  # double, then add the last few copies
        for t in tables:
            cols = _columns(conn, t)
            exprs = []
            for c in cols:
                if c in ("start", "end"):
                    exprs.append(f'"{c}" + {present * span}')
                elif c == "correlationId" and t in CORRELATED:  # ids grow as a longer capture's would
                    exprs.append(f'CASE WHEN "{c}" > 0 THEN "{c}" + {present * corr} ELSE "{c}" END')
                else:
                    exprs.append(f'"{c}"')
            names = ", ".join(f'"{c}"' for c in cols)
            where = "" if add == present else f'WHERE "start" < {lo + add * span}'  # copies 0 .. add-1
            conn.execute(f'INSERT INTO "{t}" ({names}) SELECT {", ".join(exprs)} FROM "{t}" {where}')
        conn.commit()
        present += add
    if not nvtx and "NVTX_EVENTS" in tables:
        conn.execute("DROP TABLE NVTX_EVENTS")
        conn.commit()
        conn.execute("VACUUM")
        tables.remove("NVTX_EVENTS")
    rows = {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
    conn.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("src", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--kernels", type=int, default=1_000_000)
    p.add_argument("--no-nvtx", action="store_true", help="leave the NVTX ranges out (a CUDA-only export)")
    args = p.parse_args(argv)
    rows = scale(args.src, args.out, args.kernels, nvtx=not args.no_nvtx)
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.0f} MB; " + ", ".join(f"{t} {n}" for t, n in rows.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
