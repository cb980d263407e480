"""A point's server traces and profiling window: round trip through run.json, and records
written before the field existed still load."""

from __future__ import annotations

from perfkit.core.codec import from_builtins, to_builtins
from perfkit.core.profile_window import PointArtifacts, ProfileWindow, WindowOverhead
from perfkit.core.record import PointResult


def test_point_artifacts_round_trip_and_are_left_out_when_empty() -> None:
    plain = PointResult(key="serving/x/concurrency=1", kind="serving", workload="x", params={}, status="ok")
    assert "artifacts" not in to_builtins(plain)  # an older record has no such key
    assert from_builtins(PointResult, to_builtins(plain)) == plain
    window = ProfileWindow(server="vllm", start_s=1.0, end_s=3.5, seconds=2.0, request_ids=[3, 4],
                           overhead=WindowOverhead(0.011, 0.010, requests_inside=2, requests_outside=9))
    point = PointResult(key=plain.key, kind="serving", workload="x", params={}, status="ok",
                        artifacts=PointArtifacts(["server_traces/s/a.pt.trace.json.gz"], window))
    data = to_builtins(point)
    assert data["artifacts"]["server_traces"] == ["server_traces/s/a.pt.trace.json.gz"]
    back = from_builtins(PointResult, data)
    assert back == point
    assert back.artifacts.profile_window is not None
    ratio = back.artifacts.profile_window.overhead.tpot_ratio
    assert ratio is not None and abs(ratio - 1.1) < 1e-9
