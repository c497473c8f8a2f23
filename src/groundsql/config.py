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

from pydantic import BaseModel, ConfigDict, Field, field_validator


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
    # One question's model calls and queries together (deadline.py); None: only each call's own.
    question_timeout_s: float | None = Field(None, gt=0)
    retries: int = Field(2, ge=0, le=10)
    n_ctx: int = Field(8192, ge=512)
    n_threads: int | None = Field(None, ge=1)  # default: all cores
    seed: int = 42
    cache: bool = True  # answers cached on disk, keyed by the full request
    cache_dir: Path | None = None  # default: <data home>/llm-cache
    # The local backend saves the model's state after a new shared prompt prefix (instructions
    # and schema) and loads it in later processes instead of computing it again (llm/kvstore.py).
    # Sequences the local backend decodes at once (independent samples and candidates); each
    # slot holds its own n_ctx of model state in memory.
    parallel: int = Field(4, ge=1, le=16)
    prefix_cache: bool = True
    prefix_cache_dir: Path | None = None  # default: <data home>/prompt-states
    # Least recently used states are deleted beyond it (the demo's is 70 MB; a warehouse area's,
    # semantic/scope.py, 160 MB).
    prefix_cache_mb: int = Field(4096, ge=0)
    replay_dir: Path | None = None  # replay backend: where recordings live
    record: bool = False  # replay backend: call `record_from` on a miss and store the answer


class DatabaseConfig(_Frozen):
    """Limits on every query groundsql runs (db/: each bound is enforced where it is cheapest)."""

    timeout_s: float = Field(30.0, gt=0)
    max_rows: int = Field(1000, ge=1)
    # Rows are capped and so are their bytes: 1,000 rows of 1 MB each would otherwise reach the
    # caller whole. A result is cut (truncated) at the row that crosses this many bytes.
    max_result_bytes: int = Field(16 * 2**20, ge=1024)
    sample_values: int = Field(3, ge=0, le=20)  # example values per column in introspection
    # Queries run in worker processes (db/workers.py) that can be killed when a query overruns
    # its time or memory, without taking the caller down; each has this much address space.
    workers: int = Field(2, ge=1, le=64)
    memory_mb: int = Field(3072, ge=512)
    threads: int = Field(2, ge=1, le=64)  # DuckDB's threads per query
    # PostgreSQL's own per-query bounds: sort/hash memory and temporary files.
    work_mem_mb: int = Field(64, ge=1)
    temp_file_limit_mb: int = Field(1024, ge=1)
    # PostgreSQL: groundsql refuses to connect as a superuser or as a role that can write
    # anything (a READ ONLY transaction does not stop a superuser, and functions such as
    # dblink open connections of their own). Only for a database you can afford to lose.
    allow_privileged_role: bool = False


class SafetyConfig(_Frozen):
    """The validator's policy (FLINT 3.5 / H.1; safety/)."""

    # None means every table (column) the database has; names compare case-insensitively.
    allowed_tables: frozenset[str] | None = None
    allowed_columns: dict[str, frozenset[str]] | None = None
    # Functions beyond the dialect's built-in allow-list (safety/functions.py), by name.
    # Each must be a function of the database that neither writes nor reads outside the query.
    extra_functions: frozenset[str] = frozenset()
    # The few catalog views introspection reads (information_schema.tables/columns,
    # sqlite_master, duckdb_tables()/duckdb_columns()); every other catalog is always refused.
    catalog_views: bool = False
    max_joins: int = Field(12, ge=0)
    default_limit: int = Field(1000, ge=1)
    # Bounds on the statement itself, so that checking it stays cheap: parsing costs about
    # 0.1 ms a token, so 5,000 tokens (an IN list of 2,000 values) check in well under a
    # second, and a 6,000-term OR chain (24,000 tokens) is refused before it is parsed.
    max_tokens: int = Field(5_000, ge=100)
    max_depth: int = Field(64, ge=4)  # nested queries, function calls and parentheses

    @field_validator("extra_functions", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        if isinstance(value, str):
            value = [v for v in value.replace("+", ",").split(",")]
        return frozenset(str(v).strip().lower() for v in value or () if str(v).strip())


class GenerationConfig(_Frozen):
    """How the single-pass generator builds its prompt and recovers from errors."""

    schema_format: Literal["m-schema", "ddl"] = "m-schema"
    with_examples: bool = True  # example values in the schema
    reflection_retries: int = Field(1, ge=0, le=5)
    # A failed query is mended without a model call where the fix is mechanical (a column
    # under the wrong table's name, x ^ n on SQLite) and run again: strategies/feedback.py.
    repair: bool = True
    # Free SQL is decoded under a grammar of the schema the prompt shows (schema/grammar.py):
    # the model cannot name a table or column that does not exist.
    constrain: bool = False


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
    # A schema with more tables (a warehouse) is shown per question: its `shortlist_tables`
    # tables the question's words and names point at, and the reference tables they use
    # (schema/shortlist.py); every stage's prompt then grows with the question, not the schema.
    overview_tables: int = Field(60, ge=1)
    shortlist_tables: int = Field(12, ge=2, le=60)
    reflection: bool = True  # retry on an execution error or an unexpected empty result
    k: int = Field(3, ge=0, le=20)  # examples retrieved
    embeddings: bool = True  # retrieve by embedding when available, else lexically
    max_reference_rows: int = Field(100, ge=1, le=2000)  # rows of one table shown to the model
    entity_threshold: float = Field(0.85, gt=0.0, le=1.0)  # fuzzy score a name link needs
    stop_on_unknown_entity: bool = True  # a name that matches nothing: say so, do not guess


class CompiledConfig(_Frozen):
    """The compiled path (strategies/compiled.py): a verified query, or a semantic request the
    model fills under a JSON schema and groundsql compiles; else the grounded pipeline."""

    k: int = Field(3, ge=0, le=10)  # solved examples (with their requests) shown to the model
    retries: int = Field(1, ge=0, le=3)  # turns to correct a request that does not compile or run
    verified: bool = True  # answer from a verified query when the question fits one
    # How alike a question and a verified query's question must read, their values masked
    # (semantic/verified.py; measured in BENCHMARKS.md).
    verified_threshold: float = Field(0.9, gt=0.0, le=1.0)
    # An answer an editor confirmed (feedback) whose question names values its SQL holds is a
    # verified query too, from the next question on (measured in BENCHMARKS.md, "Learning").
    learned_verified: bool = True
    fallback: bool = True  # the grounded pipeline when no request fits; off: say why instead
    # A semantic model with more fields is shown in part: the logical tables each question
    # speaks of, at most `scope_tables` (semantic/scope.py; a warehouse's thousands of fields
    # would not fit the model's context).
    whole_catalog_fields: int = Field(400, ge=1)
    scope_tables: int = Field(8, ge=1, le=50)
    # Where the model's names show subject areas, a question reads its area whole (the same
    # prompt for every question of the area: its state is computed once) and the tables it
    # ranks high beyond it; off: its best `scope_tables` tables alone.
    areas: bool = True
    # Ask back when the question is ambiguous, say "out of scope" when the data cannot answer
    # (strategies/clarify.py; measured in BENCHMARKS.md, "Ask back").
    ask_back: bool = True


class CompressionConfig(_Frozen):
    """Schema compression (IESR 3.1, schema/compress.py): which tables and columns a question
    keeps, by shared 3-grams of names and values and by embedding similarity."""

    # Read per question: 3-grams find candidates loosely (this share of them in common),
    # rapidfuzz confirms them.
    trigram_threshold: float = Field(0.3, gt=0.0, le=1.0)
    values_per_column: int = Field(1000, ge=0)  # distinct text values indexed per column
    # Read per question.
    match_threshold: float = Field(0.85, gt=0.0, le=1.0)  # rapidfuzz ratio a match needs
    embedding_weight: float = Field(0.5, ge=0.0, le=2.0)  # cosine's share of a column's score
    table_threshold: float = Field(0.5, ge=0.0)  # a column (or table name) this salient keeps its table
    column_threshold: float = Field(0.3, ge=0.0)  # a kept table's column this relevant is kept
    max_columns: int = Field(40, ge=1)  # overall; keys that keep the schema joinable come on top
    min_columns_per_table: int = Field(3, ge=1)
    whole_below_columns: int = Field(30, ge=0)  # a schema with at most this many is kept whole
    max_span_words: int = Field(6, ge=1, le=12)  # longest question span compared with values

ACTIONS = ("equation_analysis", "schema_selection", "identify_columns", "entity_extraction",
           "sql_generation", "sql_revision")


class SearchConfig(_Frozen):
    """The search strategy (IESR): understanding, schema compression, Monte Carlo Tree Search
    over six actions with an execution self-consistency reward, trajectory selection. Every
    switch is an ablation; the defaults keep a question under a tenth of IESR's 124 calls."""

    understanding: bool = True  # the semantic state (one structured call) and its rule check
    compression: bool = True  # schema compression; off: the whole schema
    # The actions the tree may take ("+"-separated on the command line); SQL generation always.
    actions: tuple[str, ...] = ACTIONS
    rollouts: int = Field(6, ge=1, le=64)  # the search budget
    root_samples: int = Field(3, ge=1, le=8)  # direct generations from the root, tried first (the first greedy)
    # The first of them is the zero-shot generator's own call (the whole schema, its prompt),
    # greedy, so the pool holds the baseline's query: "compressed" when the search's view
    # leaves columns out (then it is a second view of the schema), "always", or "never".
    baseline_sample: Literal["compressed", "always", "never"] = "compressed"
    exploration: float = Field(1.0, ge=0.0)  # UCT's constant c
    depth: int = Field(6, ge=2, le=10)  # the longest trajectory, in actions
    temperature: float = Field(0.7, ge=0.0, le=2.0)  # expansions after the first, greedy rollout
    probe_variants: int = Field(2, ge=0, le=8)  # populated variants the reward executes on
    discriminator: bool = True  # mask-and-complete check of the leading candidates
    discriminated: int = Field(2, ge=1, le=8)  # how many leading candidates are checked
    weights: tuple[float, float, float] = (0.4, 0.2, 0.4)  # Exec, DiscConf, ConsVote
    # A trajectory through reasoning actions votes with this weight, a direct sample with 1.
    reasoning_vote: float = Field(0.5, ge=0.0, le=1.0)
    early_stop: int = Field(3, ge=0)  # stop when this many trajectories agree (0: never)
    max_calls: int = Field(12, ge=1, le=200)  # a hard cap per question
    compression_settings: CompressionConfig = CompressionConfig()

    @field_validator("actions", mode="before")
    @classmethod
    def _listed(cls, value: object) -> object:
        if isinstance(value, str):
            value = tuple(a.strip() for a in value.replace(",", "+").split("+") if a.strip())
        unknown = [a for a in value if a not in ACTIONS] if isinstance(value, (list, tuple)) else []
        if unknown:
            raise ValueError(f"unknown action(s) {', '.join(unknown)} (known: {', '.join(ACTIONS)})")
        if isinstance(value, (list, tuple)) and "sql_generation" not in value:
            value = (*value, "sql_generation")
        return value

    @field_validator("baseline_sample", mode="before")
    @classmethod
    def _switch(cls, value: object) -> object:
        return ("always" if value else "never") if isinstance(value, bool) else value

    @field_validator("weights")
    @classmethod
    def _weights(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        if any(w < 0 for w in value) or sum(value) <= 0:
            raise ValueError("weights must be non-negative and not all zero")
        return value


class AutoConfig(_Frozen):
    """`auto`: grounded where the database has a domain pack; elsewhere the search, or
    self-consistency when the budget is fast (strategies/auto.py says why)."""

    budget: Literal["thorough", "fast"] = "thorough"


class ConversationConfig(_Frozen):
    """Follow-up questions (conversation/): a follow-up is made standalone against the
    conversation's last turns, which the generator is also shown. Off: every question is
    answered on its own (the ablation)."""

    enabled: bool = True
    turns: int = Field(3, ge=1, le=20)  # the earlier turns a follow-up is read against
    # Evaluation only: the earlier turns as their gold queries, not as the strategy answered
    # them, to measure following up apart from the errors of earlier turns.
    gold_history: bool = False


class Settings(_Frozen):
    llm: LLMConfig = LLMConfig()
    database: DatabaseConfig = DatabaseConfig()
    safety: SafetyConfig = SafetyConfig()
    generation: GenerationConfig = GenerationConfig()
    few_shot: FewShotConfig = FewShotConfig()
    self_consistency: SelfConsistencyConfig = SelfConsistencyConfig()
    grounded: GroundedConfig = GroundedConfig()
    compiled: CompiledConfig = CompiledConfig()
    search: SearchConfig = SearchConfig()
    conversation: ConversationConfig = ConversationConfig()
    auto: AutoConfig = AutoConfig()
