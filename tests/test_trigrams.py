"""The 3-gram index behind entity linking and schema compression (grounding/trigrams.py), and
entity names read in chunks (grounding/entities.py)."""

from __future__ import annotations

import random
import sqlite3

import pytest

from groundsql.db import Database
from groundsql.grounding import entities, trigrams
from groundsql.grounding.entities import EntityIndex
from groundsql.grounding.trigrams import TrigramIndex
from groundsql.packs.model import EntityTable

WORDS = "alder bright cedar glen hazel maple north raven silver thorn water field stone brook " \
        "logistics timber foods systems metals motors energy".split()


def _names(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return sorted({" ".join(rng.sample(WORDS, rng.randint(1, 4))) for _ in range(n)})


def _similarity(a: str, b: str) -> float:
    ga, gb = trigrams.trigrams(a), trigrams.trigrams(b)
    return len(ga & gb) / len(ga | gb)


@pytest.mark.parametrize("postings, candidates", [(30_000, 1_000), (5, 1_000), (1, 3)])
def test_similar_matches_the_exact_similarity(monkeypatch, postings: int, candidates: int) -> None:
    # Whatever the budgets, a returned string's score is its exact 3-gram similarity; with
    # budgets that read every posting, exactly the strings above the threshold come back
    # (tight budgets may miss strings that share none of the query's rarest 3-grams).
    monkeypatch.setattr(trigrams, "_POSTINGS", postings)
    monkeypatch.setattr(trigrams, "_CANDIDATES", candidates)
    texts = _names(400)
    index = TrigramIndex(texts)
    for query in ("silver brook logistics", "maple tmber", "north", "energy motors glen"):
        found = index.similar(query, threshold=0.3, limit=1_000)
        for i, score in found:
            assert score == pytest.approx(_similarity(query, texts[i]))
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        expected = {i for i, t in enumerate(texts) if _similarity(query, t) >= 0.3}
        assert {i for i, _ in found} <= expected
        if postings >= 30_000:
            assert {i for i, _ in found} == expected


def test_a_misspelt_name_finds_its_string_first() -> None:
    texts = _names(2_000)
    index = TrigramIndex(texts)
    target = next(t for t in texts if len(t) > 20)
    typo = target[:5] + target[6:]
    assert texts[index.similar(typo, limit=1)[0][0]] == target


@pytest.mark.parametrize("texts, query", [([], "acme"), (["", ""], "acme"), (["ab"], "zzz"), (["acme"], "")])
def test_nothing_to_find(texts: list[str], query: str) -> None:
    assert TrigramIndex(texts).similar(query) == []


def test_non_ascii_names() -> None:
    index = TrigramIndex(["müller maschinenbau", "mueller maschinenbau", "société générale", "東京電力"])
    assert index.similar("muller maschinenbau", limit=1)[0][0] in (0, 1)
    assert index.similar("societe generale", threshold=0.2, limit=1)[0][0] == 2
    assert index.similar("東京電力", limit=1) == [(3, 1.0)]


def test_a_repeated_trigram_counts_once() -> None:
    index = TrigramIndex(["aaaaaa", "aaa"])
    scores = dict(index.similar("aaaaaa", threshold=0.0))
    assert scores[0] == 1.0 and scores[1] == pytest.approx(_similarity("aaaaaa", "aaa"))


# -- entity names read in chunks ----------------------------------------------------------------


@pytest.fixture()
def people(tmp_path):
    path = tmp_path / "people.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE person (person_id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT)")
    conn.executemany("INSERT INTO person VALUES (?, ?, ?)",
                     [(i * 7 + 3, f"Ann{i:02d}", f"Smith{i:02d}") for i in range(23)])
    conn.commit()
    conn.close()
    return Database(f"sqlite:///{path}")


def test_entity_names_are_read_in_chunks(monkeypatch, people: Database) -> None:
    monkeypatch.setattr(entities, "_CHUNK", 5)
    table = EntityTable(table="person", key="person_id", names=("first_name", "last_name"), kind="person")
    index = EntityIndex.build(people, [table])
    assert len({n.key for n in index.names}) == 23 and index.truncated == ()
    match = index.link("What did Ann17 Smith17 buy?")[0][0]
    assert match.key == 17 * 7 + 3


def test_an_entity_table_cut_short_is_said(monkeypatch, people: Database) -> None:
    monkeypatch.setattr(entities, "_CHUNK", 5)
    table = EntityTable(table="person", key="person_id", names=("last_name",), kind="person")
    index = EntityIndex.build(people, [table], max_names=12)
    assert len(index.names) == 12 and index.truncated == ("person",)


def test_of_names_that_differ_only_in_legal_form_the_one_spelled_as_asked_wins(tmp_path) -> None:
    path = tmp_path / "companies.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE company (company_id INTEGER PRIMARY KEY, company_name TEXT)")
    conn.executemany("INSERT INTO company VALUES (?, ?)",
                     [(1, "Ashshaw Tools AB"), (2, "Ashshaw Tools Inc."), (3, "Ashshaw Tools GmbH")])
    conn.commit()
    conn.close()
    table = EntityTable(table="company", key="company_id", names=("company_name",), kind="company")
    index = EntityIndex.build(Database(f"sqlite:///{path}"), [table])
    for asked, key in (("Ashshaw Tools Inc", 2), ("Ashshaw Tools GmbH", 3), ("ashshaw tools ab", 1)):
        assert index.link(f"What did {asked} buy?")[0][0].key == key, asked
