"""Retrieval of solved examples from a query bank."""

from groundsql.retrieval.bank import Example, QueryBank

__all__ = ["Example", "QueryBank"]
