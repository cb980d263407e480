"""`kind: serving` — load-test an OpenAI-compatible server (docs/serving.md). No torch here.

    - kind: serving
      name: chat
      endpoint: http://127.0.0.1:8000     # the server (not part of the run's identity, see below)
      model: my-model                     # the model name sent in each request
      api: completions                    # completions | chat
      load: {concurrency: [1, 4, 16]}     # or {rate: [1, 4], burstiness: 1.0, max_concurrency: 64}
                                          # or {stages: [{rate: 2, duration_s: 30}, ...]} or {replay: FILE}
      requests: 64                        # per stage; or duration_s: 60
      warmup: 4                           # requests before each stage, not recorded (default: one
                                          # per connection the stage keeps open, sent at once)
      prompts: {input_len: 128, output_len: 64}   # or {dist: uniform, min, max}; source: sharegpt | shared_prefix
      sessions: {count: 16, turns: 4, think_time_s: 2}   # multi-turn chats, load.concurrency at once
                                          # (think_time_s: {dist: exponential, mean: 2}; or file: FILE)
      slo: {ttft_s: 0.5, tpot_s: 0.05, quantile: 0.99}
      price: {usd_per_gpu_hour: 2.99, gpus: 1}    # or {file: prices.yaml, name: h100-ondemand}
      target_interactivity: [20, 50]      # tok/s per user: cost along the measured front
      capacity: {over: concurrency}       # or: search the load for the highest one the SLO holds at
      client: {read_timeout_s: 60, usage: true}
      metrics_url: auto                   # auto (ENDPOINT/metrics) | none | a URL
      gpu_metrics: {url: http://gpu-host:9400/metrics, gpus: ["0", "1"]}   # a DCGM exporter: energy
      profile: {server_trace: {steps: 16, server: auto, trace_dir: /shared/traces}}
      lora: {adapters: [sql, python], weights: [3, 1], format: auto}   # an adapter per request
                                          # (or [sql, python], or {sql: 3, python: 1})
                                          # a profiling window of the server inside each stage
                                          # (or seconds: 2); traces copied into the run
      server: {command: [vllm, serve, M, --port, "{port}"], grid: {max_num_seqs: [8, 16]}}
                                          # perfkit starts the server per configuration
                                          # (`perfkit serve-sweep`; launch/spec.py; no endpoint then)

Each stage (load level) is a point: `serving/chat/concurrency=4`, `serving/chat/rate=2`. The
endpoint is kept in each point's metrics, not in the spec's hash: a run against yesterday's
server on another port is still a run of the same spec, so it is the baseline. So is `profile`:
a profiled run's gated numbers leave the window's requests out, so it compares with a plain one.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from perfkit.core.cli_option import CliOption, comma_numbers
from perfkit.core.errors import SpecError
from perfkit.workloads.base import RECORD, FrozenModel, WorkloadSpec
from perfkit.workloads.serving.client.plan_size import plan_problem
from perfkit.workloads.serving.client.url import parse_endpoint
from perfkit.workloads.serving.launch.spec import ServerSpec
from perfkit.workloads.serving.slo_presets import PREFIX as PRESET_PREFIX
from perfkit.workloads.serving.slo_presets import PRESETS, preset_slo

MAX_STAGES = 1000


class LengthSpec(FrozenModel):
    dist: Literal["fixed", "uniform", "normal"] = "fixed"
    value: int | None = Field(None, ge=1, le=10_000_000)
    min: int | None = Field(None, ge=1, le=10_000_000)
    max: int | None = Field(None, ge=1, le=10_000_000)
    mean: float | None = Field(None, gt=0, le=10_000_000)
    std: float | None = Field(None, ge=0, le=10_000_000)

    @model_validator(mode="before")
    @classmethod
    def _number(cls, v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool):
            return {"dist": "fixed", "value": v}
        return v

    @model_validator(mode="after")
    def _complete(self) -> LengthSpec:
        need = {"fixed": ("value",), "uniform": ("min", "max"), "normal": ("mean", "std")}[self.dist]
        missing = [k for k in need if getattr(self, k) is None]
        if missing:
            raise ValueError(f"a {self.dist} length needs {' and '.join(need)}; e.g. "
                             + {"fixed": "128", "uniform": "{dist: uniform, min: 64, max: 256}",
                                "normal": "{dist: normal, mean: 128, std: 32}"}[self.dist])
        if self.dist == "uniform" and self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}; swap them")
        return self


class PromptSpec(FrozenModel):
    source: Literal["synthetic", "sharegpt", "shared_prefix"] = "synthetic"
    input_len: Annotated[LengthSpec, CliOption(
        "--input-len", type=int, help="prompt tokens (synthetic; default 128)")] = LengthSpec(value=128)
    output_len: Annotated[LengthSpec | None, CliOption(  # default 128; sharegpt: from each answer
        "--output-len", type=int, help="output tokens asked for (default 128)")] = None
    path: Annotated[str | None, CliOption(  # sharegpt file
        "--dataset", metavar="FILE", group="prompts", also=(("source", "sharegpt"),),
        help="prompts from a ShareGPT-format JSON / JSON-lines file")] = None
    prefix_len: Annotated[int, CliOption(  # shared_prefix
        "--shared-prefix", metavar="TOKENS", group="prompts", also=(("source", "shared_prefix"),),
        help="prompts share a prefix this long")] = Field(512, ge=1, le=10_000_000)
    groups: Annotated[int, CliOption(  # shared_prefix: distinct prefixes
        "--groups", help="distinct shared prefixes (default 4)")] = Field(4, ge=1, le=1_000_000)
    token_ids: Annotated[bool, CliOption(  # send token ids instead of words (completions only)
        "--token-ids", help="send token-id prompts (completions)")] = False
    vocab_size: Annotated[int, CliOption(  # token ids are drawn below this
        "--vocab-size", help="token ids are drawn below this (default 32000)")] = Field(32000, ge=2, le=10_000_000)

    @model_validator(mode="after")
    def _path(self) -> PromptSpec:
        if self.source == "sharegpt" and not self.path:
            raise ValueError("source sharegpt needs path: FILE (a ShareGPT JSON or JSON-lines file)")
        return self


MAX_THINK_S = 86_400.0


class ThinkSpec(FrozenModel):
    """The pause between an answer and a session's next turn: seconds, or a distribution."""

    dist: Literal["fixed", "exponential", "uniform"] = "fixed"
    value: float | None = Field(None, ge=0, le=MAX_THINK_S)  # fixed
    mean: float | None = Field(None, ge=0, le=MAX_THINK_S)  # exponential
    min: float | None = Field(None, ge=0, le=MAX_THINK_S)  # uniform
    max: float | None = Field(None, ge=0, le=MAX_THINK_S)

    @model_validator(mode="before")
    @classmethod
    def _number(cls, v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return {"dist": "fixed", "value": v}
        return v

    @model_validator(mode="after")
    def _complete(self) -> ThinkSpec:
        need = {"fixed": ("value",), "exponential": ("mean",), "uniform": ("min", "max")}[self.dist]
        if any(getattr(self, k) is None for k in need):
            raise ValueError(f"a {self.dist} think time needs {' and '.join(need)}; e.g. 2, "
                             "{dist: exponential, mean: 2} or {dist: uniform, min: 1, max: 3}")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"think time min {self.min:g} is above max {self.max:g}; swap them")
        return self


def think_time(text: str, flag: str) -> dict[str, Any]:
    """`--think-time-s 2` (fixed), `exp:2` (exponential, mean 2 s) or `uniform:1:3`."""
    kind, _, rest = text.strip().partition(":")
    try:
        if not rest:
            return {"dist": "fixed", "value": float(kind)}
        if kind == "exp":
            return {"dist": "exponential", "mean": float(rest)}
        if kind == "uniform":
            low, high = rest.split(":")
            return {"dist": "uniform", "min": float(low), "max": float(high)}
    except ValueError:
        pass
    raise SpecError(f"{flag} {text[:40]!r}: give seconds (2), exp:MEAN (exponential) or uniform:MIN:MAX")


class SessionSpec(FrozenModel):
    """Multi-turn sessions (docs/serving.md "Multi-turn sessions"): `count` synthetic ones of
    `turns` turns, or the sessions of a file; load.concurrency of them run at once."""

    count: Annotated[int | None, CliOption(
        "--sessions", metavar="N", group="sessions",
        help="multi-turn sessions per stage, --concurrency of them at once (each turn sends the history)")] = Field(
        None, ge=1, le=1_000_000)
    turns: Annotated[int, CliOption(
        "--turns", help="turns per session (default 4)")] = Field(4, ge=1, le=10_000)
    think_time_s: Annotated[ThinkSpec, CliOption(
        "--think-time-s", metavar="S|exp:MEAN|uniform:MIN:MAX", parse=think_time,
        help="pause between an answer and the session's next turn (default 0)")] = ThinkSpec(value=0.0)
    file: Annotated[str | None, CliOption(
        "--session-file", metavar="FILE", group="sessions",
        help="sessions replayed from a JSON-lines file (docs/serving.md)")] = Field(None, min_length=1, max_length=4000)

    @model_validator(mode="after")
    def _one(self) -> SessionSpec:
        if (self.count is None) == (self.file is None):
            raise ValueError("sessions need count (synthetic) or file (a session file), one of the two")
        if self.count is not None and self.count * self.turns > 10_000_000:
            raise ValueError(f"{self.count} sessions x {self.turns} turns is over 10000000 requests; lower them")
        return self


class StageSpec(FrozenModel):
    concurrency: int | None = Field(None, ge=1, le=100_000)
    rate: float | None = Field(None, gt=0)
    duration_s: float | None = Field(None, gt=0, le=7 * 86400)
    requests: int | None = Field(None, ge=1, le=10_000_000)

    @model_validator(mode="after")
    def _one(self) -> StageSpec:
        if (self.concurrency is None) == (self.rate is None):
            raise ValueError("a stage has exactly one of concurrency or rate")
        return self


class LoadSpec(FrozenModel):
    concurrency: Annotated[tuple[int, ...] | None, CliOption(
        "--concurrency", metavar="N[,N...]", parse=comma_numbers(int), group="load", default="1",
        help="closed loop: requests in flight per stage")] = None
    rate: Annotated[tuple[float, ...] | None, CliOption(  # requests/s; .inf: all at once
        "--rate", metavar="R[,R...]", parse=comma_numbers(float), group="load",
        help="open loop: requests per second per stage (inf: all at once)")] = None
    burstiness: Annotated[float, CliOption(  # gamma shape of the gaps (1: Poisson)
        "--burstiness", help="gamma shape of the gaps (1: Poisson)")] = Field(1.0, gt=0, le=1000)
    max_concurrency: Annotated[int | None, CliOption(  # open loop cap
        "--max-concurrency", help="open loop: at most this many in flight")] = Field(None, ge=1, le=100_000)
    stages: tuple[StageSpec, ...] | None = None
    replay: Annotated[str | None, CliOption(  # file of arrival times
        "--replay", metavar="FILE", group="load", help="open loop at the arrival times of FILE")] = None
    replay_block_size: Annotated[int, CliOption(  # prompt tokens per hash id of a Mooncake trace
        "--replay-block-size", help="prompt tokens per hash id in a Mooncake trace (default 512)")] = Field(
        512, ge=1, le=1_000_000)
    replay_speed: Annotated[float, CliOption(  # arrival times of --replay divided by this
        "--replay-speed", help="replay this many times faster (arrival times / X; default 1)")] = Field(
        1.0, gt=0, le=1_000_000)

    @field_validator("concurrency", "rate", mode="before")
    @classmethod
    def _listed(cls, v: Any) -> Any:
        return [v] if isinstance(v, (int, float)) and not isinstance(v, bool) else v

    @field_validator("concurrency")
    @classmethod
    def _conc(cls, v: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if v is not None and (not v or any(c < 1 or c > 100_000 for c in v)):
            raise ValueError("concurrency values must be whole numbers from 1 to 100000")
        return v

    @field_validator("rate")
    @classmethod
    def _rate(cls, v: tuple[float, ...] | None) -> tuple[float, ...] | None:
        if v is not None and (not v or any(not r > 0 or math.isnan(r) for r in v)):
            raise ValueError("rates must be requests per second above 0 (.inf: all at once)")
        return v

    @model_validator(mode="after")
    def _one(self) -> LoadSpec:
        given = [k for k in ("concurrency", "rate", "stages", "replay") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("load needs exactly one of concurrency, rate, stages or replay; "
                             "e.g. {concurrency: [1, 4, 16]}")
        if self.stages is not None and not 0 < len(self.stages) <= MAX_STAGES:
            raise ValueError(f"stages must list 1 to {MAX_STAGES} stages")
        return self


class SloSpec(FrozenModel):
    """Limits in seconds at `quantile`; in a spec also a preset name: `slo: mlperf:llama2-70b-server`."""

    ttft_s: float | None = Field(None, gt=0)
    tpot_s: float | None = Field(None, gt=0)
    e2e_s: float | None = Field(None, gt=0)
    quantile: Annotated[float, CliOption(
        "--slo-quantile", help="quantile the SLO holds at (default 0.99)")] = Field(0.99, gt=0, le=1)

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        if isinstance(data, str):
            preset = preset_slo(data)
            if preset is None:
                raise ValueError(f"no SLO preset '{data[:60]}'; use one of: "
                                 + ", ".join(PRESET_PREFIX + name for name in PRESETS))
            return preset
        return data

    @model_validator(mode="after")
    def _some(self) -> SloSpec:
        if self.ttft_s is None and self.tpot_s is None and self.e2e_s is None:
            raise ValueError("an slo needs at least one of ttft_s, tpot_s, e2e_s")
        return self


class CapacitySpec(FrozenModel):
    """Search the load for the highest one whose SLO holds (docs/serving.md "Capacity at an SLO")."""

    over: Literal["concurrency", "rate"] = "concurrency"
    start: float = Field(1, gt=0, le=1e6)  # the first load tried (requests in flight or per second)
    max_stages: int = Field(8, ge=2, le=64)
    confidence: float = Field(0.99, gt=0.5, lt=1)
    rel_tol: float = Field(0.1, gt=0, le=1)  # the bracket at which the search ends

    @model_validator(mode="after")
    def _whole(self) -> CapacitySpec:
        if self.over == "concurrency" and not float(self.start).is_integer():
            raise ValueError(f"capacity.start {self.start}: a concurrency is a whole number of requests")
        return self


class PriceSpec(FrozenModel):
    usd_per_gpu_hour: Annotated[float | None, CliOption(
        "--price-per-gpu-hour", metavar="USD", group="price")] = Field(None, gt=0, le=1e6)
    gpus: Annotated[int, CliOption("--gpus", help="GPUs behind the server (default 1)")] = Field(1, ge=1, le=1_000_000)
    file: Annotated[str | None, CliOption(  # a prices file (docs/serving.md)
        "--prices", metavar="FILE", group="price", help="a prices file (with --price-name)")] = None
    name: Annotated[str | None, CliOption(  # the entry of that file
        "--price-name", help="the entry of --prices to use")] = None
    source: str = ""  # where the price comes from (shown beside the cost)
    usd_per_kwh: Annotated[float | None, CliOption(  # the energy's price (docs/serving.md, Energy)
        "--price-per-kwh", metavar="USD", help="electricity price: the GPUs' measured energy as USD per 1M "
                                               "output tokens, beside the GPU-hour cost")] = Field(None, gt=0, le=1e6)

    @model_validator(mode="after")
    def _one(self) -> PriceSpec:
        if self.usd_per_gpu_hour is None and self.file is None and self.usd_per_kwh is not None:
            return self  # an energy price only
        if (self.usd_per_gpu_hour is None) == (self.file is None):
            raise ValueError("a price needs usd_per_gpu_hour, or file and name")
        if self.file is not None and not self.name:
            raise ValueError("a prices file needs name: the entry to use")
        return self


def gpu_list(text: str, flag: str) -> list[str]:
    """`0,1` or `GPU-<uuid>,...` (the --gpu-metrics-gpus option)."""
    names = [v.strip() for v in text.split(",") if v.strip()]
    if not names or any(not re.fullmatch(r"[A-Za-z0-9_.:-]{1,100}", n) for n in names):
        raise SpecError(f"{flag} {text[:80]!r}: not a comma-separated list of GPU indices or UUIDs; e.g. 0,1")
    return names


class GpuMetricsSpec(FrozenModel):
    """A DCGM exporter's Prometheus endpoint: the server's GPU energy over each stage."""

    url: Annotated[str, CliOption(
        "--gpu-metrics", metavar="URL", help="a DCGM exporter's /metrics (e.g. http://HOST:9400/metrics): the "
                                             "server's GPU energy per stage")] = Field(
        min_length=1, max_length=2000, pattern=r"^https?://")
    gpus: Annotated[tuple[str, ...], CliOption(
        "--gpu-metrics-gpus", metavar="GPU[,GPU...]", parse=gpu_list,
        help="the exporter's GPUs the server uses, by index (label gpu) or UUID (default: all it serves)")] = ()


class ClientSpec(FrozenModel):
    connect_timeout_s: Annotated[float, CliOption(
        "--connect-timeout-s", help="longest connect (10)")] = Field(10.0, gt=0, le=3600)
    read_timeout_s: Annotated[float, CliOption(
        "--read-timeout-s", help="longest wait for the next chunk (60)")] = Field(60.0, gt=0, le=86400)
    request_timeout_s: Annotated[float, CliOption(
        "--request-timeout-s", help="longest request (600)")] = Field(600.0, gt=0, le=86400)
    usage: Annotated[bool, CliOption("--no-usage", invert=True, help="do not ask for stream_options usage")] = True
    logprobs: Annotated[bool, CliOption("--logprobs", help="ask for logprobs (token counts without usage)")] = False
    tokenizer: Annotated[str | None, CliOption(
        "--tokenizer", metavar="PATH_OR_NAME",
        help="count output tokens from the streamed text with this tokenizer when the server sends no usage, "
             "logprobs or token ids: a folder with tokenizer.json, or a model in the local Hugging Face cache "
             "(never downloaded)")] = Field(None, min_length=1, max_length=4000)
    ignore_eos: Annotated[bool, CliOption(
        "--no-ignore-eos", invert=True, help="do not send ignore_eos: the server may stop early (outputs are "
                                             "then not checked against the length asked)")] = True
    processes: Annotated[int, CliOption(  # client processes a stage's requests are spread over
        "--processes", help="client processes each stage's requests are spread over (default 1; more when a "
                            "stage is client-bound)")] = Field(1, ge=1, le=256)
    follow_redirects: Annotated[bool, CliOption(
        "--follow-redirects", help="follow a redirect to another server (by default such a request fails)")] = False
    api_key_env: Annotated[str | None, CliOption(
        "--api-key-env", metavar="VAR", help="send `Authorization: Bearer $VAR` (the token is never stored or "
                                             "printed)")] = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def slo_seconds(text: str, flag: str) -> dict[str, float]:
    """`ttft=0.5,tpot=0.05,e2e=10` -> {ttft_s: 0.5, ...} (the --slo option); `ttft_p99=2,tpot_p99=0.05`
    also sets the quantile (one for every metric); `mlperf:llama2-70b-server` is a named preset
    (slo_presets.py)."""
    if text.strip().startswith(PRESET_PREFIX):
        preset = preset_slo(text)
        if preset is None:
            raise SpecError(f"{flag}: no SLO preset '{text.strip()[:60]}'; use one of: "
                            + ", ".join(PRESET_PREFIX + name for name in PRESETS))
        return preset
    out: dict[str, float] = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        key, _, pct = key.strip().partition("_p")  # ttft_p99=2: the quantile in the name
        if pct:
            try:
                q = float(pct) / 100 if len(pct) <= 2 else float("0." + pct)
            except ValueError:
                q = -1.0
            if not 0 < q < 1 or out.get("quantile", q) != q:
                raise SpecError(f"{flag}: '{part.strip()[:40]}': write one quantile for every metric, e.g. "
                                "ttft_p99=2,tpot_p99=0.05")
            out["quantile"] = q
        if key not in ("ttft", "tpot", "e2e"):
            raise SpecError(f"{flag}: unknown '{key[:40]}'; write ttft=0.5,tpot=0.05,e2e=10 (seconds; "
                            "or ttft_p99=2 for the quantile)")
        try:
            out[f"{key}_s"] = float(value)
        except ValueError:
            raise SpecError(f"{flag}: {key}={value[:40]!r} is not a number of seconds") from None
    return out


class ServerTraceSpec(FrozenModel):
    """A window of the server's own profiler inside each stage: N engine steps or S seconds."""

    steps: int | None = Field(None, ge=1, le=1_000_000)
    seconds: float | None = Field(None, gt=0, le=3600)
    server: Literal["auto", "perfkit", "vllm", "sglang"] = "auto"
    trace_dir: str | None = Field(None, min_length=1, max_length=4000)  # where this client reads them

    @model_validator(mode="after")
    def _one(self) -> ServerTraceSpec:
        if (self.steps is None) == (self.seconds is None):
            raise ValueError("give the window as steps: N or seconds: S (one of the two)")
        if self.server == "vllm" and self.steps is not None:
            raise ValueError("vLLM's /start_profile takes no step count; give seconds: S")
        return self


class ServingProfileSpec(FrozenModel):
    server_trace: ServerTraceSpec


ADAPTER_NAME = r"[\w.@+/-]{1,200}"  # no ':' (the sglang form's separator, a weight's), ',' or space


def lora_adapters(text: str, flag: str) -> dict[str, Any]:
    """`--lora sql,python` (uniform) or `sql:3,python:1` (weights) -> the lora block's adapters."""
    names: list[str] = []
    weights: list[float] = []
    for part in (p.strip() for p in text.split(",")):
        name, colon, weight = part.partition(":")
        try:
            w = float(weight) if colon else 1.0
        except ValueError:
            w = -1.0
        if not name or not w > 0 or not math.isfinite(w):
            raise SpecError(f"{flag} {part[:60]!r}: write NAME or NAME:WEIGHT (a weight above 0), comma-separated; "
                            "e.g. sql,python or sql:3,python:1")
        names.append(name)
        weights.append(w)
    return {"adapters": names} | ({"weights": weights} if any(w != 1.0 for w in weights) else {})


class LoraSpec(FrozenModel):
    """A LoRA adapter per request (docs/serving.md "LoRA adapters"): each request names one of
    `adapters`, drawn from the run's seed (equal odds, or `weights`)."""

    adapters: tuple[str, ...] = Field((), max_length=1000)
    weights: tuple[float, ...] | None = None  # one per adapter, above 0 (relative odds)
    format: Annotated[Literal["auto", "vllm", "sglang"], CliOption(
        "--lora-format", help="how a request names its adapter: vllm (model: ADAPTER), sglang "
                              "(model: BASE:ADAPTER) or auto (default: asks the server)")] = "auto"

    @model_validator(mode="before")
    @classmethod
    def _short(cls, data: Any) -> Any:
        """`lora: [sql, python]` or `lora: {sql: 3, python: 1}` in a spec."""
        if isinstance(data, (list, tuple)):
            return {"adapters": list(data)}
        if isinstance(data, dict) and data and "adapters" not in data and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in data.values()):
            return {"adapters": list(data), "weights": list(data.values())}
        return data

    @field_validator("adapters")
    @classmethod
    def _names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = next((n for n in v if not re.fullmatch(ADAPTER_NAME, n)), None)
        if bad is not None:
            raise ValueError(f"adapter {bad[:60]!r}: a name of letters, digits and . _ - / @ + (no ':', ',' "
                             "or spaces), at most 200 characters")
        return v

    @model_validator(mode="after")
    def _fits(self) -> LoraSpec:
        if not self.adapters:
            raise ValueError("no adapters: name them, e.g. --lora sql,python (lora: {adapters: [sql, python]})")
        if len(set(self.adapters)) != len(self.adapters):
            raise ValueError("an adapter is named twice; name each once (give it a weight for more requests)")
        if self.weights is not None and (len(self.weights) != len(self.adapters)
                                         or any(not (w > 0 and math.isfinite(w)) for w in self.weights)):
            raise ValueError("weights: one number above 0 per adapter, e.g. --lora sql:3,python:1")
        return self


class ServingSpec(WorkloadSpec):
    kind: Literal["serving"]
    endpoint: Annotated[str | None, CliOption(
        "url", help="the server: http://HOST:PORT, its OpenAI base URL http://HOST:PORT/v1, or a full "
                    ".../v1/completions or .../v1/chat/completions URL")] = Field(
        None, min_length=1, max_length=2000)
    model: Annotated[str, CliOption("--model", help="the model name sent in each request (serve-bench default: the "
                                                    "one the server's /v1/models lists)")] = Field(
        "default", min_length=1, max_length=500)
    api: Annotated[Literal["completions", "chat"], CliOption(
        "--api", help="completions (default) or chat; a full endpoint URL names it")] = "completions"
    load: LoadSpec = LoadSpec(concurrency=(1,))
    requests: Annotated[int | None, CliOption(
        "--requests", help="requests per stage (default 32)")] = Field(None, ge=1, le=10_000_000)
    duration_s: Annotated[float | None, CliOption(
        "--duration-s", help="or: send for this long per stage")] = Field(None, gt=0, le=7 * 86400)
    warmup: Annotated[int | None, CliOption(  # None: one per connection the stage opens
        "--warmup", help="warm-up requests before each stage (default 1)")] = Field(None, ge=0, le=100_000)
    prompts: PromptSpec = PromptSpec()
    sessions: SessionSpec | None = None  # multi-turn sessions instead of independent requests
    slo: Annotated[SloSpec | None, CliOption(
        "--slo", metavar="ttft=S,tpot=S,e2e=S", parse=slo_seconds,
        help="SLO thresholds in seconds (goodput)")] = None
    price: PriceSpec | None = None
    target_interactivity: Annotated[tuple[float, ...], CliOption(  # tok/s per user
        "--target-interactivity", metavar="TPS[,TPS...]", parse=comma_numbers(float),
        help="cost at these tok/s per user along the measured front")] = ()
    capacity: CapacitySpec | None = None  # search the load for capacity at the SLO instead of fixed stages
    client: ClientSpec = ClientSpec()
    metrics_url: Annotated[str, CliOption(
        "--metrics-url", help="Prometheus endpoint (default URL/metrics; none: skip)")] = Field(
        "auto", min_length=1, max_length=2000)
    profile: ServingProfileSpec | None = None
    gpu_metrics: GpuMetricsSpec | None = None  # a DCGM exporter: the server's GPU energy (not in the hash)
    lora: Annotated[LoraSpec | None, CliOption(
        "--lora", metavar="NAME[:W][,NAME[:W]...]", parse=lora_adapters,
        help="each request names one of these LoRA adapters, drawn from --seed (equal odds, or the weights "
             "W); the stage shows TTFT / TPOT per adapter")] = None
    server: ServerSpec | None = None  # perfkit serve-sweep starts the server per configuration

    runner: ClassVar[str] = "perfkit.workloads.serving.runner:prepare"
    preflight: ClassVar[str] = "perfkit.workloads.serving.client.plan:preflight"

    @model_validator(mode="before")
    @classmethod
    def _url(cls, data: Any) -> Any:
        """The endpoint as the client uses it (`/v1`, a full `/v1/chat/completions` URL -> its
        base; the URL's API when it names one); a bad URL is refused here, before any run."""
        if not isinstance(data, dict) or not isinstance(data.get("endpoint"), str):
            return data
        found = parse_endpoint(data["endpoint"])
        data = {**data, "endpoint": found.base}
        if found.api is not None:
            if data.get("api", found.api) != found.api:
                raise ValueError(f"the URL names the {found.api} API but api is {data['api']!r}; "
                                 f"drop one of them")
            data["api"] = found.api
        return data

    @field_validator("target_interactivity", mode="before")
    @classmethod
    def _targets(cls, v: Any) -> Any:
        return [v] if isinstance(v, (int, float)) and not isinstance(v, bool) else v

    @field_validator("target_interactivity")
    @classmethod
    def _positive(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if any(not (t > 0 and math.isfinite(t)) for t in v):
            raise ValueError("target_interactivity values are tok/s per user above 0")
        return v

    @model_validator(mode="after")
    def _checks(self) -> ServingSpec:
        if self.prompts.token_ids and self.api == "chat":
            raise ValueError("prompts.token_ids works with api: completions only")
        if self.target_interactivity and (self.price is None or (self.price.usd_per_gpu_hour is None
                                                                 and self.price.file is None)):
            raise ValueError("target_interactivity gives a cost: add a price block")
        if self.profile is not None and self.client.processes > 1:
            raise ValueError("profile.server_trace works with client.processes: 1 (one window per stage)")
        if self.capacity is not None and self.slo is None:
            raise ValueError("capacity is searched at an SLO: add slo: {ttft_s: ..., tpot_s: ..., quantile: ...}")
        if self.sessions is not None:
            self._sessions_fit()
        return self

    def _sessions_fit(self) -> None:
        """Sessions run as a closed loop of synthetic or given prompts, in one client process."""
        what = "sessions (--sessions / --session-file)"
        if self.load.concurrency is None or (self.capacity is not None and self.capacity.over != "concurrency"):
            raise ValueError(f"{what} run as a closed loop: give --concurrency (load.concurrency: sessions at "
                             "once), not --rate, --replay or stages")
        if self.requests is not None:
            raise ValueError(f"{what} send their turns as the requests: drop --requests (requests)")
        if self.prompts.source != "synthetic" or self.prompts.token_ids:
            raise ValueError(f"{what} send text prompts: drop --token-ids / --dataset / --shared-prefix "
                             "(prompts.token_ids, prompts.source)")
        if self.client.processes > 1:
            raise ValueError(f"{what} run in one client process: drop --processes (client.processes)")

    @model_validator(mode="after")
    def _size(self) -> ServingSpec:
        """Each stage's length and size within the client's bounds (client.plan_size)."""
        p = self.prompts
        prefix = (p.prefix_len, p.groups) if p.source == "shared_prefix" else None
        for params in self.stages():
            if "replay" in params:
                continue
            problem = plan_problem(params, params.get("requests", self.requests),
                                   params.get("duration_s", self.duration_s), p.input_len, p.output_len, prefix)
            if problem:
                raise ValueError(f"plan: {problem}")
        return self

    @model_validator(mode="after")
    def _endpoint(self, info: Any) -> ServingSpec:
        if self.server is not None and self.endpoint is not None and self.server.launched is None:
            raise ValueError("the server block names the endpoint (http://HOST:PORT of server.host and its port); "
                             "drop endpoint")
        if self.endpoint is None and self.server is None and (getattr(info, "context", None) or {}).get("yaml") is not None:
            raise ValueError("a serving workload needs endpoint: http://HOST:PORT (the server to load-test)")
        return self

    @model_serializer(mode="wrap")
    def _no_endpoint(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if isinstance(data, dict) and (info.context or {}).get(RECORD):
            data.pop("endpoint", None)
            data.pop("profile", None)
            data.pop("gpu_metrics", None)
            if isinstance(data.get("server"), dict):
                data["server"].pop("launched", None)
        return data

    def stages(self) -> list[dict[str, Any]]:
        """The parameters of each stage (point), in order."""
        load = self.load
        if load.concurrency is not None:
            return [{"concurrency": c} for c in load.concurrency]
        if load.rate is not None:
            extra: dict[str, Any] = {}
            if load.burstiness != 1.0:
                extra["burstiness"] = load.burstiness
            if load.max_concurrency:
                extra["max_concurrency"] = load.max_concurrency
            return [{"rate": r, **extra} for r in load.rate]
        if load.stages is not None:
            return [{"stage": i, **s.model_dump(exclude_none=True)} for i, s in enumerate(load.stages)]
        return [{"replay": load.replay}]

    def sweep(self) -> list[dict[str, Any]]:
        if self.capacity is not None:
            return [{"capacity": self.capacity.over}]
        points = self.stages()
        if self.target_interactivity:
            points.append({"front": "interactivity"})
        return points
