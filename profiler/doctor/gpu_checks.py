"""The GPU-side checks of `perfkit doctor`: pure functions of `GpuReadings` and `ToolReading`.

Without an NVIDIA driver every GPU check is reported as skipped with the reason, under the same
names, so the JSON lists the same checks on every machine.
"""

from __future__ import annotations

from perfkit.profiler.doctor.model import FAIL, OK, SKIP, WARN, Check, GpuReadings, ToolReading
from perfkit.profiler.env import THROTTLE_REASONS

GPU_CHECKS = ("clocks", "persistence", "throttle", "power", "ecc", "mig", "processes", "pcie")
BENIGN_THROTTLE = {"gpu_idle", "applications_clocks_setting", "display_clock_setting", "sync_boost"}
SLOWDOWN_THROTTLE = {"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
BUSY_UTILIZATION_PCT = 10


def lock_command(g: GpuReadings) -> str:
    sm = g.default_app_sm_mhz or g.max_sm_mhz
    cmd = f"sudo nvidia-smi -i {g.index} -pm 1 && sudo nvidia-smi -i {g.index} -lgc {sm},{sm}"
    if g.max_mem_mhz:
        cmd += f" && sudo nvidia-smi -i {g.index} -lmc {g.max_mem_mhz},{g.max_mem_mhz}"
    return f"lock them: {cmd} (undo: -rgc / -rmc)"


CLOCK_SPREAD_MHZ = 15  # SM clocks sampled under load within this of each other: held (locked)


def check_clocks(g: GpuReadings) -> Check:
    """ok only when a lock can be seen: application clocks set away from their default, or the SM
    clock sampled under load (doctor --selftest on a GPU) held at one value. An idle GPU at its
    maximum SM clock proves nothing (a P0 GPU with persistence on idles at max, unlocked)."""
    name = f"gpu{g.index}.clocks"
    if g.sm_mhz is None or g.max_sm_mhz is None:
        return Check(name, SKIP, "clocks not reported by this GPU / driver")
    app_set = [(a, d) for a, d in ((g.app_sm_mhz, g.default_app_sm_mhz), (g.app_mem_mhz, g.default_app_mem_mhz))
               if a is not None and d is not None and a != d]
    if app_set:
        return Check(name, OK, f"application clocks SM {g.app_sm_mhz} / mem {g.app_mem_mhz} MHz "
                     f"(default {g.default_app_sm_mhz} / {g.default_app_mem_mhz}): set with -ac")
    advice = "clocks boost and fall with power and temperature; " + lock_command(g)
    load = g.sm_mhz_under_load
    if load:
        low, high = min(load), max(load)
        if high - low <= CLOCK_SPREAD_MHZ:
            return Check(name, OK, f"SM held at {low}-{high} MHz under load ({len(load)} samples, max "
                         f"{g.max_sm_mhz}): locked")
        return Check(name, WARN, f"SM {low}-{high} MHz under load ({len(load)} samples): not locked", advice)
    if g.utilization_pct != 0:
        util = "unknown" if g.utilization_pct is None else f"{g.utilization_pct}%"
        value = f"SM {g.sm_mhz} MHz at {util} utilization (max {g.max_sm_mhz}): lock not visible"
        return Check(name, WARN, value, advice)
    if g.sm_mhz >= 0.5 * g.max_sm_mhz:
        value = (f"SM {g.sm_mhz} MHz while idle (max {g.max_sm_mhz}): not verifiable (a GPU in P0 with "
                 "persistence on idles at max without a lock)")
        return Check(name, WARN, value, "run `perfkit doctor --selftest` to read the clocks under load, or "
                     + lock_command(g))
    value = f"SM {g.sm_mhz} MHz while idle (max {g.max_sm_mhz}, application {g.app_sm_mhz}): not locked"
    return Check(name, WARN, value, advice)


def check_persistence(g: GpuReadings) -> Check:
    name = f"gpu{g.index}.persistence"
    if g.persistence is None:
        return Check(name, SKIP, "persistence mode not reported")
    if g.persistence:
        return Check(name, OK, "on")
    return Check(name, WARN, "off", "the driver re-initialises the GPU for each process (slow first "
                 f"call, clock locks lost): sudo nvidia-smi -i {g.index} -pm 1")


def throttle_list(mask: int) -> list[str]:
    names = [n for bit, n in THROTTLE_REASONS.items() if mask & bit]
    unknown = mask & ~sum(THROTTLE_REASONS)
    return names + ([f"0x{unknown:x}"] if unknown else [])


def check_throttle(g: GpuReadings) -> Check:
    name = f"gpu{g.index}.throttle"
    if g.throttle_mask is None:
        return Check(name, SKIP, "throttle reasons not reported")
    names = throttle_list(g.throttle_mask)
    value = ", ".join(names) if names else "none"
    bad = [n for n in names if n in SLOWDOWN_THROTTLE]
    if bad:
        return Check(name, FAIL, value, "the GPU is slowing itself down (heat or power delivery): "
                     "check cooling and power, wait for it to cool, then re-run")
    if "sw_power_cap" in names:
        return Check(name, WARN, value, "clocks capped by the power limit right now; see gpu.power")
    unknown = [n for n in names if n not in BENIGN_THROTTLE]
    if unknown:
        return Check(name, WARN, value, "reasons this version does not know: nvidia-smi -q -d PERFORMANCE")
    return Check(name, OK, value)


def check_power(g: GpuReadings) -> Check:
    name = f"gpu{g.index}.power"
    limit, default = g.power_limit_w, g.default_power_limit_w
    if limit is None:
        return Check(name, SKIP, "power limit not reported")
    if default is None:
        return Check(name, OK, f"limit {limit:.0f} W (default not reported)")
    value = f"limit {limit:.0f} W, default {default:.0f} W"
    if limit < 0.99 * default:
        return Check(name, WARN, value, "a lowered limit caps clocks under load: "
                     f"sudo nvidia-smi -i {g.index} -pl {default:.0f}")
    return Check(name, OK, value)


def check_ecc(g: GpuReadings) -> Check:
    name = f"gpu{g.index}.ecc"
    if g.ecc_current is None:
        return Check(name, SKIP, "ECC not supported by this GPU")
    value = "on" if g.ecc_current else "off"
    if g.ecc_uncorrected:
        return Check(name, FAIL, f"{value}, {g.ecc_uncorrected} uncorrected errors since driver load",
                     "the memory reports uncorrectable errors: drain the GPU and run nvidia-smi -q -d ECC")
    if g.ecc_pending is not None and g.ecc_pending != g.ecc_current:
        return Check(name, WARN, f"{value}, {'on' if g.ecc_pending else 'off'} after reset",
                     "an ECC change waits for a GPU reset: reset before comparing runs")
    return Check(name, OK, value)


def check_mig(g: GpuReadings) -> Check:
    name = f"gpu{g.index}.mig"
    if g.mig_current is None:
        return Check(name, SKIP, "MIG not supported by this GPU")
    if g.mig_current:
        return Check(name, WARN, "on", "measurements see a MIG slice, not comparable with a whole "
                     f"GPU: sudo nvidia-smi -i {g.index} -mig 0 (then reset the GPU)")
    if g.mig_pending:
        return Check(name, WARN, "off, on after reset", "MIG turns on at the next GPU reset")
    return Check(name, OK, "off")


def check_gpu_processes(g: GpuReadings) -> Check:
    name = f"gpu{g.index}.processes"
    if g.processes is None:
        return Check(name, SKIP, "processes not reported")
    if not g.processes:
        return Check(name, OK, "none")
    listed = ", ".join(f"{p.pid}" + (f" ({p.used_bytes / 2**30:.1f} GiB)" if p.used_bytes else "")
                       for p in g.processes[:3])
    more = f" +{len(g.processes) - 3} more" if len(g.processes) > 3 else ""
    util = g.utilization_pct
    value = f"{len(g.processes)} other: {listed}{more}" + (f"; {util}% busy" if util is not None else "")
    if util is not None and util >= BUSY_UTILIZATION_PCT:
        return Check(name, FAIL, value, "another process is running kernels: its work is timed "
                     "with yours; stop it or use another GPU (CUDA_VISIBLE_DEVICES)")
    return Check(name, WARN, value, "other processes hold GPU memory and may run kernels while "
                 "you measure: stop them for stable numbers")


def check_pcie(g: GpuReadings) -> Check:
    name = f"gpu{g.index}.pcie"
    if g.pcie_width is None or g.pcie_max_width is None:
        return Check(name, SKIP, "PCIe link not reported")
    value = f"x{g.pcie_width} of x{g.pcie_max_width}, gen {g.pcie_gen or '?'} of {g.pcie_max_gen or '?'}"
    if g.pcie_width < g.pcie_max_width:
        return Check(name, WARN, value, "the link trained narrower than it can: host<->device "
                     "copies are slower; reseat the card or check the slot")
    if g.pcie_gen and g.pcie_max_gen and g.pcie_gen < g.pcie_max_gen:
        return Check(name, OK, value + " (the gen drops at idle to save power)")
    return Check(name, OK, value)


def gpu_checks(g: GpuReadings) -> list[Check]:
    return [check_clocks(g), check_persistence(g), check_throttle(g), check_power(g),
            check_ecc(g), check_mig(g), check_gpu_processes(g), check_pcie(g)]


def skipped_gpu_checks(reason: str) -> list[Check]:
    return [Check(f"gpu.{c}", SKIP, reason) for c in GPU_CHECKS]


def check_tool(t: ToolReading, has_driver: bool, profiling_admin_only: bool | None, is_root: bool) -> Check:
    name = f"tools.{t.name}"
    if t.path is None:
        if not has_driver:
            return Check(name, SKIP, "not on PATH; no NVIDIA driver to profile")
        return Check(name, WARN, "not on PATH", f"install Nsight {_suite(t.name)} or add its "
                     "directory (e.g. /usr/local/cuda/bin) to PATH")
    if t.version is None:
        return Check(name, WARN, f"{t.path}: {t.error or 'no version'}",
                     f"`{t.name} --version` does not answer: reinstall it or fix PATH")
    value = f"{t.version} ({t.path})"
    if not has_driver:
        return Check(name, SKIP, value + "; no NVIDIA driver to profile")
    if t.name == "ncu" and profiling_admin_only and not is_root:
        return Check(name, WARN, value + "; counters admin-only", "the driver lets only root read GPU "
                     "counters (ERR_NVGPUCTRPERM): run ncu with sudo, or load nvidia with "
                     "NVreg_RestrictProfilingToAdminUsers=0")
    return Check(name, OK, value)


def _suite(tool: str) -> str:
    return {"ncu": "Compute", "nsys": "Systems"}.get(tool, "tools")
