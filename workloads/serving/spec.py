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
      slo: {ttft_s: 0.5, tpot_s: 0.05, quantile: 0.99}
      price: {usd_per_gpu_hour: 2.99, gpus: 1}    # or {file: prices.yaml, name: h100-ondemand}
      target_interactivity: [20, 50]      # tok/s per user: cost along the measured front
      client: {read_timeout_s: 60, usage: true}
      metrics_url: auto                   # auto (ENDPOINT/metrics) | none | a URL

Each stage (load level) is a point: `serving/chat/concurrency=4`, `serving/chat/rate=2`. The
endpoint is kept in each point's metrics, not in the spec's hash: a run against yesterday's
server on another port is still a run of the same spec, so it is the baseline.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

from pydantic import (
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from perfkit.workloads.base import RECORD, FrozenModel, WorkloadSpec
from perfkit.workloads.serving.client.plan_size import plan_problem
from perfkit.workloads.serving.client.url import parse_endpoint

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
    input_len: LengthSpec = LengthSpec(value=128)
    output_len: LengthSpec | None = None  # default 128; sharegpt: from each answer
    path: str | None = None  # sharegpt file
    prefix_len: int = Field(512, ge=1, le=10_000_000)  # shared_prefix
    groups: int = Field(4, ge=1, le=1_000_000)  # shared_prefix: distinct prefixes
    token_ids: bool = False  # send token ids instead of words (completions only)
    vocab_size: int = Field(32000, ge=2, le=10_000_000)  # token ids are drawn below this

    @model_validator(mode="after")
    def _path(self) -> PromptSpec:
        if self.source == "sharegpt" and not self.path:
            raise ValueError("source sharegpt needs path: FILE (a ShareGPT JSON or JSON-lines file)")
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
    concurrency: tuple[int, ...] | None = None
    rate: tuple[float, ...] | None = None  # requests/s; .inf: all at once
    burstiness: float = Field(1.0, gt=0, le=1000)  # gamma shape of the gaps (1: Poisson)
    max_concurrency: int | None = Field(None, ge=1, le=100_000)  # open loop cap
    stages: tuple[StageSpec, ...] | None = None
    replay: str | None = None  # file of arrival times

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
    ttft_s: float | None = Field(None, gt=0)
    tpot_s: float | None = Field(None, gt=0)
    e2e_s: float | None = Field(None, gt=0)
    quantile: float = Field(0.99, gt=0, le=1)

    @model_validator(mode="after")
    def _some(self) -> SloSpec:
        if self.ttft_s is None and self.tpot_s is None and self.e2e_s is None:
            raise ValueError("an slo needs at least one of ttft_s, tpot_s, e2e_s")
        return self


class PriceSpec(FrozenModel):
    usd_per_gpu_hour: float | None = Field(None, gt=0, le=1e6)
    gpus: int = Field(1, ge=1, le=1_000_000)
    file: str | None = None  # a prices file (docs/serving.md)
    name: str | None = None  # the entry of that file
    source: str = ""  # where the price comes from (shown beside the cost)

    @model_validator(mode="after")
    def _one(self) -> PriceSpec:
        if (self.usd_per_gpu_hour is None) == (self.file is None):
            raise ValueError("a price needs usd_per_gpu_hour, or file and name")
        if self.file is not None and not self.name:
            raise ValueError("a prices file needs name: the entry to use")
        return self


class ClientSpec(FrozenModel):
    connect_timeout_s: float = Field(10.0, gt=0, le=3600)
    read_timeout_s: float = Field(60.0, gt=0, le=86400)
    request_timeout_s: float = Field(600.0, gt=0, le=86400)
    usage: bool = True
    logprobs: bool = False
    ignore_eos: bool = True
    processes: int = Field(1, ge=1, le=256)  # client processes a stage's requests are spread over
    follow_redirects: bool = False  # follow a redirect to another server (same server: always)
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")  # bearer token's variable


class ServingSpec(WorkloadSpec):
    kind: Literal["serving"]
    endpoint: str | None = Field(None, min_length=1, max_length=2000)
    model: str = Field("default", min_length=1, max_length=500)
    api: Literal["completions", "chat"] = "completions"
    load: LoadSpec = LoadSpec(concurrency=(1,))
    requests: int | None = Field(None, ge=1, le=10_000_000)
    duration_s: float | None = Field(None, gt=0, le=7 * 86400)
    warmup: int | None = Field(None, ge=0, le=100_000)  # None: one per connection the stage opens
    prompts: PromptSpec = PromptSpec()
    slo: SloSpec | None = None
    price: PriceSpec | None = None
    target_interactivity: tuple[float, ...] = ()  # tok/s per user
    client: ClientSpec = ClientSpec()
    metrics_url: str = Field("auto", min_length=1, max_length=2000)

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
        if self.target_interactivity and self.price is None:
            raise ValueError("target_interactivity gives a cost: add a price block")
        return self

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
        if self.endpoint is None and (getattr(info, "context", None) or {}).get("yaml") is not None:
            raise ValueError("a serving workload needs endpoint: http://HOST:PORT (the server to load-test)")
        return self

    @model_serializer(mode="wrap")
    def _no_endpoint(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if isinstance(data, dict) and (info.context or {}).get(RECORD):
            data.pop("endpoint", None)
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
        points = self.stages()
        if self.target_interactivity:
            points.append({"front": "interactivity"})
        return points
