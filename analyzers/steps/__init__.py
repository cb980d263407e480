"""Steps of a trace: torch.profiler's ProfilerStep windows (profiler_steps.py, the step every GPU
op belongs to) and engine steps of an inference server (engine.py: one forward each, from the
ranges vLLM, SGLang, TensorRT-LLM and `perfkit serve` open, else from gaps in the op stream),
with their per-step-type time tables (samples.py, table.py)."""
