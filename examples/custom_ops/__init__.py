"""Custom-entry examples: plain PyTorch functions profiled as `kind: custom` workloads."""
