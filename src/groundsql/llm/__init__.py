"""Language models: one interface (`LLM`), backends beside it, and `build_llm` to pick one."""

from __future__ import annotations

import os
from pathlib import Path

from groundsql.config import LLMConfig, data_home
from groundsql.errors import ConfigError
from groundsql.llm.base import LLM, ChatRequest, Completion, Message, chat
from groundsql.llm.store import CachedLLM, ReplayLLM, ResponseStore


def build_llm(config: LLMConfig) -> LLM:
    """The backend `config` names, behind the disk cache when caching is on."""
    inner: LLM
    if config.backend == "replay":
        if config.replay_dir is None:
            raise ConfigError("the replay backend needs llm.replay_dir (a folder of recordings)")
        record_from = None
        if config.record or os.environ.get("GROUNDSQL_RECORD") == "1":
            record_from = _live_backend(config)
        return ReplayLLM(ResponseStore(Path(config.replay_dir)), config.model, record_from)
    inner = _live_backend(config)
    if config.cache:
        return CachedLLM(inner, ResponseStore(config.cache_dir or data_home() / "llm-cache", cache=True))
    return inner


def _live_backend(config: LLMConfig) -> LLM:
    if config.backend == "openai" or (config.backend == "replay" and config.base_url):
        from groundsql.llm.openai_http import OpenAICompatibleLLM

        return OpenAICompatibleLLM(
            config.model,
            base_url=config.base_url,
            api_key=config.api_key,
            timeout_s=config.timeout_s,
            retries=config.retries,
        )
    from groundsql.llm.llamacpp import LlamaCppLLM

    from groundsql.llm.kvstore import PrefixStore

    states = None
    if config.prefix_cache and config.prefix_cache_mb > 0:
        states = PrefixStore(config.prefix_cache_dir or data_home() / "prompt-states",
                             config.prefix_cache_mb * 2**20)
    return LlamaCppLLM(
        config.model,
        n_ctx=config.n_ctx,
        n_threads=config.n_threads,
        timeout_s=config.timeout_s,
        retries=config.retries,
        parallel=config.parallel,
        prefix_store=states,
    )


__all__ = ["LLM", "ChatRequest", "Completion", "Message", "chat", "build_llm"]
