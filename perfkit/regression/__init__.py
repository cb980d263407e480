"""Regression statistics: the two-sample gate and change-point detection (pure functions)."""
