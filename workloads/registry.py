"""The workload kinds model.yaml knows: `kind:` -> spec class (imported lazily, no torch)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perfkit.workloads.base import WorkloadSpec

KINDS: dict[str, str] = {
    "gemm": "perfkit.workloads.gemm.spec:GemmSpec",
    "custom": "perfkit.workloads.custom.spec:CustomSpec",
    "attention": "perfkit.workloads.attention.spec:AttentionSpec",
    "kernels": "perfkit.workloads.kernels.spec:KernelsSpec",
    "moe": "perfkit.workloads.moe.spec:MoESpec",
    "decode": "perfkit.workloads.decode.spec:DecodeSpec",
    "collectives": "perfkit.workloads.collectives.spec:CollectivesSpec",
    "serving": "perfkit.workloads.serving.spec:ServingSpec",
}


def spec_class(kind: str) -> type[WorkloadSpec]:
    module_name, _, attr = KINDS[kind].partition(":")
    return getattr(importlib.import_module(module_name), attr)  # type: ignore[no-any-return]


def runner_for(spec: WorkloadSpec):  # type: ignore[no-untyped-def]
    module_name, _, attr = spec.runner.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def preflight(spec: WorkloadSpec) -> None:
    """The kind's check of the inputs its spec names (files), before the sweep starts."""
    if spec.preflight:
        module_name, _, attr = spec.preflight.partition(":")
        getattr(importlib.import_module(module_name), attr)(spec)
