"""Spider's hardness levels (easy, medium, hard, extra), from the parsed `sql` field of its items.

A faithful port of `eval_hardness` and its counting helpers in Spider's official evaluation.py
(Yu et al., 2018), quirks included (e.g. a negated WHERE condition counts as an aggregation,
because the official code reads the NOT flag where it means the aggregation id), so our
breakdowns line up with published per-hardness numbers.
"""

from __future__ import annotations

from typing import Any

_LIKE = 9  # WHERE_OPS.index("like") in the official code
_NO_AGG = 0  # AGG_OPS.index("none")


def _has_agg(unit: Any) -> bool:
    return unit[0] != _NO_AGG


def _count_agg(units: list) -> int:
    return sum(1 for unit in units if _has_agg(unit))


def _nested(sql: dict) -> list[dict]:
    conds = sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]
    nested = [value for cond in conds for value in (cond[3], cond[4]) if isinstance(value, dict)]
    nested += [sql[key] for key in ("intersect", "except", "union") if sql[key] is not None]
    return nested


def _component1(sql: dict) -> int:
    count = sum(1 for key in ("where", "groupBy", "orderBy") if sql[key])
    count += sql["limit"] is not None
    if sql["from"]["table_units"]:
        count += len(sql["from"]["table_units"]) - 1  # joins
    connectors = sql["from"]["conds"][1::2] + sql["where"][1::2] + sql["having"][1::2]
    count += connectors.count("or")
    conds = sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]
    count += sum(1 for cond in conds if cond[1] == _LIKE)
    return count


def _others(sql: dict) -> int:
    aggs = _count_agg(sql["select"][1]) + _count_agg(sql["where"][::2]) + _count_agg(sql["groupBy"])
    if sql["orderBy"]:
        units = [u[1] for u in sql["orderBy"][1] if u[1]] + [u[2] for u in sql["orderBy"][1] if u[2]]
        aggs += _count_agg(units)
    aggs += _count_agg(sql["having"])
    return sum(
        (
            aggs > 1,
            len(sql["select"][1]) > 1,
            len(sql["where"]) > 1,
            len(sql["groupBy"]) > 1,
        )
    )


def spider_hardness(sql: dict) -> str:
    c1, c2, others = _component1(sql), len(_nested(sql)), _others(sql)
    if c1 <= 1 and others == 0 and c2 == 0:
        return "easy"
    if (others <= 2 and c1 <= 1 and c2 == 0) or (c1 <= 2 and others < 2 and c2 == 0):
        return "medium"
    if (
        (others > 2 and c1 <= 2 and c2 == 0)
        or (2 < c1 <= 3 and others <= 2 and c2 == 0)
        or (c1 <= 1 and others == 0 and c2 <= 1)
    ):
        return "hard"
    return "extra"
