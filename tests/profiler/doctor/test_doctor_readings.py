"""What `perfkit doctor` reads: sysfs / proc files (real files in tmp_path), this machine, the
installed pynvml's names, and Nsight tools (small real executables on PATH).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import perfkit.profiler.doctor.gpu_readings as gpu_readings
from perfkit.profiler.doctor.gpu_readings import (
    profiling_admin_only,
    read_nvml,
    read_tool,
    version_text,
)
from perfkit.profiler.doctor.readings import (
    busy_from_ticks,
    busy_processes,
    governors,
    meminfo,
    parse_stat,
    physical_cores,
    read_cpu,
    smt_active,
    turbo,
    usable_cores,
)
from perfkit.profiler.doctor.run import quick_cpu_warnings


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def test_parse_stat_survives_parentheses_and_spaces_in_the_command_name() -> None:
    line = "4242 (tmux: server) (x)) S 1 4242 4242 0 -1 4194560 1 0 0 0 137 29 0 0 20 0 1 0 5 0 0"
    assert parse_stat(line) == ("tmux: server) (x)", 137 + 29)
    assert parse_stat("garbage") is None and parse_stat("1 (x) S 1") is None


def test_busy_from_ticks_is_cores_per_window_busiest_first() -> None:
    before = {1: ("init", 100), 2: ("spin", 1000), 3: ("half", 50), 4: ("me", 0)}
    after = {1: ("init", 100), 2: ("spin", 1050), 3: ("half", 75), 4: ("me", 99), 5: ("new", 9)}
    busy = busy_from_ticks(before, after, window_s=0.5, ticks_per_s=100.0, exclude={4})
    assert [(b.pid, b.name, b.cores) for b in busy] == [(2, "spin", 1.0), (3, "half", 0.5)]


def test_sysfs_readings_from_a_tree(tmp_path: Path) -> None:
    cpu = tmp_path / "cpu"
    for i, (pkg, core) in enumerate([(0, 0), (0, 0), (0, 1), (0, 1)]):  # 4 logical, 2 physical
        _write(cpu, f"cpu{i}/topology/physical_package_id", str(pkg))
        _write(cpu, f"cpu{i}/topology/core_id", str(core))
        _write(cpu, f"cpu{i}/cpufreq/scaling_governor", "powersave" if i else "performance")
    _write(cpu, "smt/active", "1")
    _write(cpu, "intel_pstate/no_turbo", "0")
    assert physical_cores(cpu) == 2 and smt_active(cpu) is True
    assert governors(cpu) == ("performance", "powersave", "powersave", "powersave")
    assert turbo(cpu) == (True, str(cpu / "intel_pstate" / "no_turbo"))


def test_sysfs_absent_reads_as_none(tmp_path: Path) -> None:
    assert physical_cores(tmp_path) is None and smt_active(tmp_path) is None
    assert governors(tmp_path) == () and turbo(tmp_path) == (None, None)
    _write(tmp_path, "cpufreq/boost", "0")
    assert turbo(tmp_path) == (False, str(tmp_path / "cpufreq" / "boost"))


def test_meminfo_and_cgroup_quota(tmp_path: Path) -> None:
    _write(tmp_path, "meminfo", "MemTotal:       24683656 kB\nMemFree:  1 kB\nMemAvailable:   21941604 kB")
    assert meminfo(tmp_path) == (24683656 * 1024, 21941604 * 1024)
    assert meminfo(tmp_path / "none") == (None, None)
    logical = os.cpu_count() or 1
    _write(tmp_path, "cpu.max", "100000 100000")  # one core of quota
    assert usable_cores(logical, tmp_path) == 1
    _write(tmp_path, "cpu.max", "max 100000")
    assert usable_cores(logical, tmp_path) == len(os.sched_getaffinity(0))


def test_read_cpu_on_this_machine() -> None:
    import torch

    cpu = read_cpu(busy_window_s=0.2)
    assert cpu.logical_cores == os.cpu_count()
    assert 1 <= cpu.usable_cores <= cpu.logical_cores
    assert cpu.load_1m is not None and abs(cpu.load_1m - os.getloadavg()[0]) < 5
    assert cpu.torch_threads == torch.get_num_threads()
    assert cpu.omp_num_threads == os.environ.get("OMP_NUM_THREADS")
    assert cpu.mem_total_bytes and cpu.mem_available_bytes and cpu.mem_available_bytes <= cpu.mem_total_bytes
    assert cpu.busy is not None and os.getpid() not in {b.pid for b in cpu.busy}
    assert read_cpu(busy_window_s=0, threads=7).torch_threads == 7


@pytest.mark.slow
def test_busy_processes_sees_a_spinning_child() -> None:
    spin = subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<20: pass"])
    try:
        time.sleep(0.3)  # let it start spinning
        busy = busy_processes(1.0)
    finally:
        spin.kill()
        spin.wait()
    assert busy is not None
    mine = [b for b in busy if b.pid == spin.pid]
    # a full core when the machine is idle; on a loaded 2-core machine it gets its share
    assert mine and 0.05 < mine[0].cores <= 1.1


def test_every_nvml_name_used_exists_in_the_installed_pynvml() -> None:
    """A misspelt NVML function would read as 'not supported' on every GPU: refuse it here."""
    import pynvml

    source = Path(gpu_readings.__file__).read_text()
    names = set(re.findall(r"\b(nvml[A-Z]\w+|NVML_[A-Z_]+)\b", source)) - {"nvmlInit"}
    assert len(names) > 20
    missing = sorted(n for n in names if not hasattr(pynvml, n))
    # the throttle query has a new and an old name; one of them is enough
    missing = [n for n in missing if n not in gpu_readings.THROTTLE_FUNCTIONS]
    assert missing == []


def test_read_nvml_without_a_driver_gives_the_reason() -> None:
    snap = read_nvml()
    if snap.gpus:
        pytest.skip("this machine has an NVIDIA GPU")
    assert snap.reason and snap.driver is None


def _tool(bin_dir: Path, name: str, script: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!{sys.executable}\n{script}\n")
    path.chmod(0o755)


@pytest.mark.slow
def test_read_tool_runs_version_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    _tool(bin_dir, "ncu", "print('NVIDIA (R) Nsight Compute Command Line Profiler')\n"
                          "print('Copyright (c) 2018-2024 NVIDIA Corporation')\n"
                          "print('Version 2024.1.1.0 (build 33998838) (public-release)')")
    _tool(bin_dir, "nsys", "import time\ntime.sleep(30)")
    _tool(bin_dir, "broken", "import sys\nsys.stderr.write('libfoo.so: not found\\n')\nsys.exit(127)")
    monkeypatch.setenv("PATH", str(bin_dir))
    assert read_tool("ncu", install_globs=()).version == "ncu 2024.1.1.0"
    assert read_tool("ncu", install_globs=()).found_because == f"{bin_dir / 'ncu'} (from PATH; version not in its " \
        "path; the only one found)"
    t0 = time.monotonic()
    slow = read_tool("nsys", timeout_s=0.5, install_globs=())
    assert slow.version is None and "within 0.5 s" in (slow.error or "") and time.monotonic() - t0 < 10
    broken = read_tool("broken", install_globs=())
    assert broken.error == "--version exited 127: libfoo.so: not found"
    assert read_tool("not-a-tool", install_globs=()) == gpu_readings.ToolReading(
        "not-a-tool", None, found_because="not-a-tool not found in PATH")


def test_version_text_of_real_tool_outputs() -> None:
    assert version_text("nsys", "NVIDIA Nsight Systems version 2024.2.1.106-242134037904v0\n") == "nsys 2024.2.1.106"
    assert version_text("x", "") is None


def test_profiling_admin_only_from_the_driver_params(tmp_path: Path) -> None:
    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\nEnableMSI: 1\n")
    assert profiling_admin_only(params) is True
    params.write_text("RmProfilingAdminOnly: 0\n")
    assert profiling_admin_only(params) is False
    assert profiling_admin_only(tmp_path / "absent") is None


@pytest.mark.skipif((os.cpu_count() or 1) >= 64, reason="needs fewer than 64 cores")
def test_quick_cpu_warnings_flag_more_threads_than_cores() -> None:
    lines = quick_cpu_warnings(threads=64)
    assert any(line.startswith("cpu.threads: torch 64") and "perfkit doctor" in line for line in lines)
    assert not any(line.startswith("cpu.threads") for line in quick_cpu_warnings(threads=1))
