"""Other tools' files given to `perfkit analyze`: one line saying what the file is and what reads it."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from perfkit.analyzers.loaders.other_tools import other_tool_hint
from perfkit.analyzers.loaders.trace_files import load_trace_file
from perfkit.core.errors import TraceError

ROCPROF_CSV = 'Kind,Agent_Id,Queue_Id,Kernel_Id,Kernel_Name,Correlation_Id,Start_Timestamp,End_Timestamp\n'
ROCPROF_V1_CSV = '"Index","KernelName","gpu-id","queue-id","BeginNs","EndNs"\n0,"k",0,0,1,2\n'
NCU_CSV = '"ID","Process ID","Process Name","Host Name","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'


@pytest.mark.parametrize(("name", "data", "says"), [
    ("kernel_trace.csv", ROCPROF_CSV.encode(), "rocprofv3 --kernel-trace"),
    ("results.csv", ROCPROF_V1_CSV.encode(), "rocprof CSV"),
    ("k.csv", NCU_CSV.encode(), "perfkit roofline RUN --ncu"),
    ("ncu.txt", b"==PROF== Connected to process 1\n", "ncu --csv"),
    ("hist.csv", b"commit,metric,value,unit\n", "perfkit ingest --format csv"),
    ("snap.pickle", b"\x80\x04\x95abc", "perfkit memory FILE"),
    ("cap.qdstrm", b"anything", "nsys export --type sqlite"),
    ("r.ncu-rep", b"anything", "--page raw"),
    ("t.pftrace", b"\n\x0b", "traceconv json"),
    ("viewer.html", b"<!DOCTYPE html><html>", "HTML page"),
    ("kernel_trace.csv.gz", gzip.compress(ROCPROF_CSV.encode(), mtime=0), "rocprof CSV"),
], ids=lambda v: v if isinstance(v, str) and "." in v and len(v) < 30 else "")
def test_a_neighbouring_tools_file_is_named_with_what_reads_it(tmp_path: Path, name: str, data: bytes,
                                                                says: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    assert says in (other_tool_hint(path) or "")
    with pytest.raises(TraceError) as err:
        load_trace_file(path)
    message = str(err.value)
    assert message.startswith(f"{path}: not a trace perfkit analyzes") and says in message and "\n" not in message


@pytest.mark.parametrize("data", [b'{"traceEvents": []}', b"[]", b"", b"garbage without commas"])
def test_traces_and_unknown_bytes_are_left_to_the_trace_loader(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(data)
    assert other_tool_hint(path) is None
