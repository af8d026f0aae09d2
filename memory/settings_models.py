"""The memory and facts areas of the settings: typed, validated, one docstring per field.

`MemoryStore` takes a `MemoryConfig`, `SaveFilter` a `SaveFilterConfig`, `FactDrawer` a
`FactsConfig`; `agent.settings_models.Settings` composes them as `settings.memory` and
`settings.facts`, and its loader maps the flat config keys (`memory_top_k`, `MEMORY_TOP_K`)
onto them. The defaults here are the only copy. Only pydantic is imported: the settings are
built before the first frame, long before numpy or duckdb may load.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

DEFAULT_EMBED_MODEL = "nomic-embed-text"
"""The embedding model when none is configured (memory and facts use the same one)."""


def named_model(value: object, which: str) -> object:
    """`value` of a model setting, refused (ValueError) when it is a blank name or a name
    the masker would change (a token pasted as `--model`: the name is written with every
    message into the daily log, which keeps no secret)."""
    if isinstance(value, str) and not value.strip():
        raise ValueError(f"{which} name must not be empty")
    if isinstance(value, str):
        from memory.secret_masking import mask_secrets

        if mask_secrets(value) != value:
            raise ValueError(f"{which} name may not hold a secret (it is written to the log)")
    return value


class SettingsArea(BaseModel):
    """An area of the settings: immutable, no unknown fields, docstrings as descriptions;
    a number must be finite (`http_timeout_seconds = inf` is a mistake, not "no limit")."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False
    )


class SaveFilterConfig(SettingsArea):
    """Thresholds of the save filter (`memory.save_filter`); defaults are the seed's."""

    min_chars: int = Field(default=50, ge=0)
    """Texts shorter than this many characters (after stripping) are not auto-saved;
    exactly this many are. Key `memory_save_min_chars`."""
    footnote_ratio: float = Field(default=0.7, ge=0.0, le=1.0)
    """Assistant replies whose footnote definitions exceed this share (0..1) of the text are
    not saved: they are citations, not content. Key `memory_save_footnote_ratio`."""
    code_ratio: float = Field(default=0.8, ge=0.0, le=1.0)
    """Assistant replies whose fenced code exceeds this share (0..1) of the text are not
    saved. Key `memory_save_code_ratio`."""
    dedup_lookback: int = Field(default=3, ge=0)
    """How many recent saves per conversation and role the dedup rule compares against;
    0 turns dedup off. Key `memory_save_dedup_lookback`."""
    dedup_threshold: float = Field(default=0.85, ge=0.0, le=1.0)
    """Similarity (0..1, difflib-like, see `memory/save_filter.py`) above which a text is a
    duplicate of a recent save. Key `memory_save_dedup_threshold`."""
    echo_threshold: float = Field(default=0.6, ge=0.0, le=1.0)
    """Share (0..1) of an assistant reply's words repeating recalled text above which it is an
    echo and not saved. Not a config key: tests and benchmarks tune it."""
    max_conversations: int = Field(default=1024, ge=1)
    """Dedup ring buffers kept (one per conversation and role); the least recently used go
    first. Not a config key: it bounds memory, not behaviour."""


class MemoryConfig(SettingsArea):
    """Layer 3, the semantic memory (`settings.memory`): recall, saving, status."""

    enabled: bool = True
    """Recall points into the prompt and auto-save turns as points; off, neither happens
    (`/remember` still stores a pin; facts are not affected). Key `memory_enabled`."""
    top_k: int = Field(default=5, ge=0)
    """Points recalled into a prompt: up to this many pinned ones first, then up to this
    many others. Key `memory_top_k`."""
    min_score: float = Field(default=0.6, ge=0.0, le=1.0)
    """Cosine (0..1) a point needs with the message to be recalled by meaning (a word match
    also counts); pinned points need half. Key `memory_min_score`."""
    max_chars: int = Field(default=4000, ge=0)
    """Size cap (characters) of the recalled-memory block in the prompt. Key
    `memory_max_chars`."""
    status_every_n: int = Field(default=50, ge=1)
    """Turns between two runs of the memstatus check (it also runs on its schedule). Key
    `memory_status_every_n`."""
    embed_model: str = DEFAULT_EMBED_MODEL
    """Ollama model that embeds points (and facts); vectors of another model are rebuilt.
    Key `embed_model`."""
    ram_warn_bytes: int = Field(default=268_435_456, ge=0)
    """Estimated RAM of the vector index (bytes) from which status says `warn`. Key
    `memory_ram_warn_bytes`."""
    ram_crit_bytes: int = Field(default=536_870_912, ge=0)
    """Estimated RAM of the vector index (bytes) from which status says `critical`. Key
    `memory_ram_crit_bytes`."""
    save_filter: SaveFilterConfig = Field(default_factory=SaveFilterConfig)
    """Which auto-saved turns become points (keys `memory_save_*`)."""
    filter_enabled: bool = True
    """Run auto-saves through the save filter. Not a config key: benchmarks replay with the
    filter off too."""

    @field_validator("embed_model", mode="before")
    @classmethod
    def _embed_model_named(cls, value: object) -> object:
        return named_model(value, "the embedding model")


class FactsConfig(SettingsArea):
    """Layer 4, the fact drawer (`settings.facts`): injection, tools, reflection."""

    always_max: int = Field(default=20, ge=0)
    """Cap on the rules and capabilities injected into every prompt (a note says what it
    cut). Key `memory_facts_always_max`."""
    top_k: int = Field(default=5, ge=0)
    """Other facts (decisions, procedures, facts) injected when their key or body matches.
    Key `memory_facts_top_k`."""
    max_chars: int = Field(default=3000, ge=0)
    """Size cap (characters) of the `## Known facts` block, cut on a fact boundary. Key
    `memory_facts_max_chars`."""
    min_score: float = Field(default=0.5, ge=0.0, le=1.0)
    """Cosine (0..1) a fact's body needs with the message to count as a semantic match. Key
    `memory_facts_min_score`."""
    embed_model: str = DEFAULT_EMBED_MODEL
    """Model of the fact vectors: the same setting as `memory.embed_model` (key
    `embed_model`), which the settings loader writes to both."""
    tools: bool = True
    """Offer the model the memory_read / memory_write tools (if the model supports tools).
    Key `memory_tools`."""
    tool_calls_per_round: int = Field(default=8, ge=1)
    """Tool calls of one model answer that are run; the others are not, and the model is
    told (a model once asked for 300 `memory_write` calls at once). Key
    `memory_tool_calls_per_round`."""
    tool_calls_per_turn: int = Field(default=24, ge=1)
    """Tool calls run in one turn, every round together; at the cap the model must answer
    in text. Key `memory_tool_calls_per_turn`."""
    reflection: bool = True
    """At session end (/new, quit, idle), ask the model once for durable facts (candidates
    for the user to approve). Key `memory_reflection`."""
    reflection_idle_minutes: float = Field(default=30.0, gt=0)
    """Idle time (minutes) in the TUI after which the session counts as ended for the
    reflection pass. Key `memory_reflection_idle_minutes`."""
