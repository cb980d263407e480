"""GPU telemetry of a local server: sampled through NVML where there is a GPU, else a reason."""

from __future__ import annotations

import time

from perfkit.workloads.serving.telemetry.gpu_telemetry import gpu_telemetry, is_local


def test_only_a_server_on_this_host_is_sampled() -> None:
    assert is_local("http://127.0.0.1:8000") and is_local("http://localhost:1")
    assert not is_local("http://10.1.2.3:8000")
    with gpu_telemetry("http://10.1.2.3:8000") as t:
        pass
    assert t.metrics() == {} and "not on this host" in t.note


def test_a_local_server_gets_samples_or_the_reason_there_are_none() -> None:
    with gpu_telemetry("http://127.0.0.1:8000", interval_s=0.02) as t:
        time.sleep(0.1)
    m = t.metrics()
    if t.gpus:  # a GPU machine: NVML's own numbers
        assert m["server_gpus_sampled"] == t.gpus and 0 <= m["server_gpu_util_mean_pct"] <= 100
        assert m["server_gpu_mem_used_max_bytes"] > 0
    else:
        assert m == {} and t.note.startswith("server GPUs not sampled")
