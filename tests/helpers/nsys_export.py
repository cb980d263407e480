"""A tiny Nsight Systems SQLite export, written row by row, with every table and column the nsys
loader reads (and nothing else), so a test can damage any of them.

The columns carry nsys's declared types (INTEGER / TEXT) but none of its NOT NULL constraints,
so NULL can be written anywhere. Two processes, one GPU each (deviceIds 0 and 1): per GPU
KERNELS kernels (three names), two copies, one memset, one CUDA API call per GPU op plus one
cudaDeviceSynchronize, and NVTX: push/pop ranges by text, by textId, in a created domain.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX = "NVTX_EVENTS"

KERNELS = 12  # per GPU
GPU_COLUMNS = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid")
CONFIG = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread",
          "staticSharedMemory", "dynamicSharedMemory", "graphId", "graphNodeId")
SCHEMA: dict[str, dict[str, str]] = {
    KERNEL: {**dict.fromkeys(GPU_COLUMNS, "INTEGER"), "demangledName": "INTEGER", "shortName": "INTEGER",
             "mangledName": "INTEGER", **dict.fromkeys(CONFIG, "INTEGER")},
    MEMCPY: {**dict.fromkeys(GPU_COLUMNS, "INTEGER"), "bytes": "INTEGER", "copyKind": "INTEGER",
             "srcKind": "INTEGER", "dstKind": "INTEGER"},
    MEMSET: {**dict.fromkeys(GPU_COLUMNS, "INTEGER"), "bytes": "INTEGER", "memKind": "INTEGER"},
    RUNTIME: {"start": "INTEGER", "end": "INTEGER", "globalTid": "INTEGER", "correlationId": "INTEGER",
              "nameId": "INTEGER"},
    NVTX: {"start": "INTEGER", "end": "INTEGER", "eventType": "INTEGER", "globalTid": "INTEGER",
           "domainId": "INTEGER", "text": "TEXT", "textId": "INTEGER"},
    "StringIds": {"id": "INTEGER", "value": "TEXT"},
    "TARGET_INFO_GPU": {"id": "INTEGER", "name": "TEXT"},
    "META_DATA_EXPORT": {"name": "TEXT", "value": "TEXT"},
}
STRINGS = {1: "ampere_sgemm_128x64_nn", 2: "sgemm_128x64", 3: "_Z13ampere_sgemmv",
           4: "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int)",
           5: "vectorized_elementwise_kernel", 6: "_Z29vectorized_elementwise_kernelv",
           7: "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
           8: "ncclDevKernel_AllReduce", 9: "_Z23ncclDevKernel_AllReducev",
           20: "cudaLaunchKernel_v7000", 21: "cudaMemcpyAsync_v3020", 22: "cudaMemsetAsync_v3020",
           23: "cudaDeviceSynchronize_v3020", 30: "decode"}  # fmt: skip
PIDS = (100, 200)  # process i drives GPU i
TID = 7
HOST = 1 << 48  # the hardware id bits nsys puts above the process id


def global_pid(pid: int) -> int:
    return HOST | pid << 24


def write_tiny_export(path: Path) -> Path:
    conn = sqlite3.connect(path)
    with conn:
        for table, cols in SCHEMA.items():
            conn.execute(f'CREATE TABLE "{table}" ({", ".join(f"{c!r} {t}" for c, t in cols.items())})')
        rows: dict[str, list[tuple[object, ...]]] = {t: [] for t in SCHEMA}
        corr = 1000
        for dev, pid in enumerate(PIDS):
            gpid, gtid = global_pid(pid), global_pid(pid) | TID
            t = 1_000_000 + dev * 50_000
            rows[NVTX].append((t - 500, t + 400_000, 59, gtid, 0, "step", None))
            rows[NVTX].append((t - 400, t + 100_000, 59, gtid, 0, None, 30))
            rows[NVTX].append((t - 300, t + 50_000, 59, gtid, 1, "forward", None))
            rows[NVTX].append((t - 900, None, 75, gtid, 1, "model", None))  # the domain's name
            for k in range(KERNELS):
                corr += 1
                names = (1, 2, 3) if k % 3 == 0 else (4, 5, 6) if k % 3 == 1 else (7, 8, 9)
                start, dur = t + 10_000 * k, 3_000 + 500 * k
                rows[RUNTIME].append((start - 2_000, start - 1_000, gtid, corr, 20))
                rows[KERNEL].append((start, start + dur, dev, 7, corr, gpid, *names,
                                     128, 1, 1, 256, 1, 1, 32 + k % 3, 1024, 0, None, None))
            for k, kind in enumerate((1, 2)):
                corr += 1
                start = t + 10_000 * KERNELS + 5_000 * k
                rows[RUNTIME].append((start - 2_000, start - 1_500, gtid, corr, 21))
                rows[MEMCPY].append((start, start + 2_000, dev, 7, corr, gpid, 1 << 20, kind, 1, 2))
            corr += 1
            start = t + 10_000 * KERNELS + 20_000
            rows[RUNTIME].append((start - 2_000, start - 1_800, gtid, corr, 22))
            rows[MEMSET].append((start, start + 1_000, dev, 7, corr, gpid, 4096, 2))
            rows[RUNTIME].append((start + 2_000, start + 9_000, gtid, 0, 23))
        rows["StringIds"] = list(STRINGS.items())
        rows["TARGET_INFO_GPU"] = [(0, "NVIDIA H100 80GB HBM3"), (1, "NVIDIA H100 80GB HBM3")]
        rows["META_DATA_EXPORT"] = [("EXPORT_PRODUCT_VERSION", "2026.2.1"), ("EXPORT_SCHEMA_VERSION", "3.25.0")]
        for table, values in rows.items():
            marks = ",".join("?" * len(SCHEMA[table]))
            conn.executemany(f'INSERT INTO "{table}" VALUES ({marks})', values)
    conn.close()
    return path


def damaged_copy(clean: Path, folder: Path, sql: str) -> Path:
    """A copy of the export `clean` in `folder` with `sql` applied (the damage a test makes)."""
    out = folder / "damaged.sqlite"
    shutil.copyfile(clean, out)
    with sqlite3.connect(out) as conn:
        conn.executescript(sql)
    return out
