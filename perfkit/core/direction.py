"""Which way is better for a metric: the direction every stored and compared metric carries."""

from __future__ import annotations

LOWER = "lower"  # lower is better (time_s, latency)
HIGHER = "higher"  # higher is better (flop_per_s, tok_per_s)
DIRECTIONS = (LOWER, HIGHER)
