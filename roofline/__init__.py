"""Roofline: datasheet and measured ceilings of a device, and every point placed on its roof.

devices (datasheet table) · device_info · calibration (stored measured ceilings) · ceilings
(roofs of a device; `for_device`) · model (roofline math) · place (placement table) · figure
(plotly) · ncu / ncu_csv / ncu_kernels (Nsight Compute) · calibrate/ (the microbenchmarks; torch).
"""
