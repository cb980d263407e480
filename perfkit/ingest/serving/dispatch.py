"""`read_serving_results(path)`: which tool wrote the file (from its content), then its reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfkit.ingest.serving import aiperf, guidellm, vllm
from perfkit.ingest.serving.boundary import (
    MAX_FILE_BYTES,
    Document,
    ServingResultsError,
    fail,
    load_document,
)
from perfkit.ingest.serving.stage import IngestedStage

AIPERF_RECORDS = "aiperf-records"
AIPERF_SUMMARY = "aiperf-summary"
_HINT = ("pass the JSON a vllm bench serve --save-result wrote, AIPerf's profile_export.jsonl "
         "or profile_export_aiperf.json, or GuideLLM's benchmarks.json")


def detect(obj: Any) -> str | None:
    """The format of one parsed object: "vllm", "guidellm", "aiperf-records", "aiperf-summary"."""
    if vllm.looks_like(obj):
        return "vllm"
    if guidellm.looks_like(obj):
        return "guidellm"
    if aiperf.looks_like_record(obj):
        return AIPERF_RECORDS
    if aiperf.looks_like_summary(obj):
        return AIPERF_SUMMARY
    return None


def _describe(obj: Any) -> str:
    if isinstance(obj, dict):
        keys = ", ".join(str(k)[:40] for k in list(obj)[:6])
        return f"an object with keys {keys}{', ...' if len(obj) > 6 else ''}" if obj else "an empty object"
    return f"a {type(obj).__name__}"


def _format(doc: Document) -> str:
    line, first = doc.objects[0]
    kind = detect(first)
    if kind is None:
        if str(doc.path).lower().endswith(".csv"):
            fail(doc.path, "a CSV export carries no per-request data; " + _HINT)
        fail(doc.path, f"not a result of vllm bench serve, AIPerf or GuideLLM ({_describe(first)}); "
             + _HINT, line if doc.kind == "jsonl" else None)
    if kind == AIPERF_SUMMARY and len(doc.objects) > 1:
        fail(doc.path, "several AIPerf summaries in one file; pass one profile_export_aiperf.json",
             doc.objects[1][0])
    return kind


def _sibling(path: Path, kind: str) -> Path:
    """AIPerf writes X.jsonl (records) and X_aiperf.json (summary) side by side."""
    if kind == AIPERF_RECORDS:
        return path.with_name(f"{path.stem}_aiperf.json")
    stem = path.stem[: -len("_aiperf")] if path.stem.endswith("_aiperf") else path.stem
    return path.with_name(f"{stem}.jsonl")


def _read_sibling(path: Path, want: str, max_bytes: int) -> tuple[Document | None, list[str]]:
    if not path.is_file():
        return None, []
    try:
        doc = load_document(path, max_bytes)
        got = detect(doc.objects[0][1])
    except ServingResultsError as exc:
        return None, [f"{path.name} beside it not read: {exc}"]
    if got != want:
        return None, [f"{path.name} beside it is not an AIPerf {want.split('-')[1]} file; not read"]
    return doc, [f"merged with {path.name} from the same folder"]


def read_serving_results(path: str | Path, *, max_bytes: int = MAX_FILE_BYTES) -> list[IngestedStage]:
    """The stages of a vLLM, AIPerf or GuideLLM result file, detected from its content.

    A file that cannot be read as one raises `ServingResultsError` (a bad-input PerfkitError)
    whose message is one `FILE[:LINE]: what is wrong; what to do` line; bad single requests are
    dropped and counted in the stage's `notes`.
    """
    p = Path(path)
    doc = load_document(p, max_bytes)
    kind = _format(doc)
    if kind == "vllm":
        return vllm.read(doc)
    if kind == "guidellm":
        if doc.kind == "jsonl":
            fail(doc.path, "several GuideLLM reports in one file; pass one benchmarks.json",
                 doc.objects[1][0])
        return guidellm.read(doc)
    if kind == AIPERF_RECORDS:
        summary, notes = _read_sibling(_sibling(p, kind), AIPERF_SUMMARY, max_bytes)
        return [aiperf.read(doc, summary, notes)]
    records, notes = _read_sibling(_sibling(p, kind), AIPERF_RECORDS, max_bytes)
    return [aiperf.read(records, doc, notes)]
