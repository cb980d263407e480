"""Files of other tools handed to `perfkit analyze`: name what the file is and what to do with it.

A file that is not one of the trace formats perfkit loads (analyzers.loaders.trace_files) would
reach the Kineto loader and be refused as "not JSON". Many of them are a neighbouring tool's
output a user reasonably tries first: a rocprof CSV, an Nsight Compute CSV or report, an
unfinished Nsight Systems capture, a Perfetto protobuf trace, a torch memory snapshot, a CSV of
results. `other_tool_hint` recognises them from their name and first bytes and says which
command reads them or how to export a format perfkit reads. Pure apart from reading the head.
"""

from __future__ import annotations

from pathlib import Path

from perfkit.analyzers.loaders.file_head import file_head

PICKLE_PROTOCOLS = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")

_BY_SUFFIX: dict[str, str] = {
    ".qdstrm": "an unfinished Nsight Systems capture (.qdstrm: nsys did not convert it to a .nsys-rep, "
               "often because the profiled process was killed); re-run the capture, or convert it with "
               "nsys's QdstrmImporter, then `nsys export --type sqlite REPORT.nsys-rep` and analyze the .sqlite",
    ".ncu-rep": "an Nsight Compute report; export its raw page (`ncu --import FILE --csv --page raw > k.csv`) "
                "and place it with `perfkit roofline RUN --ncu k.csv`",
    ".pftrace": "a Perfetto protobuf trace; convert it to Chrome JSON (`traceconv json FILE out.json`) and "
                "analyze that",
    ".perfetto-trace": "a Perfetto protobuf trace; convert it to Chrome JSON (`traceconv json FILE out.json`) "
                       "and analyze that",
}



def _csv_hint(first_line: str) -> str | None:
    cols = first_line.replace('"', "").strip().lower()
    if "kernel_name" in cols or "kernelname" in cols:
        return ("a rocprof CSV; perfkit reads rocprofv3's JSON: record with "
                "`rocprofv3 --kernel-trace --hip-runtime-trace --output-format json -- CMD` and analyze the .json")
    if "metric name" in cols or ("kernel name" in cols and "id" in cols):
        return "an Nsight Compute CSV; place it on the roofline with `perfkit roofline RUN --ncu FILE`"
    if cols.startswith("commit,metric,value"):
        return "a CSV of results; store it with `perfkit ingest --format csv FILE`"
    return None


def other_tool_hint(path: str | Path) -> str | None:
    """What this non-trace file is and what to do with it, or None when it is none of those."""
    p = Path(path)
    for suffix, hint in _BY_SUFFIX.items():
        if p.name.lower().endswith(suffix):
            return hint
    head = file_head(p)
    if head.startswith(PICKLE_PROTOCOLS):
        return "a Python pickle (a torch memory snapshot?); read memory snapshots with `perfkit memory FILE`"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"==PROF=="):
        return "Nsight Compute's console output; export a CSV with `ncu --csv --page raw` and use `perfkit roofline RUN --ncu FILE`"
    if text[:1] in (b"{", b"[") or not text:
        return None
    if text[:9].lower() in (b"<!doctype", b"<html>") or text[:5].lower() == b"<html":
        return "an HTML page (a saved trace viewer or report?), not a trace; pass the trace file itself"
    first = text.split(b"\n", 1)[0].decode("utf-8", "replace")
    return _csv_hint(first) if "," in first else None
