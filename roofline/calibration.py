"""Stored calibrations: the measured ceilings of one device, one JSON file per fingerprint.

Where: `$PERFKIT_HOME/calibration/<fingerprint>.json` (PERFKIT_HOME defaults to
~/.cache/perfkit). `perfkit calibrate` writes it atomically; `perfkit profile` and
`perfkit roofline` reuse it until the next calibration. `load_for(info)` returns the one
matching the device, flagged stale when it is old or the driver / clocks / torch changed since.
No torch here.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from perfkit.core.atomic import write_json_atomic
from perfkit.core.errors import StoreError, shorten
from perfkit.core.json_file import load_json
from perfkit.roofline.device_info import DeviceInfo

SCHEMA_VERSION = 1
MAX_AGE_DAYS = 30.0
KIND_MEMORY = "memory"
KIND_COMPUTE = "compute"
COMPARED_CLOCKS = ("sm_max", "mem_max", "sm_app", "mem_app", "cpu_max")
UNSTABLE = "unstable"  # settings key: ceiling name -> why its rounds are not trusted


@dataclass(frozen=True)
class SweepPoint:
    """One size of a ceiling's sweep: what ran and what it reached."""

    size: int  # bytes per buffer (copies) or the GEMM edge n (n x n x n)
    time_s: float  # seconds per operation: the 10th percentile of the samples (a ceiling)
    value: float  # bytes/s or flop/s at time_s
    rel_ci: float  # half-width of the median's 95% CI, relative
    n: int  # samples
    median_s: float = math.nan  # the median, for comparison
    variant: str = ""  # which implementation reached it (e.g. "memcpy" or "torch.copy_")
    shape: tuple[int, int, int] | None = None  # a GEMM's (M, N, K) when not n x n x n (shape search)

    def to_dict(self) -> dict[str, Any]:
        out = {"size": self.size, "time_s": self.time_s, "value": self.value, "rel_ci": self.rel_ci, "n": self.n,
               "median_s": self.median_s, "variant": self.variant}
        if self.shape is not None:
            out["shape"] = list(self.shape)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepPoint:
        shape = data.get("shape")
        return cls(int(data["size"]), float(data["time_s"]), float(data["value"]), float(data["rel_ci"]), int(data["n"]),
                   float(data.get("median_s", math.nan)), str(data.get("variant", "")),
                   (int(shape[0]), int(shape[1]), int(shape[2])) if shape else None)

    @property
    def mnk(self) -> tuple[int, int, int]:
        """The GEMM's (M, N, K): the searched shape, else n x n x n."""
        return self.shape or (self.size, self.size, self.size)


@dataclass(frozen=True)
class MeasuredCeiling:
    """One measured ceiling: a memory level's bandwidth (bytes/s) or a dtype's peak (flop/s)."""

    name: str  # "dram", "dram_read", "l2", "gemm.bf16", "gemm.fp8_fast_accum"
    kind: str  # memory | compute
    value: float  # bytes_per_s (memory) or flop_per_s (compute)
    method: str
    level: str | None = None
    dtype: str | None = None
    sweep: tuple[SweepPoint, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "value": self.value,
            "unit": "bytes_per_s" if self.kind == KIND_MEMORY else "flop_per_s",
            "method": self.method,
            "level": self.level,
            "dtype": self.dtype,
            "sweep": [p.to_dict() for p in self.sweep],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MeasuredCeiling:
        return cls(
            name=str(data["name"]),
            kind=str(data["kind"]),
            value=float(data["value"]),
            method=str(data.get("method", "")),
            level=data.get("level"),
            dtype=data.get("dtype"),
            sweep=tuple(SweepPoint.from_dict(p) for p in data.get("sweep", [])),
        )


@dataclass(frozen=True)
class Calibration:
    device: DeviceInfo
    created: str  # ISO 8601 UTC
    ceilings: tuple[MeasuredCeiling, ...]
    duration_s: float = 0.0
    skipped: Mapping[str, str] = field(default_factory=dict)  # what was not measured, and why
    settings: Mapping[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
    path: str | None = None  # where it was loaded from (not stored)
    stale_flags: tuple[str, ...] = ()  # filled by load_for / check (not stored)

    @property
    def fingerprint(self) -> str:
        return self.device.fingerprint

    @property
    def bandwidth_bytes_per_s(self) -> dict[str, float]:
        return {c.level: c.value for c in self.ceilings if c.kind == KIND_MEMORY and c.level}

    @property
    def peak_flop_per_s(self) -> dict[str, float]:
        return {c.dtype: c.value for c in self.ceilings if c.kind == KIND_COMPUTE and c.dtype}

    def ceiling(self, name: str) -> MeasuredCeiling | None:
        return next((c for c in self.ceilings if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "fingerprint": self.fingerprint,
            "created": self.created,
            "duration_s": self.duration_s,
            "device": self.device.to_dict(),
            "settings": dict(self.settings),
            "skipped": dict(self.skipped),
            "ceilings": [c.to_dict() for c in self.ceilings],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise StoreError(
                f"calibration has schema_version {version!r}; this perfkit reads {SCHEMA_VERSION}; "
                "run `perfkit calibrate` again"
            )
        return cls(
            device=DeviceInfo.from_dict(data["device"]),
            created=str(data["created"]),
            ceilings=tuple(MeasuredCeiling.from_dict(c) for c in data.get("ceilings", [])),
            duration_s=float(data.get("duration_s", 0.0)),
            skipped={str(k): str(v) for k, v in (data.get("skipped") or {}).items()},
            settings=dict(data.get("settings") or {}),
        )


def perfkit_home() -> Path:
    return Path(os.environ.get("PERFKIT_HOME") or Path.home() / ".cache" / "perfkit")


def calibration_dir() -> Path:
    return perfkit_home() / "calibration"


def path_for(info: DeviceInfo, directory: Path | None = None) -> Path:
    return (directory or calibration_dir()) / f"{info.fingerprint}.json"


def check_writable(directory: Path | None = None) -> Path:
    """The calibration folder, made if missing and probed with a file: `perfkit calibrate` calls
    it before measuring, so an unusable PERFKIT_HOME is one line, not a lost measurement."""
    folder = directory or calibration_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".perfkit-probe.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise StoreError(f"{shorten(folder, 160)}: cannot store a calibration there ({exc.strerror or exc}); set "
                         "PERFKIT_HOME to a folder you can write to, or pass --no-save") from None
    return folder


def save(cal: Calibration, directory: Path | None = None) -> Path:
    """Write the calibration for its device fingerprint atomically (replaces the previous one)."""
    path = path_for(cal.device, directory)
    write_json_atomic(path, cal.to_dict())
    return path


def load_file(path: str | Path) -> Calibration:
    p = Path(path)
    try:  # not UTF-8, nested too deep, a FIFO: one located line (core/json_file)
        data = load_json(p, "run `perfkit calibrate` again", StoreError)
    except FileNotFoundError as exc:
        raise StoreError(f"{p}: no such calibration file; run `perfkit calibrate`") from exc
    if not isinstance(data, dict) or "device" not in data:
        raise StoreError(f"{p}: not a perfkit calibration (no 'device'); run `perfkit calibrate` again")
    try:
        return replace(Calibration.from_dict(data), path=str(p))
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"{p}: malformed calibration ({exc!r}); run `perfkit calibrate` again") from exc


def list_calibrations(directory: Path | None = None) -> list[Calibration]:
    """Every readable calibration in the store, newest first (unreadable files are skipped)."""
    folder = directory or calibration_dir()
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            out.append(load_file(path))
        except StoreError:
            continue
    return sorted(out, key=lambda c: c.created, reverse=True)


def load_for(info: DeviceInfo, directory: Path | None = None, now: datetime | None = None) -> Calibration | None:
    """The stored calibration of this device (same fingerprint), with staleness flags; or None."""
    path = path_for(info, directory)
    if not path.exists():
        return None
    cal = load_file(path)
    return replace(cal, stale_flags=staleness(cal, info, now))


def staleness(cal: Calibration, info: DeviceInfo, now: datetime | None = None, max_age_days: float = MAX_AGE_DAYS) -> tuple[str, ...]:
    """Why `cal` may not be the roof of `info`: rounds that disagreed, foreign device, age,
    driver / clocks / torch changed."""
    flags: list[str] = [f"unstable: {name}: {why}" for name, why in (cal.settings.get(UNSTABLE) or {}).items()]
    then = cal.device
    if then.fingerprint != info.fingerprint:
        flags.append(f"foreign: calibrated on {then.name} ({then.fingerprint}), not {info.name} ({info.fingerprint})")
    age_days = _age_days(cal.created, now)
    if age_days is not None and age_days > max_age_days:
        flags.append(f"old: {age_days:.0f} days (> {max_age_days:.0f}); run `perfkit calibrate`")
    if then.driver and info.driver and then.driver != info.driver:
        flags.append(f"driver changed: {then.driver} -> {info.driver}")
    for key in COMPARED_CLOCKS:
        a, b = then.clocks_mhz.get(key), info.clocks_mhz.get(key)
        if a is not None and b is not None and abs(a - b) > 0.5:
            flags.append(f"clocks changed: {key} {a:.0f} -> {b:.0f} MHz")
    if then.torch and info.torch and then.torch != info.torch:
        flags.append(f"torch changed: {then.torch} -> {info.torch}")
    return tuple(flags)


def _age_days(created: str, now: datetime | None) -> float | None:
    try:
        then = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    current = now or datetime.now(timezone.utc)
    return (current - then).total_seconds() / 86400.0


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
