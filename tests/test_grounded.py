"""The grounded pipeline on the real demo database: each stage, and the strategy end to end with
a scripted model (plumbing only: no accuracy is claimed from a script)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundsql.api import demo_database_url
from groundsql.config import Settings
from groundsql.db import Database
from groundsql.errors import ConfigError
from groundsql.grounding.entities import EntityIndex, names_a_value, normalize_name
from groundsql.grounding.lookup import constraints_from, read_reference
from groundsql.llm.base import LLM, ChatRequest, Completion
from groundsql.packs.load import check_pack, load_pack
from groundsql.packs.model import EntityTable, ReferenceTable
from groundsql.schema.linking import connect
from groundsql.strategies import Context, get_strategy
from tests.conftest import BENCHMARKS, shared_file, spider_db

PACK_YAML = """\
name: findemo-test
description: A small pack for tests.
references:
  - table: ref_data_item
    key: data_item_id
    label: data_item_name
    description: financial metrics
    extra: [category]
  - table: ref_period_type
    key: period_type_id
    label: period_type_name
entities:
  - table: company
    key: company_id
    names: [company_name]
    kind: company
rules:
  generation:
    - Revenue means Total Revenue.
"""
SCHEMA_YAML = """\
tables:
  company:
    description: Companies.
    columns:
      company_name: The legal name.
joins:
  - left: financial_period.company_id
    right: company.company_id
"""
BANK = [
    {"question": "What was the annual EBITDA of Ashcombe Marsh in 2022?", "reasoning": "...",
     "sql": "SELECT 1"},
    {"question": "List the companies in Germany", "reasoning": "...", "sql": "SELECT 2"},
]


@pytest.fixture
def pack_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "pack"
    folder.mkdir()
    (folder / "pack.yaml").write_text(PACK_YAML)
    (folder / "schema.yaml").write_text(SCHEMA_YAML)
    (folder / "bank.jsonl").write_text("\n".join(json.dumps(b) for b in BANK) + "\n")
    return folder


@pytest.fixture(scope="module")
def demo() -> Database:
    return Database(demo_database_url())


class ByPrompt(LLM):
    """Answers each grounded stage by what its user turn asks; records every request."""

    def __init__(self, **answers: str | list[str]) -> None:
        self.answers = {k: list(v) if isinstance(v, list) else [v] for k, v in answers.items()}
        self.requests: list[ChatRequest] = []
        self.model_id = "by-prompt"
        self.retries = 0
        self.retry_backoff_s = 0.0

    def _complete(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        text = request.messages[-1].content
        stage = ("pick" if "Which reference tables" in text else
                 "constraints" if "Rows of the reference tables" in text else
                 "link" if "Which tables does" in text else "generate")
        queue = self.answers[stage]
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        return Completion(text=answer, model=self.model_id, prompt_tokens=10, completion_tokens=5)

    def stages(self) -> list[str]:
        return [("pick" if "Which reference tables" in r.messages[-1].content else
                 "constraints" if "Rows of the reference" in r.messages[-1].content else
                 "link" if "Which tables does" in r.messages[-1].content else "generate")
                for r in self.requests]


REVENUE_SQL = (
    "SELECT fd.data_value FROM financial_data fd JOIN financial_period fp "
    "ON fd.financial_period_id = fp.financial_period_id WHERE fp.company_id = 9226005 "
    "AND fd.data_item_id = 28 AND fp.period_type_id = 1 AND fp.fiscal_year = 2023")


def scripted(**overrides: str | list[str]) -> ByPrompt:
    answers = {
        "pick": '{"tables": ["ref_data_item", "ref_period_type", "not_a_reference"]}',
        "constraints": json.dumps({"constraints": [
            {"table": "ref_data_item", "id": 28, "phrase": "revenue"},
            {"table": "ref_period_type", "id": 1, "phrase": "annual"},
            {"table": "ref_data_item", "id": 123456, "phrase": "made up"}]}),
        "link": '{"tables": ["financial_data", "company"], "columns": ["ref_period_type.period_type_name"], '
                '"reason": "revenue figures of a company"}',
        "generate": f"```sql\n{REVENUE_SQL}\n```",
    }
    answers.update(overrides)
    return ByPrompt(**answers)


def run(demo: Database, pack_dir: Path, question: str, llm: LLM, **grounded):
    settings = Settings.model_validate({"grounded": {"pack": str(pack_dir), "embeddings": False, **grounded}})
    ctx = Context(db=demo, llm=llm, settings=settings)
    return get_strategy("grounded")(question, ctx)


def company_id(demo: Database, name: str) -> int:
    return demo.execute(f"SELECT company_id FROM company WHERE company_name LIKE '{name}%'").rows[0][0]


def test_grounded_end_to_end_shows_its_grounds(demo, pack_dir) -> None:
    ashcombe = company_id(demo, "Ashcombe Marsh")
    llm = scripted(generate=f"```sql\n{REVENUE_SQL.replace('9226005', str(ashcombe))}\n```")
    answer = run(demo, pack_dir, "What was the annual revenue of Ashcombe Marsh in 2023?", llm)
    assert answer.ok and answer.rows, answer.error
    assert llm.stages() == ["pick", "constraints", "link", "generate"]
    # Every stage shares the one system prompt, so a local backend computes it once.
    assert len({r.messages[0].content for r in llm.requests}) == 1
    grounds = answer.grounds
    filters = {c["filter"]: c for c in grounds["constraints"]}
    assert filters["ref_data_item.data_item_id = 28"]["label"] == "Total Revenue"
    assert filters["ref_period_type.period_type_id = 1"]["source"] == "lookup"
    entity = filters[f"company.company_id = {ashcombe}"]
    assert entity["source"] == "entity" and entity["label"] == "Ashcombe Marsh plc"
    assert entity["phrase"] == "Ashcombe Marsh" and entity["confidence"] == 1.0
    assert not any("123456" in f for f in filters)  # an ID the model was not shown is dropped
    dropped = next(s for s in answer.steps if s.name == "lookup: write constraints").detail["dropped"]
    assert "123456" in dropped[0]
    tables = {t["table"]: t["why"] for t in grounds["tables"]}
    assert tables["financial_period"].startswith("bridge")  # added by the FK graph
    assert "chosen by the model" in tables["company"]
    assert grounds["examples"][0] == BANK[0]["question"] and grounds["retrieval"].startswith("lexical")
    generate = llm.requests[-1].messages[-1].content
    assert "company.company_id = " in generate and "ref_data_item.data_item_id = 28" in generate
    assert "price_daily" not in generate.split("Question:")[0]  # an unlinked table is left out
    assert json.dumps(answer.to_dict())  # the grounds are JSON-ready
    # Structured outputs are held to the real names by the grammar, and bounded.
    pick, = (r for r in llm.requests if "Which reference tables" in r.messages[-1].content)
    listed = pick.json_schema["properties"]["tables"]
    assert listed["items"]["enum"] == ["ref_data_item", "ref_period_type"] and listed["maxItems"] >= 1
    link, = (r for r in llm.requests if "Which tables does" in r.messages[-1].content)
    assert "price_daily" in link.json_schema["properties"]["tables"]["items"]["enum"]


def test_an_unknown_entity_is_reported_not_invented(demo, pack_dir) -> None:
    llm = scripted()
    answer = run(demo, pack_dir, "What was the annual revenue of Zyxcorp Quantum in 2023?", llm)
    assert not answer.ok and answer.sql is None
    assert "No company named 'Zyxcorp Quantum'" in answer.error
    assert "did not guess" in answer.error
    assert "generate" not in llm.stages()


def test_an_empty_result_from_a_missing_value_gets_one_reflection(demo, pack_dir) -> None:
    ashcombe = company_id(demo, "Ashcombe Marsh")
    good = REVENUE_SQL.replace("9226005", str(ashcombe))
    empty = good.replace("2023", "1890")
    llm = scripted(generate=[f"```sql\n{empty}\n```", f"```sql\n{good}\n```"])
    answer = run(demo, pack_dir, "What was the annual revenue of Ashcombe Marsh in 2023?", llm)
    assert answer.ok and answer.rows and "2023" in answer.sql
    assert llm.stages().count("generate") == 2
    told = llm.requests[-1].messages[-1].content
    assert "financial_period.fiscal_year = 1890 matches no row" in told
    assert "closest values in fiscal_year: 2019" in told  # the nearest years in the data
    # Without reflection the empty result stands.
    llm = scripted(generate=[f"```sql\n{empty}\n```", f"```sql\n{good}\n```"])
    answer = run(demo, pack_dir, "What was the annual revenue of Ashcombe Marsh in 2023?", llm,
                 reflection=False)
    assert answer.ok and answer.rows == () and llm.stages().count("generate") == 1


QUESTION = "What was the annual revenue of Ashcombe Marsh in 2023?"


def test_a_query_that_ignores_a_resolved_value_gets_one_more_turn(demo, pack_dir) -> None:
    good = REVENUE_SQL.replace("9226005", str(company_id(demo, "Ashcombe Marsh")))
    every_item = good.replace(" AND fd.data_item_id = 28", "")  # sums every metric of the year
    llm = scripted(generate=[f"```sql\n{every_item}\n```", f"```sql\n{good}\n```"])
    answer = run(demo, pack_dir, QUESTION, llm)
    assert answer.ok and "fd.data_item_id = 28" in answer.sql
    told = llm.requests[-1].messages[-1].content
    assert 'does not use these resolved values' in told and '"revenue" is ref_data_item.data_item_id = 28' in told
    check = next(s for s in answer.steps if s.name == "check grounds")
    assert check.detail["unused"] == ["ref_data_item.data_item_id = 28"]
    # The model keeps its query: the first answer stands, after one more call.
    llm = scripted(generate=f"```sql\n{every_item}\n```")
    answer = run(demo, pack_dir, QUESTION, llm)
    assert answer.ok and "data_item_id = 28" not in answer.sql and llm.stages().count("generate") == 2
    # A retry that runs but finds nothing is not taken either.
    empty = good.replace("2023", "1890")
    llm = scripted(generate=[f"```sql\n{every_item}\n```", f"```sql\n{empty}\n```"])
    answer = run(demo, pack_dir, QUESTION, llm)
    assert answer.ok and answer.rows and "data_item_id = 28" not in answer.sql
    # Without reflection: flagged in the trace, no more calls.
    llm = scripted(generate=f"```sql\n{every_item}\n```")
    answer = run(demo, pack_dir, QUESTION, llm, reflection=False)
    assert llm.stages().count("generate") == 1
    assert next(s for s in answer.steps if s.name == "check grounds").detail["unused"]


def test_a_join_the_query_reads_nothing_from_is_flagged_not_retried(demo, pack_dir) -> None:
    good = REVENUE_SQL.replace("9226005", str(company_id(demo, "Ashcombe Marsh")))
    joined = good.replace("WHERE", "JOIN company c ON c.company_id = fp.company_id WHERE")
    llm = scripted(generate=f"```sql\n{joined}\n```")
    answer = run(demo, pack_dir, QUESTION, llm)
    assert answer.ok and llm.stages().count("generate") == 1
    assert answer.to_dict()["grounds"]["idle_joins"] == ["company"]
    # The same query without the join: nothing flagged.
    answer = run(demo, pack_dir, QUESTION, scripted(generate=f"```sql\n{good}\n```"))
    assert "idle_joins" not in answer.to_dict()["grounds"]


def test_an_empty_result_whose_values_all_exist_stands(demo, pack_dir) -> None:
    # Every value exists; only their combination matches nothing: a true empty answer.
    ashcombe = company_id(demo, "Ashcombe Marsh")
    empty = REVENUE_SQL.replace("9226005", str(ashcombe)).replace(
        "fd.data_item_id = 28", "fd.data_item_id = 28 AND fd.data_value < -1e15")
    llm = scripted(generate=[f"```sql\n{empty}\n```", "```sql\nSELECT 1\n```"])
    answer = run(demo, pack_dir, "What was the annual revenue of Ashcombe Marsh in 2023?", llm)
    assert answer.ok and answer.rows == () and llm.stages().count("generate") == 1
    check = next(s for s in answer.steps if s.name == "check filter values")
    assert check.detail["missing"] == []


def test_ablations_switch_stages_off(demo, pack_dir) -> None:
    llm = scripted()
    answer = run(demo, pack_dir, "What was the annual revenue of Ashcombe Marsh in 2023?", llm,
                 lookup=False, schema_linking=False, retrieval=False, entity_linking=False,
                 reflection=False)
    assert llm.stages() == ["generate"]
    assert answer.grounds["constraints"] == [] and answer.grounds["examples"] == []
    assert len(answer.grounds["tables"]) == len(demo.introspect().tables)  # the whole schema
    # ... as the shared overview only: no table is rendered in detail for generation.
    generate = llm.requests[-1].messages[-1].content
    assert "every table listed above" in generate and "# Table:" not in generate


def test_a_pack_with_a_mistake_names_file_line_and_field(pack_dir, demo) -> None:
    (pack_dir / "pack.yaml").write_text(PACK_YAML.replace("    key: period_type_id\n", ""))
    with pytest.raises(ConfigError, match=r"pack\.yaml:9: references\.1\.key: Field required"):
        load_pack(pack_dir)
    (pack_dir / "pack.yaml").write_text(PACK_YAML.replace("names: [company_name]", "names: [company_nam]"))
    pack = load_pack(pack_dir)
    with pytest.raises(ConfigError, match=r"pack\.yaml:15: entities\.0\.names\.0: table 'company' "
                                          r"has no column 'company_nam'"):
        check_pack(pack, demo.introspect(), pack_dir)
    (pack_dir / "schema.yaml").write_text(SCHEMA_YAML.replace("company.company_id", "company"))
    with pytest.raises(ConfigError, match=r"schema\.yaml:8: joins\.0\.right: .*table\.column"):
        load_pack(pack_dir)
    (pack_dir / "pack.yaml").write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match=r"pack\.yaml:2: not valid YAML"):
        load_pack(pack_dir)
    with pytest.raises(ConfigError, match="not a domain pack"):
        load_pack(pack_dir / "nowhere")


def test_the_test_pack_passes_its_check(pack_dir, demo) -> None:
    check_pack(load_pack(pack_dir), demo.introspect(), pack_dir)


def test_schema_linking_adds_bridges_and_reports_the_unconnectable(demo) -> None:
    schema = demo.introspect()
    linked = connect(schema, ["company", "financial_data", "ref_data_item", "nonsense"])
    assert set(linked.tables) == {"company", "financial_data", "ref_data_item", "financial_period"}
    assert linked.bridges == ("financial_period",)
    assert {str(j) for j in linked.joins} == {
        "financial_data.data_item_id = ref_data_item.data_item_id",
        "financial_data.financial_period_id = financial_period.financial_period_id",
        "financial_period.company_id = company.company_id"}
    assert connect(schema, ["company"]).joins == ()


def test_schema_linking_on_a_schema_in_unconnected_parts() -> None:
    # flight_2: airlines has no foreign key, so the join graph has two parts.
    schema = Database(f"sqlite:///{spider_db('flight_2')}").introspect()
    linked = connect(schema, ["flights", "airports", "airlines"])
    assert set(linked.tables) == {"flights", "airports", "airlines"}
    assert linked.unconnected == ("airlines",)
    assert {str(j) for j in linked.joins} == {"flights.DestAirport = airports.AirportCode",
                                              "flights.SourceAirport = airports.AirportCode"}


def test_entity_linking_finds_names_typos_and_misses(demo) -> None:
    index = EntityIndex.build(demo, [EntityTable(table="company", key="company_id",
                                                 names=("company_name",), kind="company")],
                              known_words=["Germany", "Total Revenue", "EBITDA", "Swiss Franc"])
    matches, unresolved = index.link("Compare the EBITDA of Ashcombe Marsh and Aurora Therapeutics plc")
    assert {m.name for m in matches} == {"Ashcombe Marsh plc", "Aurora Therapeutics plc"}
    assert all(m.confidence == 1.0 for m in matches) and unresolved == []
    matches, _ = index.link("What was the revenue of Albion Technolgies Ltd in 2022?")
    assert matches[0].name == "Albion Technologies Limited" and 0.9 < matches[0].confidence < 1.0
    matches, unresolved = index.link("How many companies are headquartered in Germany?")
    assert matches == [] and unresolved == []
    # Calendar words, and words of values the data holds, are no unknown entities.
    assert index.link("Volume of Ashcombe Marsh in March 2023, in Swiss francs?")[1] == []
    _, unresolved = index.link("What is the total revenue of Zyxcorp Quantum?")
    assert [u.mention for u in unresolved] == ["Zyxcorp Quantum"] and unresolved[0].confidence < 0.7
    assert normalize_name("Acme Holdings, Inc.") == "acme"
    # A company is named without its legal form, its "Holdings" or its "Group" as often as with.
    for question, name in [
        ("What was Foxhollow Systems' gross margin in 2023?", "Foxhollow Systems Holdings, Inc."),
        ("What percentage of Tenryu Retail changed hands?", "Tenryu Retail K.K."),
        ("What was Nordvik Medical's average quarterly revenue?", "Nordvik Medical AB (publ)"),
    ]:
        assert [m.name for m in index.link(question)[0]] == [name], question
    # Capitalised words that are no names: nationality adjectives, abbreviations, sentence
    # starts, searched-for patterns, hyphenated words of known values.
    for question, unknown in [
        ("What is the average age of the French singers?", []),
        ("List the German companies.", []),
        ("How many M&A deals closed? Order by year.", []),
        ("List the IDs of all companies.", []),
        ("Which companies have a name containing 'Quantum'?", []),
        ("List the Germany-based companies.", []),
        ("What did 'Zyxcorp Quantum' earn?", ["Zyxcorp Quantum"]),
        ("Compare Zorblat with Ashcombe Marsh.", ["Zorblat"]),
    ]:
        assert [u.mention for u in index.link(question)[1]] == unknown, question
    people = EntityIndex.build(demo, [EntityTable(table="person", key="person_id",
                                                  names=("first_name", "last_name"), kind="person")])
    first, last = demo.execute("SELECT first_name, last_name FROM person LIMIT 1").rows[0]
    matches, _ = people.link(f"Which companies did {first} {last} work for?")
    assert [m.name for m in matches] == [f"{first} {last}"]  # a name spread over two columns



def test_entity_tables_without_rows_deny_no_name() -> None:
    """LogicCat's databases ship without rows: there, no name is 'not found'."""
    with Database(f"sqlite:///{shared_file(BENCHMARKS / 'logiccat/database/car/car.sqlite')}") as car:
        index = EntityIndex.build(car, [EntityTable(table="manufacturers", key="Manufacturer_ID",
                                                    names=("Name",), kind="manufacturer")])
        assert index.link("Which Tesla models weigh over 2000 kg?") == ([], [])


def test_lookup_reads_rows_narrows_big_tables_and_keeps_only_shown_ids(demo) -> None:
    ref = ReferenceTable(table="company", key="company_id", label="company_name")
    narrowed = read_reference(demo, ref, "revenue of Aurora Therapeutics", limit=5)
    assert narrowed.total > 100 and len(narrowed.rows) == 5
    assert any(r[1] == "Aurora Therapeutics plc" for r in narrowed.rows)
    items = read_reference(demo, ReferenceTable(table="ref_period_type", key="period_type_id",
                                                label="period_type_name"), "quarterly", limit=100)
    assert len(items.rows) == items.total == 5
    kept, problems = constraints_from({"constraints": [
        {"table": "ref_period_type", "id": "2", "phrase": "quarterly"},
        {"table": "ref_period_type", "id": 99, "phrase": "x"},
        {"table": "ref_unit", "id": 3, "phrase": "millions"}]}, [items])
    assert [(c.value, c.label) for c in kept] == [(2, "Quarterly")]
    assert len(problems) == 2
    assert constraints_from("not json", [items]) == ([], [])
    # With the question: a phrase it does not contain is dropped; an id whose row is not the
    # one the phrase names is replaced by the row that is.
    kept, problems = constraints_from({"constraints": [
        {"table": "ref_period_type", "id": 1, "phrase": "quarterly"},
        {"table": "ref_period_type", "id": 3, "phrase": "Semi-Annual"}]}, [items],
        "What was the quarterly revenue?")
    assert [(c.value, c.label, c.phrase) for c in kept] == [(2, "Quarterly", "quarterly")]
    assert "replaced by id 2" in problems[0] and "not in the question" in problems[1]
    # A row that does not say what the phrase says grounds nothing: dropped.
    kept, problems = constraints_from({"constraints": [
        {"table": "ref_period_type", "id": 2, "phrase": "youngest"}]}, [items],
        "Who is the youngest analyst?")
    assert kept == [] and problems == ["ref_period_type id 2 (Quarterly) does not name 'youngest'"]


def test_the_command_line_prints_the_grounds(capsys) -> None:
    from groundsql.cli import _print_grounds

    _print_grounds({
        "constraints": [
            {"phrase": "EBITDA", "filter": "ref_data_item.data_item_id = 4051", "table": "ref_data_item",
             "label": "EBITDA", "source": "lookup", "confidence": 1.0},
            {"phrase": "Ashcombe Marsh", "filter": "company.company_id = 7", "table": "company",
             "label": "Ashcombe Marsh plc", "source": "entity", "confidence": 0.97}],
        "unresolved": [], "tables": [{"table": "financial_period", "why": "bridge: joins"}],
        "examples": ["What was X?"], "retrieval": "lexical"})
    shown = capsys.readouterr().out
    assert "'EBITDA' -> ref_data_item.data_item_id = 4051  (ref_data_item row 'EBITDA', lookup agent)" in shown
    assert "company row 'Ashcombe Marsh plc', 97% name match" in shown
    assert "table financial_period: bridge: joins" in shown and "example (lexical): What was X?" in shown


def test_ablations_are_evaluation_configurations() -> None:
    from groundsql.evaluation.configs import parse_config

    config = parse_config("grounded:lookup=false,schema_linking=off,k=2,pack=/packs", Settings())
    grounded = config.settings.grounded
    assert (grounded.lookup, grounded.schema_linking, grounded.retrieval, grounded.k) == (False, False, True, 2)
    assert str(grounded.pack) == "/packs" and config.strategy == "grounded"
    with pytest.raises(ConfigError, match="unknown option 'lokup'"):
        parse_config("grounded:lokup=false", Settings())


def test_evaluation_over_many_databases_takes_each_its_own_drafted_pack(tmp_path: Path) -> None:
    """`grounded:pack=DIR` with one `groundsql init` draft per database, as on Spider."""
    from groundsql.evaluation.configs import parse_config
    from groundsql.evaluation.runner import EvalRun, load_records
    from groundsql.evaluation.datasets import EvalItem
    from groundsql.packs.draft import draft_pack
    from tests.test_eval_run import EVAL

    db_path = spider_db("concert_singer")
    with Database(f"sqlite:///{db_path}") as db:
        draft_pack(db, tmp_path / "packs" / "concert_singer")
    item = EvalItem(item_id="t/1", db_id="concert_singer", db_url=f"sqlite:///{db_path}",
                    question="How many singers are from France?",
                    gold_sql="SELECT count(*) FROM singer WHERE country = 'France'")
    llm = ByPrompt(link='{"tables": ["singer"], "reason": "singers"}',
                   generate="```sql\nSELECT count(*) FROM singer WHERE country = 'France'\n```")
    config = parse_config(f"grounded:pack={tmp_path / 'packs'},embeddings=false", EVAL)
    EvalRun(items=[item], configs=[config], out_dir=tmp_path / "run", llm=llm).run()
    (record,) = load_records(tmp_path / "run" / "results.jsonl")
    assert record["ex"] is True, record["error"]
    assert record["grounds"]["tables"]  # the record keeps what the answer was based on
    # The draft has no reference tables: no lookup call; "France" is a known value, no entity;
    # four tables are shown whole, without a linking call.
    assert llm.stages() == ["generate"]
    assert "Filter on the resolved values" not in llm.requests[0].messages[-1].content
    system = llm.requests[0].messages[0].content
    assert "Row count" in system  # the schema carries this database's own draft's descriptions
    # A small schema with nothing to ground is asked as zero-shot asks, with the draft's
    # solved examples (groundsql init drafts them from the database's joins and measures).
    assert system.startswith("You are an expert data analyst who writes SQLite SQL.\nGiven the")
    turn = llm.requests[0].messages[-1].content
    assert turn.startswith("Solved examples:") and "singer_in_concert" in turn
    assert turn.endswith("Question: How many singers are from France?")


def test_a_table_name_in_the_singular_is_no_unknown_entity(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "flights.sqlite"
    with sqlite3.connect(path) as con:
        con.executescript("CREATE TABLE airports (code TEXT PRIMARY KEY, AirportName TEXT);"
                          "INSERT INTO airports VALUES ('APG', 'Phillips AAF');")
    con.close()
    folder = tmp_path / "pack"
    folder.mkdir()
    (folder / "pack.yaml").write_text("name: flights\nentities:\n  - table: airports\n    key: code\n"
                                      "    names: [AirportName]\n    kind: airport\n")
    llm = ByPrompt(generate="```sql\nSELECT code FROM airports WHERE code = 'APG'\n```")
    settings = Settings.model_validate({"grounded": {"pack": str(folder), "embeddings": False}})
    with Database(f"sqlite:///{path}") as db:
        answer = get_strategy("grounded")("Which Airport has the code APG?",
                                          Context(db=db, llm=llm, settings=settings))
    assert answer.ok, answer.error


@pytest.mark.parametrize("question, names", [
    ("Where is the youngest teacher from?", False),
    ("List all songs. Which are the longest?", False),  # sentence starts
    ("What are the ids of the dogs' owners?", False),  # a possessive, not a quote
    ("Which singers are from France?", True),
    ("Show the names containing 'Hey'.", True),
    ("How many pets are older than 3?", True),
])
def test_whether_a_question_names_a_value(question: str, names: bool) -> None:
    assert names_a_value(question) is names


def test_an_eval_of_grounded_scores_its_lookup(demo, pack_dir, tmp_path) -> None:
    from groundsql.evaluation.configs import parse_config
    from groundsql.evaluation.datasets import EvalItem
    from groundsql.evaluation.runner import EvalRun, load_records

    good = REVENUE_SQL.replace("9226005", str(company_id(demo, "Ashcombe Marsh")))
    item = EvalItem("demo/1", "demo", demo_database_url(), QUESTION, good)
    config = parse_config(f"grounded:pack={pack_dir},embeddings=false", Settings())
    EvalRun(items=[item], configs=[config], out_dir=tmp_path, llm=scripted()).run()
    (record,) = load_records(tmp_path / "results.jsonl")
    # The gold names the company, the metric and the period type; all three were resolved
    # (lookup: data item 28 and period type 1; entity linking: the company).
    grounding = record["grounding"]
    assert grounding["recall"] == 1.0 and grounding["precision"] == 1.0 and grounding["found"] == 3


def test_under_the_grammar_a_resolved_key_admits_only_its_resolved_values(demo, pack_dir) -> None:
    from tests.test_sql_grammar import admits

    llm = scripted()
    llm.grammars = True  # as the local backend
    settings = Settings.model_validate({"grounded": {"pack": str(pack_dir), "embeddings": False},
                                        "generation": {"constrain": True}})
    answer = get_strategy("grounded")(QUESTION, Context(db=demo, llm=llm, settings=settings))
    assert answer.ok, answer.error
    constraint = answer.grounds["constraint"]
    assert constraint["applied"] and constraint["resolved_keys"] >= 2 and constraint["tables"] < 24
    generate = next(r for r in llm.requests if r.grammar)
    company = next(c["id"] for c in answer.grounds["constraints"] if c["column"] == "company_id")
    resolved_sql = REVENUE_SQL.replace("9226005", str(company))
    assert admits(generate.grammar, resolved_sql)
    assert not admits(generate.grammar, REVENUE_SQL)  # another company's key
    assert not admits(generate.grammar, resolved_sql.replace("data_item_id = 28", "data_item_id = 29"))
    # A table schema linking left out cannot be named.
    assert not admits(generate.grammar, "SELECT COUNT(*) FROM ma_transaction")


def test_a_warehouse_size_schema_is_shown_in_the_tables_the_question_points_at(demo, pack_dir) -> None:
    # The demo treated as a warehouse: above overview_tables every stage sees the shortlist
    # (the question's words, the entity it names, the tables joining them, the references
    # they use), never the whole schema.
    ashcombe = company_id(demo, "Ashcombe Marsh")
    llm = scripted(generate=f"```sql\n{REVENUE_SQL.replace('9226005', str(ashcombe))}\n```")
    answer = run(demo, pack_dir, "What was the annual revenue of Ashcombe Marsh in 2023?", llm,
                 overview_tables=5, shortlist_tables=4)
    assert answer.ok and answer.rows, answer.error
    shortlist = answer.grounds["shortlist"]
    assert {"company", "financial_data", "financial_period", "ref_period_type"} <= set(shortlist)
    assert "price_daily" not in shortlist and len(shortlist) < len(demo.introspect().tables)
    assert all("price_daily" not in r.messages[0].content for r in llm.requests)
    whole = scripted(generate=f"```sql\n{REVENUE_SQL.replace('9226005', str(ashcombe))}\n```")
    run(demo, pack_dir, "What was the annual revenue of Ashcombe Marsh in 2023?", whole)
    assert "price_daily" in whole.requests[0].messages[0].content
