"""Installed models: name normalisation, what each model is (capabilities, architecture, window,
size) and the ``details``, ``model_info`` and ``parameters`` Ollama reports for it.

Every field of a `ModelSpec` is optional: what is left out follows from the model's name, like
the real library (``qwen3``, ``deepseek-r1``, ``gpt-oss`` think; ``llava``, ``gemma3`` see; names
holding ``embed`` or ``minilm`` embed; everything else is a llama-style chat model with tools).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from .wire import JsonObject

CapabilityListing = Literal["listed", "empty", "absent"]
"""What /api/show says of a model's capabilities (`ModelSpec.lists_capabilities`)."""

if TYPE_CHECKING:
    from .context import ContextMode

__all__ = [
    "CHAT_CAPABILITIES",
    "DEFAULT_MODELS",
    "EMBED_CAPABILITIES",
    "MODIFIED_AT",
    "ModelSpec",
    "ResolvedModel",
    "base_name",
    "default_capabilities",
    "normalize_model_name",
    "resolve_model",
]

MODIFIED_AT: Final = "2026-01-01T00:00:00Z"
DEFAULT_MODELS: Final = ("llama3.2", "nomic-embed-text")
CHAT_CAPABILITIES: Final = ("completion", "tools")
EMBED_CAPABILITIES: Final = ("embedding",)
THINKING_CAPABILITIES: Final = ("completion", "tools", "thinking")
VISION_CAPABILITIES: Final = ("completion", "vision")

# Families matched on the name without registry path and tag ("qwen3" is not "qwen3-coder").
THINKING_FAMILIES: Final = frozenset(
    {"qwen3", "qwen3.5", "deepseek-r1", "deepseek-v3.1", "gpt-oss", "qwq", "magistral"}
)
VISION_FAMILIES: Final = frozenset(
    {"llava", "llava-llama3", "llama3.2-vision", "gemma3", "qwen2.5vl", "minicpm-v", "moondream"}
)
# gpt-oss takes levels and cannot stop thinking: think=false is ignored (Ollama's thinking docs).
ALWAYS_THINKING_FAMILIES: Final = frozenset({"gpt-oss"})

# Per family: general.architecture, <arch>.context_length, parameter size, bytes on disk.
_FAMILY_FACTS: Final[dict[str, tuple[str, int, str, int]]] = {
    "qwen3": ("qwen3", 40_960, "8.2B", 5_225_388_164),
    "qwen3.5": ("qwen35", 262_144, "9.7B", 6_590_000_000),
    "deepseek-r1": ("qwen3", 131_072, "8.2B", 5_225_388_164),
    "deepseek-v3.1": ("deepseekv3", 163_840, "671B", 404_000_000_000),
    "gpt-oss": ("gptoss", 131_072, "20.9B", 13_780_173_839),
    "qwq": ("qwen2", 40_960, "32.8B", 19_851_336_256),
    "magistral": ("llama", 40_960, "23.6B", 14_000_000_000),
    "gemma3": ("gemma3", 131_072, "4.3B", 3_338_801_804),
    "llava": ("llama", 32_768, "7.2B", 4_733_363_377),
    "nomic-embed-text": ("nomic-bert", 2_048, "137M", 274_302_450),
    "all-minilm": ("bert", 512, "23M", 45_960_996),
}
_CHAT_FACTS: Final = ("llama", 131_072, "3.2B", 2_019_393_189)
_EMBED_FACTS: Final = ("bert", 512, "137M", 274_302_450)
KV_BYTES_PER_TOKEN: Final = 114_688
"""KV cache per token of window (llama3.2 3B at f16), for the memory /api/ps reports."""


@dataclass(frozen=True)
class ModelSpec:
    """What the stand-in says about one model; ``None`` fields follow from its name."""

    capabilities: tuple[str, ...] | None = None
    architecture: str | None = None
    """``general.architecture`` (the ``<arch>`` of ``<arch>.context_length``)."""
    context_length: int | None = None
    """The model's trained maximum window (``<arch>.context_length``)."""
    num_ctx: int | None = None
    """A ``PARAMETER num_ctx`` in the Modelfile: the model's own default window."""
    parameters: str | None = None
    """Other Modelfile parameter lines (``"temperature 0.6\\nstop <|im_end|>"``)."""
    family: str | None = None
    parameter_size: str | None = None
    quantization_level: str | None = None
    size: int | None = None
    """Bytes on disk (/api/tags), also the weights part of /api/ps ``size``."""
    inline_thinking: bool = False
    """Thinks inside ``<think>…</think>`` in ``content`` instead of ``message.thinking``."""
    always_thinks: bool | None = None
    """``think: false`` is ignored (gpt-oss); ``None``: by name."""
    takes_levels: bool = True
    """A level ("low", "high"…) for ``think`` is accepted; False: HTTP 400 ``think value
    "high" is not supported for this model``, as Ollama answers for qwen3:8b and others in
    some releases (seen Dec 2025 and Apr 2026) while gpt-oss takes levels."""
    think_is_bool: bool = False
    """The server's ``think`` is a boolean only (Ollama 0.9–0.10): a level is HTTP 400 ``json:
    cannot unmarshal string into Go struct field ChatRequest.think of type bool``."""
    context_mode: ContextMode | None = None
    """Overrides the stand-in's context mode for this model (ollama/ollama#17889)."""
    counts_refusal: bool = True
    """In context mode "error": the 400 is llama-server's JSON with the prompt's size; False:
    Ollama's own ``the input length exceeds the context length``, which names no size."""
    applies_num_ctx: bool = True
    """False: a request's ``options.num_ctx`` is ignored and the model runs with its own or
    the server's default window (a server configured or patched so; /api/ps tells)."""
    token_scale: float = 1.0
    """This model's vocabulary counts this many times the stand-in's tokens for the same text
    (a vocabulary that splits words finer; 1.0: the stand-in's rule, close to llama-3's)."""
    lists_capabilities: CapabilityListing = "listed"
    """What /api/show says of the capabilities: the list, ``[]``, or no field at all (an
    Ollama from before capabilities); the model still does what ``capabilities`` say."""


@dataclass(frozen=True)
class ResolvedModel:
    """A `ModelSpec` with every gap filled in from the model's name."""

    name: str
    capabilities: tuple[str, ...]
    architecture: str
    context_length: int
    num_ctx: int | None
    parameters: str
    family: str
    parameter_size: str
    quantization_level: str
    size: int
    inline_thinking: bool
    always_thinks: bool
    context_mode: ContextMode | None
    lists_capabilities: CapabilityListing = "listed"
    takes_levels: bool = True
    think_is_bool: bool = False
    token_scale: float = 1.0
    applies_num_ctx: bool = True
    counts_refusal: bool = True

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.name.encode()).hexdigest()

    def details(self) -> JsonObject:
        return {
            "parent_model": "",
            "format": "gguf",
            "family": self.family,
            "families": [self.family],
            "parameter_size": self.parameter_size,
            "quantization_level": self.quantization_level,
        }

    def model_info(self) -> JsonObject:
        return {
            "general.architecture": self.architecture,
            "general.parameter_count": _parameter_count(self.parameter_size),
            f"{self.architecture}.context_length": self.context_length,
        }

    def parameters_text(self) -> str:
        lines = [self.parameters] if self.parameters else []
        if self.num_ctx is not None:
            lines.append(f"num_ctx {self.num_ctx}")
        return "\n".join(line for line in lines if line)


def normalize_model_name(name: str) -> str:
    """Append ``:latest`` when the model name carries no tag."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def base_name(name: str) -> str:
    """The model's family name: no registry path, no tag (``library/qwen3:8b`` -> ``qwen3``)."""
    return name.rsplit("/", 1)[-1].split(":", 1)[0].lower()


def _is_embedding(name: str) -> bool:
    lowered = name.lower()
    return "embed" in lowered or "minilm" in lowered


def default_capabilities(name: str) -> tuple[str, ...]:
    """Capabilities by name: embedders embed, thinkers think, seers see, the rest chat."""
    family = base_name(name)
    if _is_embedding(name):
        return EMBED_CAPABILITIES
    if family in THINKING_FAMILIES:
        return THINKING_CAPABILITIES
    if family in VISION_FAMILIES:
        return VISION_CAPABILITIES
    return CHAT_CAPABILITIES


def _parameter_count(size: str) -> int:
    scale = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}.get(size[-1:].upper(), 1.0)
    try:
        return int(float(size.rstrip("KMBTkmbt")) * scale)
    except ValueError:
        return 0


def resolve_model(name: str, spec: ModelSpec | None = None) -> ResolvedModel:
    """Fill ``spec``'s gaps from ``name``."""
    spec = spec or ModelSpec()
    family = base_name(name)
    capabilities = spec.capabilities or default_capabilities(name)
    embedding_only = "embedding" in capabilities and "completion" not in capabilities
    default_facts = _EMBED_FACTS if embedding_only else _CHAT_FACTS
    architecture, context_length, parameter_size, size = _FAMILY_FACTS.get(family, default_facts)
    arch = spec.architecture or architecture
    return ResolvedModel(
        name=name,
        capabilities=tuple(capabilities),
        architecture=arch,
        context_length=spec.context_length or context_length,
        num_ctx=spec.num_ctx,
        parameters=spec.parameters or "",
        family=spec.family or ("bert" if embedding_only else arch),
        parameter_size=spec.parameter_size or parameter_size,
        quantization_level=spec.quantization_level or ("F16" if embedding_only else "Q4_K_M"),
        size=spec.size or size,
        inline_thinking=spec.inline_thinking,
        always_thinks=(
            spec.always_thinks
            if spec.always_thinks is not None
            else family in ALWAYS_THINKING_FAMILIES
        ),
        context_mode=spec.context_mode,
        lists_capabilities=spec.lists_capabilities,
        takes_levels=spec.takes_levels,
        think_is_bool=spec.think_is_bool,
        token_scale=spec.token_scale,
        applies_num_ctx=spec.applies_num_ctx,
        counts_refusal=spec.counts_refusal,
    )
