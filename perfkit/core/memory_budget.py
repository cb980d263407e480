"""The inference memory budget of one point: where the device's bytes go, and how many KV-cache
tokens fit at a given `gpu_memory_utilization` (the question vLLM users tune by trial).

    from perfkit.core.memory_budget import MemoryBudget, make_budget, kv_what_if
    budget = make_budget(resident, pass_facts, device="cuda:0", utilization=0.9)
    fit = kv_what_if(budget, 0.95)                  # the same budget at another utilization

Every term is in bytes with where it came from (`source`: measured / estimated / not measured)
and a note saying how; its one description (label, definition) is `TERMS[key]`, read by every
view (terminal, Markdown, HTML, JSON, dashboard). The measured terms partition the device memory
at the peak of the memory pass, so nothing is counted twice:

    weights + KV cache + other allocated + activation peak          = peak allocated
    + allocator cache (reserved - allocated at the peak)              = peak reserved (CUDA)
    + non-PyTorch (NVML used - torch reserved: CUDA context, NCCL, ...) = device memory in use

CUDA-graph private pools are reserved memory like any other; the budget shows them as "of which"
(their bytes are already inside the terms above: counting them again is vllm-project/vllm#57936).

What-if (vLLM's `gpu_memory_utilization`: the fraction of the device's total memory the engine
may use): KV budget = utilization x total - (peak reserved - KV cache) - non-PyTorch, i.e.
everything the engine needs at its peak except the KV cache (weights, activation peak, graph
pools, the allocator's cache); tokens that fit = KV budget // KV bytes per token; sequences =
tokens // tokens per sequence (the point's prompt_len + decode_steps). Where peak reserved is not
measured (CPU) peak allocated stands in for it; where non-PyTorch memory is not measured it counts 0
and the what-if says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from perfkit.core.bounded import Count, NonNegative

MEASURED = "measured"
ESTIMATED = "estimated"
NOT_MEASURED = "not measured"
SOURCES = (MEASURED, ESTIMATED, NOT_MEASURED)
DEFAULT_UTILIZATION = 0.9  # vLLM's default gpu_memory_utilization


@dataclass(frozen=True)
class TermDef:
    label: str
    definition: str


TERMS: dict[str, TermDef] = {
    "weights_bytes": TermDef("weights", "bytes of the model's parameters (distinct storages)"),
    "kv_cache_bytes": TermDef("KV cache", "bytes of the KV-cache tensors the point allocated"),
    "kv_cache_estimate_bytes": TermDef(
        "KV cache (analytic)", "2 x layers x kv heads x head dim x bytes per element x batch x cache "
        "length: the decode workload's own estimate, beside the measured one"),
    "other_allocated_bytes": TermDef(
        "other allocated", "allocated before the memory pass minus weights and KV cache: inputs, RoPE "
        "tables, static buffers, anything earlier points left"),
    "activation_peak_bytes": TermDef(
        "activation peak", "peak allocated during the memory pass minus what was allocated before it: "
        "the working set of the timed call (activations, temporaries, logits)"),
    "allocator_cache_bytes": TermDef(
        "allocator cache", "reserved minus allocated at the peak: memory the caching allocator holds "
        "but no tensor uses (fragmentation, freed blocks)"),
    "non_torch_bytes": TermDef(
        "non-PyTorch", "device memory in use (NVML) minus torch's reserved: CUDA context, NCCL and "
        "library workspaces outside the caching allocator"),
    "graph_pool_bytes": TermDef(
        "of which CUDA-graph pools", "bytes of the snapshot's segments in a private pool "
        "(segment_pool_id not (0, 0)): CUDA graphs' memory, already inside the terms above"),
    "device_total_bytes": TermDef("device total", "the device's total memory (host RAM on a CPU run)"),
}
# the terms that add up to the device memory in use, in order
PARTITION = ("weights_bytes", "kv_cache_bytes", "other_allocated_bytes", "activation_peak_bytes",
             "allocator_cache_bytes", "non_torch_bytes")


@dataclass(frozen=True)
class BudgetTerm:
    key: str  # a key of TERMS
    value_bytes: int | None  # None when not measured (never a made-up 0)
    source: str  # measured | estimated | not measured
    note: str = ""  # how it was measured, or why it was not


@dataclass(frozen=True)
class KvWhatIf:
    """How much KV cache fits at `utilization` of the device's total memory."""

    utilization: NonNegative
    kv_budget_bytes: int  # utilization x total - non-KV need (may be negative: nothing fits)
    tokens: Count  # KV-cache tokens (all sequences together) that fit
    sequences: Count  # sequences of tokens_per_sequence that fit, >= 0
    note: str = ""  # what the what-if could not count


@dataclass(frozen=True)
class MemoryBudget:
    device: str
    terms: tuple[BudgetTerm, ...]
    kv_bytes_per_token: Count  # KV bytes one token of one sequence takes (all layers)
    tokens_per_sequence: Count  # the point's cache length (prompt_len + decode_steps)
    batch: Count
    what_if: KvWhatIf | None = None  # None: the device's total memory is unknown

    def term(self, key: str) -> BudgetTerm | None:
        return next((t for t in self.terms if t.key == key), None)

    def value(self, key: str) -> int | None:
        t = self.term(key)
        return t.value_bytes if t is not None else None

    @property
    def accounted_bytes(self) -> int:
        """The sum of the measured partition terms (device memory in use where all are measured)."""
        return sum(self.value(k) or 0 for k in PARTITION)


@dataclass(frozen=True)
class ResidentMemory:
    """What a workload knows of its own memory (workloads measure it; decode only for now)."""

    weights_bytes: int
    kv_cache_bytes: int
    kv_cache_estimate_bytes: int
    kv_bytes_per_token: int
    tokens_per_sequence: int
    batch: int


@dataclass(frozen=True)
class PassFacts:
    """What the memory pass measured (perfkit.pipeline.memory_pass). None: not measured there."""

    allocated_before_bytes: int
    peak_allocated_bytes: int
    peak_reserved_bytes: int | None = None
    device_used_bytes: int | None = None  # NVML used (whole device) right after the pass
    reserved_now_bytes: int | None = None  # torch reserved when device_used_bytes was read
    graph_pool_bytes: int | None = None
    device_total_bytes: int | None = None
    before_how: str = ""  # how allocated_before_bytes was measured
    peak_how: str = ""  # how peak_allocated_bytes was measured
    used_how: str = ""  # where device_used_bytes came from (NVML / cudaMemGetInfo)
    not_measured: str = ""  # why the CUDA-only terms are not measured (CPU)


def _term(key: str, value: int | None, how: str, missing: str) -> BudgetTerm:
    if value is None:
        return BudgetTerm(key, None, NOT_MEASURED, missing)
    return BudgetTerm(key, int(value), MEASURED, how)


def make_budget(resident: ResidentMemory, facts: PassFacts, device: str,
                utilization: float = DEFAULT_UTILIZATION) -> MemoryBudget:
    """The budget of one point from the workload's resident memory and the pass's facts."""
    other = facts.allocated_before_bytes - resident.weights_bytes - resident.kv_cache_bytes
    cache = None if facts.peak_reserved_bytes is None else facts.peak_reserved_bytes - facts.peak_allocated_bytes
    non_torch = None
    if facts.device_used_bytes is not None and facts.reserved_now_bytes is not None:
        non_torch = max(0, facts.device_used_bytes - facts.reserved_now_bytes)
    why = facts.not_measured or "not measured on this device"
    terms = (
        BudgetTerm("weights_bytes", resident.weights_bytes, MEASURED, "parameter storages"),
        BudgetTerm("kv_cache_bytes", resident.kv_cache_bytes, MEASURED, "KV-cache tensors"),
        BudgetTerm("kv_cache_estimate_bytes", resident.kv_cache_estimate_bytes, ESTIMATED, "analytic"),
        _term("other_allocated_bytes", other, f"{facts.before_how} - weights - KV cache", why),
        _term("activation_peak_bytes", facts.peak_allocated_bytes - facts.allocated_before_bytes,
              facts.peak_how, why),
        _term("allocator_cache_bytes", cache, "torch.cuda.memory_stats", why),
        _term("non_torch_bytes", non_torch, facts.used_how, why),
        _term("graph_pool_bytes", facts.graph_pool_bytes, "memory snapshot segments", why),
        _term("device_total_bytes", facts.device_total_bytes, facts.used_how or "host RAM", why),
    )
    budget = MemoryBudget(device, terms, resident.kv_bytes_per_token, resident.tokens_per_sequence, resident.batch)
    return replace(budget, what_if=kv_what_if(budget, utilization))


def kv_what_if(budget: MemoryBudget, utilization: float) -> KvWhatIf | None:
    """The KV cache that fits at `utilization` (0 < u <= 1) of the device's total memory; None
    when the budget has no device total."""
    total = budget.value("device_total_bytes")
    if total is None:
        return None
    if not 0.0 < utilization <= 1.0:
        raise ValueError(f"gpu_memory_utilization {utilization} is not in (0, 1]")
    notes = []
    kv = budget.value("kv_cache_bytes") or 0
    peak = sum(budget.value(k) or 0 for k in PARTITION[:4])  # peak allocated
    cache = budget.value("allocator_cache_bytes")
    if cache is None:
        notes.append("allocator cache not measured (CPU): peak allocated stands in for peak reserved")
    non_torch = budget.value("non_torch_bytes")
    if non_torch is None:
        notes.append("non-PyTorch memory not measured: counted as 0")
    need = peak + (cache or 0) - kv + (non_torch or 0)
    kv_budget = int(utilization * total) - need
    per_token = max(budget.kv_bytes_per_token, 1)
    tokens = max(kv_budget, 0) // per_token
    return KvWhatIf(utilization, kv_budget, tokens, tokens // max(budget.tokens_per_sequence, 1), "; ".join(notes))
