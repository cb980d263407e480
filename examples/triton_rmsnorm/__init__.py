"""A fused RMSNorm written in Triton, profiled by perfkit beside torch's own op.

    kernel.py     the @triton.jit kernel and its launcher `rmsnorm(x, weight, eps, ...)`
    triton_op.py  perfkit factory for the Triton kernel (tune axes: BLOCK_SIZE, num_warps, num_stages)
    torch_op.py   perfkit factory for torch.nn.functional.rms_norm (the baseline)
    reference.py  the float64 reference both are compared with

Run from the repository root: `perfkit profile examples/triton-rmsnorm.yaml`.
"""
