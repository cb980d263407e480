"""The `model:` block of model.yaml: a preset, a Hugging Face config.json, or explicit fields.

    model: {preset: llama-3.1-8b, dtype: bf16}
    model: {preset: tiny, n_layers: 4}                # a preset with fields overridden
    model: {hf_config: ckpt/config.json, dtype: bf16}  # relative to the model.yaml
    model: {dim: 256, n_layers: 2, n_heads: 4, n_kv_heads: 1, head_dim: 64,
            ffn_dim: 768, vocab_size: 1000}            # from fields alone

The block can sit at the top level of model.yaml (shared by every decode / attention / moe
workload that has no `model:` of its own) or inside a workload. No torch here.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from perfkit.workloads.base import FrozenModel, WorkloadSpec
from perfkit.workloads.dtypes import canonical
from perfkit.workloads.models.config import ModelConfig
from perfkit.workloads.models.hf_config import load_hf_fields
from perfkit.workloads.models.presets import PRESETS

MODEL_DTYPES = ("fp32", "bf16", "fp16")
SPEC_DIR = "spec_dir"  # validation-context key: the folder of the model.yaml being loaded
YAML_DOC = "yaml"  # validation-context key: the YamlDoc perfkit.pipeline.spec is validating
SHARED_MODEL = "model"  # validation-context key: the top-level model block, if any


class HFConfigRef(FrozenModel):
    """A config.json as read at load time: its path (as written) and the fields it gave."""

    path: str
    model_type: str
    fields: dict[str, Any]


def spec_dir(info: ValidationInfo) -> Path:
    """The folder of the model.yaml being validated (paths in it are relative to it), else '.'."""
    context = info.context or {}
    if context.get(SPEC_DIR):
        return Path(context[SPEC_DIR])
    doc = context.get(YAML_DOC)
    return Path(doc.path).parent if doc is not None and getattr(doc, "path", None) else Path(".")


def _load_hf_ref(value: Any, info: ValidationInfo) -> Any:
    if isinstance(value, (dict, HFConfigRef)):  # already loaded (a run record read back)
        return value
    if not isinstance(value, str) or not value.strip():
        raise ValueError("hf_config must be the path of a Hugging Face config.json")
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = spec_dir(info) / path
    model_type, fields = load_hf_fields(path)
    return HFConfigRef(path=value, model_type=model_type, fields=fields)


HFConfigField = Annotated[HFConfigRef, BeforeValidator(_load_hf_ref)]


class ModelSpec(FrozenModel):
    preset: str | None = None
    hf_config: HFConfigField | None = None
    dtype: str = "bf16"  # weights, activations and KV cache
    name: str | None = Field(None, min_length=1, max_length=200)
    vocab_size: int | None = Field(None, ge=1)
    dim: int | None = Field(None, ge=1)
    n_layers: int | None = Field(None, ge=1)
    n_heads: int | None = Field(None, ge=1)
    n_kv_heads: int | None = Field(None, ge=1)
    head_dim: int | None = Field(None, ge=2)
    ffn_dim: int | None = Field(None, ge=0)
    norm_eps: float | None = Field(None, gt=0)
    rope_theta: float | None = Field(None, gt=0)
    max_seq_len: int | None = Field(None, ge=1)
    attention_bias: bool | None = None
    tie_embeddings: bool | None = None
    n_experts: int | None = Field(None, ge=0)
    top_k: int | None = Field(None, ge=0)
    expert_ffn_dim: int | None = Field(None, ge=0)
    n_shared_experts: int | None = Field(None, ge=0)
    shared_ffn_dim: int | None = Field(None, ge=0)

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str | None) -> str | None:
        if value is None or value in PRESETS:
            return value
        close = difflib.get_close_matches(value, list(PRESETS), n=1, cutoff=0.5)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ValueError(f"unknown preset '{value}'; {hint}presets: {', '.join(PRESETS)}")

    @field_validator("dtype")
    @classmethod
    def _model_dtype(cls, value: str) -> str:
        name = canonical(value)
        if name not in MODEL_DTYPES:
            raise ValueError(f"model dtype '{value}' is not one of {', '.join(MODEL_DTYPES)}")
        return name

    @model_validator(mode="after")
    def _buildable(self) -> ModelSpec:
        if self.preset is not None and self.hf_config is not None:
            raise ValueError("give either preset or hf_config, not both")
        self.config()  # raises ValueError with what is missing or inconsistent
        return self

    def overrides(self) -> dict[str, Any]:
        names = set(ModelConfig.field_names())
        return {k: v for k, v in self.model_dump(exclude={"preset", "hf_config", "dtype"}).items()
                if k in names and v is not None}

    def config(self) -> ModelConfig:
        """The ModelConfig this block describes: base (preset / hf_config) + field overrides."""
        base: dict[str, Any] = {}
        if self.preset is not None:
            base = PRESETS[self.preset].to_dict()
        elif self.hf_config is not None:
            base = {"name": Path(self.hf_config.path).parent.name or "hf-model", **self.hf_config.fields}
        merged = {**base, **self.overrides()}
        merged.setdefault("name", "custom")
        if "n_kv_heads" not in merged and "n_heads" in merged:
            merged["n_kv_heads"] = merged["n_heads"]
        if "head_dim" not in merged and "dim" in merged and "n_heads" in merged:
            merged["head_dim"] = merged["dim"] // merged["n_heads"]
        required = ("vocab_size", "dim", "n_layers", "n_heads")
        missing = [k for k in required if k not in merged]
        if missing:
            raise ValueError(f"the model needs {', '.join(missing)}; give a preset, an hf_config "
                             "or these fields")
        cfg = ModelConfig(**merged)
        problems = cfg.problems()
        if problems:
            raise ValueError(f"model '{cfg.name}': {problems[0]}")
        return cfg

    @property
    def label(self) -> str:
        return self.config().name


class ModelWorkloadSpec(WorkloadSpec):
    """Base of the workloads that can take a `model:` (their own, or the top-level one)."""

    model: ModelSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _shared_model(cls, data: Any, info: ValidationInfo) -> Any:
        shared = (info.context or {}).get(SHARED_MODEL)
        if isinstance(data, dict) and data.get("model") is None and shared is not None:
            return {**data, "model": shared}
        return data
