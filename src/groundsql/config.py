"""The one configuration model.

Every tunable value lives here as validated pydantic config, never as a constant scattered in
code. `Settings()` gives the defaults; `Settings.model_validate({...})` or keyword arguments
override them; environment variables are read only where a secret or a location belongs
(API keys, the data directory).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


def data_home() -> Path:
    """Where groundsql keeps generated and downloaded files (models, demo database, caches).

    `GROUNDSQL_HOME` overrides it; the default follows the XDG cache convention.
    """
    if env := os.environ.get("GROUNDSQL_HOME"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "groundsql"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LLMConfig(_Frozen):
    """Which language model answers, and how patiently."""

    backend: Literal["local", "openai", "replay"] = "local"
    # For the local backend: a registered name ("qwen2.5-coder-1.5b") or a path to any GGUF file.
    # For the OpenAI-compatible backend: the model name the server expects.
    model: str = "qwen2.5-coder-1.5b"
    base_url: str | None = None  # OpenAI-compatible servers; default from OPENAI_BASE_URL
    api_key: str | None = None  # default from OPENAI_API_KEY
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(512, ge=1, le=32768)
    timeout_s: float = Field(300.0, gt=0)
    retries: int = Field(2, ge=0, le=10)
    n_ctx: int = Field(8192, ge=512)
    n_threads: int | None = Field(None, ge=1)  # default: all cores
    seed: int = 42
    cache: bool = True  # answers cached on disk, keyed by the full request
    cache_dir: Path | None = None  # default: <data home>/llm-cache
    replay_dir: Path | None = None  # replay backend: where recordings live
    record: bool = False  # replay backend: call `record_from` on a miss and store the answer


class DatabaseConfig(_Frozen):
    """Limits on every query groundsql runs."""

    timeout_s: float = Field(30.0, gt=0)
    max_rows: int = Field(1000, ge=1)
    sample_values: int = Field(3, ge=0, le=20)  # example values per column in introspection


class SafetyConfig(_Frozen):
    """The validator's policy (FLINT 3.5 / H.1)."""

    # None means every table (column) the database has; names compare case-insensitively.
    allowed_tables: frozenset[str] | None = None
    allowed_columns: dict[str, frozenset[str]] | None = None
    max_joins: int = Field(12, ge=0)
    default_limit: int = Field(1000, ge=1)


class GenerationConfig(_Frozen):
    """How the single-pass generator builds its prompt and recovers from errors."""

    schema_format: Literal["m-schema", "ddl"] = "m-schema"
    with_examples: bool = True  # example values in the schema
    reflection_retries: int = Field(1, ge=0, le=5)


class FewShotConfig(_Frozen):
    """Few-shot baseline (FLINT D.2): the k query-bank examples most like the question."""

    k: int = Field(3, ge=0, le=20)


class SelfConsistencyConfig(_Frozen):
    """Self-consistency (CHESS k=10, IESR SC@maj): one greedy sample and k-1 at a temperature,
    majority vote by execution result."""

    k: int = Field(5, ge=1, le=64)
    temperature: float = Field(0.7, gt=0.0, le=2.0)


class GroundedConfig(_Frozen):
    """The grounded pipeline (FLINT): each stage can be switched off for ablations."""

    pack: Path | None = None  # the domain pack folder; None: the session's pack, or a draft
    lookup: bool = True  # lookup agent: phrases -> IDs of reference tables
    entity_linking: bool = True  # names -> keys of entity tables
    retrieval: bool = True  # similar solved questions from the pack's query bank
    schema_linking: bool = True  # the model picks tables; the FK graph adds bridge tables
    link_above_tables: int = Field(8, ge=0)  # a schema this small is shown whole, unlinked
    reflection: bool = True  # retry on an execution error or an unexpected empty result
    k: int = Field(3, ge=0, le=20)  # examples retrieved
    embeddings: bool = True  # retrieve by embedding when available, else lexically
    max_reference_rows: int = Field(100, ge=1, le=2000)  # rows of one table shown to the model
    entity_threshold: float = Field(0.85, gt=0.0, le=1.0)  # fuzzy score a name link needs
    stop_on_unknown_entity: bool = True  # a name that matches nothing: say so, do not guess


class Settings(_Frozen):
    llm: LLMConfig = LLMConfig()
    database: DatabaseConfig = DatabaseConfig()
    safety: SafetyConfig = SafetyConfig()
    generation: GenerationConfig = GenerationConfig()
    few_shot: FewShotConfig = FewShotConfig()
    self_consistency: SelfConsistencyConfig = SelfConsistencyConfig()
    grounded: GroundedConfig = GroundedConfig()
