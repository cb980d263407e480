"""ERT-style microbenchmarks that measure a device's ceilings (`perfkit calibrate`).

The only roofline module that imports torch, always inside functions: `detect` (the device),
`bench` (one copy / one GEMM timed with the shared timer), `run` (the sweeps). `sweep` is pure.
"""
