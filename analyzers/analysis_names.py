"""The names of the standard analyses, in their order: the registry's keys
(perfkit.analyzers.suite.ANALYSES is built from this tuple and refuses to differ from it).

Kept apart from the suite so that a command line can list them (`perfkit analyze --only`'s
help) without importing pandas and the analyses."""

from __future__ import annotations

ANALYSIS_NAMES = ("kernels", "categories", "temporal", "idle", "launch", "ranges", "ops", "overlap", "skew", "collectives", "hlo_ops")
