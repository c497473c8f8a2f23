"""Retrieval of solved examples from a query bank."""

from groundsql.retrieval.bank import Example, QueryBank
from groundsql.retrieval.embeddings import Embedder, load_embedder

__all__ = ["Embedder", "Example", "QueryBank", "load_embedder"]
