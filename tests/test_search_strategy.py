"""The search strategy end to end on real databases with a scripted model (plumbing only: no
accuracy is claimed from a script): the actions' tools, the reward on probe variants, the
early stop, the call cap and the selection."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from groundsql.config import Settings
from groundsql.db import Database
from groundsql.llm.base import LLM, ChatRequest, Completion
from groundsql.strategies import Context, get_strategy
from groundsql.strategies.answer import Trace
from groundsql.strategies.context import generation_request
from tests.conftest import BENCHMARKS, shared_file, spider_db

STAGES = {
    "Describe the question": "understand",
    "Equation analysis": "equation_analysis",
    "Schema selection": "schema_selection",
    "Identify columns": "identify_columns",
    "Entity extraction": "entity_extraction",
    "Revise the query": "sql_revision",
    "Write one": "sql_generation",
    "Question:": "sql_generation",  # the zero-shot generator's turn (the baseline sample)
}


def stage_of(request: ChatRequest) -> str:
    text = request.messages[-1].content
    return next((stage for marker, stage in STAGES.items() if marker in text), "?")


class Scripted(LLM):
    """Answers each action by what its turn asks; a list of answers is served in turn."""

    def __init__(self, **answers: str | list[str]) -> None:
        self.answers = {k: list(v) if isinstance(v, list) else [v] for k, v in answers.items()}
        self.requests: list[ChatRequest] = []
        self.model_id, self.retries, self.retry_backoff_s = "scripted", 0, 0.0

    def _complete(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        queue = self.answers.get(stage_of(request)) or ['{}']
        text = queue.pop(0) if len(queue) > 1 else queue[0]
        return Completion(text=text, model=self.model_id, prompt_tokens=10, completion_tokens=5)

    def stages(self) -> list[str]:
        return [stage_of(r) for r in self.requests]


def sql(query: str) -> str:
    return f"```sql\n{query}\n```"


def run(db_path: Path, question: str, llm: LLM, **search) -> object:
    search = {"compression_settings": {"embedding_weight": 0.0}, **search}  # lexical: fast
    settings = Settings.model_validate({"search": search})
    with Database(f"sqlite:///{db_path}") as db:
        return get_strategy("search")(question, Context(db=db, llm=llm, settings=settings))


@pytest.fixture
def concert(tmp_path: Path) -> Path:
    copy = tmp_path / "concert_singer.sqlite"
    shutil.copy(spider_db("concert_singer"), copy)
    return copy


@pytest.fixture
def car(tmp_path: Path) -> Path:
    source = shared_file(BENCHMARKS / "logiccat" / "database" / "car" / "car.sqlite")
    copy = tmp_path / "car.sqlite"
    shutil.copy(source, copy)
    return copy


FRANCE = "SELECT Name FROM singer WHERE Country = 'France'"
OLDER = "SELECT Name FROM singer WHERE Age > (SELECT AVG(Age) FROM singer)"


def test_the_majority_result_wins_and_the_answer_shows_its_trajectories(concert) -> None:
    llm = Scripted(understand='{"intent": "singers from France"}',
                   sql_generation=[sql(FRANCE), sql(OLDER), sql(FRANCE), sql(FRANCE)],
                   schema_selection='{"tables": ["singer"]}',
                   entity_extraction='{"filters": [{"column": "singer.Country", "value": "france"}]}')
    answer = run(concert, "What are the names of the singers from France?", llm,
                 rollouts=6, early_stop=0, discriminator=False, baseline_sample="always")
    assert answer.ok and "France" in answer.sql
    assert sorted(answer.rows) == [("John Nizinik",), ("Justin Brown",), ("Rose White",), ("Tribal King",)]
    votes = {c["sql"].split("WHERE ")[1].split(" LIMIT")[0]: c["trajectories"]
             for c in answer.grounds["candidates"]}
    assert votes["Country = 'France'"] > votes["Age > (SELECT AVG(Age) FROM singer)"]
    # The first trajectory is a greedy direct generation; later ones sample.
    generations = [r for r in llm.requests if stage_of(r) == "sql_generation"]
    assert generations[0].temperature == 0.0 and any(g.temperature > 0 for g in generations)
    # Entity extraction: the value was looked up, and the closest real one told to the model.
    told = [r.messages[-1].content for r in llm.requests
            if "Checked against the data" in r.messages[-1].content]
    assert told and "singer.Country = 'france' matches no row (closest values in Country: 'France'" in told[0]
    # Reasoning actions answer under a grammar of the schema's real names.
    selection = next(r for r in llm.requests if stage_of(r) == "schema_selection")
    assert selection.json_schema["properties"]["tables"]["items"]["enum"] == [
        "concert", "singer", "singer_in_concert", "stadium"]
    extraction = next(r for r in llm.requests if stage_of(r) == "entity_extraction")
    listed = extraction.json_schema["properties"]["filters"]["items"]["properties"]["column"]["enum"]
    assert "singer.Country" in listed and generations[0].json_schema is None
    # The first call is the zero-shot generator's own (the baseline sample: the whole schema,
    # its prompt, greedy, the same request the zero-shot strategy sends) ...
    with Database(f"sqlite:///{concert}") as db:
        ctx = Context(db=db, llm=llm, settings=Settings())
        zero_shot = generation_request(ctx, Trace("q", "zero-shot"), "What are the names of the singers from France?")
    assert llm.requests[0] == zero_shot
    # ... every other call of the question extends one prefix (system + the question) ...
    understand = next(r for r in llm.requests if stage_of(r) == "understand")
    system, question_turn = understand.messages
    question = question_turn.content.split("\nDescribe the question")[0]
    assert question.startswith("Question: What are the names of the singers from France?")
    assert all(r.messages[0] == system and r.messages[1].content.startswith(question) for r in llm.requests[1:])
    # ... and only the trajectories that start with a reasoning action read the semantic state:
    # direct generations are independent samples of the question, not of one greedy state.
    reads_state = {stage_of(r) if len(r.messages) > 2 else "direct" for r in llm.requests
                   if any("singers from France" in m.content for m in r.messages if m.role == "assistant")}
    assert "direct" not in reads_state and {"schema_selection", "entity_extraction"} <= reads_state
    direct = [r for r in generations[1:] if len(r.messages) == 2]
    assert len(direct) >= 2 and all("Write one" in r.messages[1].content for r in direct)


def test_search_stops_when_the_results_agree_and_never_exceeds_its_call_cap(concert) -> None:
    llm = Scripted(sql_generation=sql(FRANCE), understand="{}")
    answer = run(concert, "Which singers are from France?", llm, rollouts=10, early_stop=3)
    assert answer.ok
    assert llm.stages().count("sql_generation") == 3  # three agreeing trajectories: stop
    search = next(s for s in answer.steps if s.name == "search")
    assert search.detail["rollouts_run"] == 3
    llm = Scripted(sql_generation=[sql(FRANCE), sql(OLDER)], understand="{}")
    answer = run(concert, "Which singers are from France?", llm, rollouts=30, early_stop=0, max_calls=5)
    assert answer.ok and len(llm.requests) <= 5


def test_the_search_leaves_the_discriminator_its_calls(concert) -> None:
    llm = Scripted(understand="{}", sql_generation=[sql(FRANCE), sql(OLDER), sql(FRANCE), sql(FRANCE), sql(OLDER)])
    answer = run(concert, "Which singers are from France?", llm, rollouts=30, early_stop=0, max_calls=5,
                 actions="sql_generation", root_samples=8, discriminated=2)
    # 3 calls for the search (direct generations need no semantic state), the 2 kept back
    # check both candidates.
    assert llm.stages() == ["sql_generation"] * 5
    assert [c["discriminator"] for c in answer.grounds["candidates"]] == [1.0, 1.0]
    # With nothing to tell apart (no query runs), nothing is kept back: the search uses all 5.
    llm = Scripted(understand="{}", sql_generation=sql("SELECT nom FROM singer"),
                   sql_revision=sql("SELECT nom FROM singer"))
    run(concert, "Which singers are from France?", llm, rollouts=30, early_stop=0, max_calls=5,
        actions="sql_generation+sql_revision", root_samples=8, discriminated=2)
    assert len(llm.requests) == 5


def test_a_failing_query_is_revised_with_the_real_columns(concert) -> None:
    llm = Scripted(understand="{}", sql_generation=sql("SELECT nom FROM singer"), sql_revision=sql(FRANCE))
    answer = run(concert, "Which singers are from France?", llm, rollouts=1, early_stop=0)
    assert answer.ok and answer.sql.startswith(FRANCE)
    revision = next(r for r in llm.requests if stage_of(r) == "sql_revision")
    assert "no such column: nom" in revision.messages[-1].content
    assert "singer: Singer_ID, Name, Country" in revision.messages[-1].content


def test_the_calculator_does_the_arithmetic_and_its_results_reach_the_sql_turn(car) -> None:
    question = ("A fuel car has a fuel tank capacity of 60L, with a highway fuel consumption of "
                "6.5L/100km. When the fuel gauge shows 15% remaining, what is the maximum distance "
                "it can continue to travel on a highway?")
    equation = ('{"constants": [{"name": "fuel_left", "expression": "fuel_tank_capacity * 0.15", '
                '"unit": "L"}, {"name": "bad", "expression": "__import__(1)"}], '
                '"formulas": ["range = fuel_left / highway_fuel_consumption"]}')
    llm = Scripted(understand='{"relations": ["energy = fuel_tank_capacity * highway_fuel_consumption", '
                              '"distance = speed * time"]}',
                   equation_analysis=equation,
                   sql_generation=sql("SELECT 9 / 6.5 * 100 AS range_km"))
    answer = run(car, question, llm, rollouts=2, early_stop=0, discriminator=False,
                 actions="equation_analysis", root_samples=1)
    assert answer.ok and answer.rows == ((pytest.approx(138.4615, rel=1e-4),),)
    equation_step = next(s for s in answer.steps if s.name == "equation_analysis")
    assert equation_step.detail["computed"] == ["fuel_left = 9 L"]
    after = [r for r in llm.requests if "Calculator results" in r.messages[-1].content]
    assert after and "fuel_left = fuel_tank_capacity * 0.15 = 9 L" in after[0].messages[-1].content
    assert "bad = __import__(1): not computed" in after[0].messages[-1].content
    # The numbers were extracted without the model and named for the reasoning trajectories;
    # the direct sample was not shown them (it reads columns, as zero-shot does).
    assert "highway_fuel_consumption = 6.5 L/100km" not in llm.requests[0].messages[1].content
    assert "highway_fuel_consumption = 6.5 L/100km" in llm.requests[-1].messages[1].content
    # ... and a relation whose units disagree is reported.
    unit_check = [m.content for m in llm.requests[-1].messages if m.content.startswith("Unit check")]
    assert unit_check and "dropped energy = fuel_tank_capacity * highway_fuel_consumption" in unit_check[0]
    state = llm.requests[-1].messages[2]  # the semantic state as every later turn sees it
    assert state.role == "assistant" and json.loads(state.content)["relations"] == ["distance = speed * time"]


def test_a_candidate_lists_its_other_queries(car) -> None:
    """Queries that agree on the probe databases form one candidate; the others' SQL is kept
    (an evaluation's best of pool reads it: they may still differ elsewhere)."""
    heavy, same = "SELECT Model FROM cars WHERE Weight > 2000", "SELECT Model FROM cars WHERE 2000 < Weight"
    llm = Scripted(understand="{}", sql_generation=[sql(heavy), sql(same), sql(heavy)])
    answer = run(car, "Which car models weigh over 2000 kg?", llm, rollouts=3, early_stop=0,
                 discriminator=False)
    (candidate,) = answer.grounds["candidates"]
    assert candidate["trajectories"] == 3 and "Weight > 2000" in candidate["sql"]
    assert len(candidate["same_result"]) == 1 and "2000 < Weight" in candidate["same_result"][0]


def test_the_reward_tells_queries_apart_on_populated_variants_of_an_empty_database(car) -> None:
    # The LogicCat database holds no rows: on it both queries return nothing and would agree.
    heavy = "SELECT Model FROM cars WHERE Weight > 2000"
    light = "SELECT Model FROM cars WHERE Weight < 2000"
    llm = Scripted(understand="{}", sql_generation=[sql(heavy), sql(light), sql(heavy)])
    answer = run(car, "Which car models weigh over 2000 kg?", llm, rollouts=3, early_stop=0,
                 discriminator=False)
    groups = sorted(c["trajectories"] for c in answer.grounds["candidates"])
    assert groups == [1, 2] and "> 2000" in answer.sql
    llm = Scripted(understand="{}", sql_generation=[sql(heavy), sql(light), sql(heavy)])
    answer = run(car, "Which car models weigh over 2000 kg?", llm, rollouts=3, early_stop=0,
                 discriminator=False, probe_variants=0)
    # Without variants every query finds nothing: they would all "agree"; vacuous results
    # stand alone instead, and only the same query text counts twice.
    assert [c["trajectories"] for c in answer.grounds["candidates"]] == [2, 1]
    assert [c["exec"] for c in answer.grounds["candidates"]] == [0.5, 0.5]
    # Nor does finding nothing alike stop the search early.
    llm = Scripted(understand="{}", sql_generation=[sql(heavy), sql(light), sql(heavy)])
    run(car, "Which car models weigh over 2000 kg?", llm, rollouts=3, early_stop=2,
        discriminator=False, probe_variants=0, actions="sql_generation", root_samples=3)
    assert llm.stages().count("sql_generation") == 3


def test_the_discriminator_completes_a_masked_trajectory(concert) -> None:
    llm = Scripted(understand="{}", sql_generation=[sql(FRANCE), sql(OLDER), sql(OLDER), sql(FRANCE)])
    answer = run(concert, "Which singers are from France?", llm, rollouts=2, early_stop=0,
                 actions="sql_generation", root_samples=2, discriminated=2)
    verdicts = {c["sql"].split("WHERE ")[1].split(" LIMIT")[0]: c["discriminator"]
                for c in answer.grounds["candidates"]}
    # Two trajectories disagreed; each was completed once more: OLDER, then FRANCE.
    assert llm.stages().count("sql_generation") == 4
    assert verdicts == {"Country = 'France'": 0.0, "Age > (SELECT AVG(Age) FROM singer)": 0.0}


def test_the_discriminator_is_not_asked_when_it_cannot_change_the_choice(concert) -> None:
    # 3 against 1: the leader's 0.4 + 0.4 * 3/4 ties the rival's 0.4 + 0.4 * 1/4 plus a full
    # discriminator bonus of 0.2, and a tie goes to the leader.
    llm = Scripted(understand="{}", sql_generation=[sql(FRANCE), sql(FRANCE), sql(OLDER), sql(FRANCE)])
    answer = run(concert, "Which singers are from France?", llm, rollouts=4, early_stop=0,
                 actions="sql_generation", root_samples=4, discriminated=2)
    assert llm.stages().count("sql_generation") == 4
    assert [c["discriminator"] for c in answer.grounds["candidates"]] == [None, None]
    assert "France" in answer.sql


def test_a_candidate_nobody_checked_does_not_overtake_leaders_whose_checks_failed(concert) -> None:
    # 2 of 5 trajectories agree; the two leading candidates are checked and both completions
    # disagree. Unchecked candidates have no confirmation: the majority still wins (with a
    # neutral 0.5 for the unchecked, a single trajectory scored 0.58 against its 0.56).
    young, male = "SELECT Name FROM singer WHERE Age < 30", "SELECT Name FROM singer WHERE Is_male = 'T'"
    llm = Scripted(understand="{}", sql_generation=[sql(FRANCE), sql(FRANCE), sql(OLDER), sql(young),
                                                    sql(male), sql("SELECT Country FROM singer"),
                                                    sql("SELECT Name FROM singer WHERE Age > 45")])
    answer = run(concert, "Which singers are from France?", llm, rollouts=5, early_stop=0,
                 actions="sql_generation", root_samples=5, discriminated=2)
    assert llm.stages().count("sql_generation") == 7  # 5 trajectories, 2 checks
    assert [(c["trajectories"], c["discriminator"]) for c in answer.grounds["candidates"]] == [
        (2, 0.0), (1, 0.0), (1, None), (1, None)]
    assert "France" in answer.sql


def test_the_discriminators_completions_vote_for_the_result_they_give(concert) -> None:
    # Four trajectories, four results; both checks complete to the third candidate's result:
    # two more samples that give it, so it wins (refuted leaders and a lone rival do not).
    young, male = "SELECT Name FROM singer WHERE Age < 30", "SELECT Name FROM singer WHERE Is_male = 'T'"
    llm = Scripted(understand="{}", sql_generation=[sql(FRANCE), sql(OLDER), sql(young), sql(male),
                                                    sql(young), sql(young)])
    answer = run(concert, "Which singers are under 30?", llm, rollouts=4, early_stop=0,
                 actions="sql_generation", root_samples=4, discriminated=2)
    assert llm.stages().count("sql_generation") == 6  # 4 trajectories, 2 checks
    assert [(c["trajectories"], c["votes"], c["discriminator"]) for c in answer.grounds["candidates"]] == [
        (1, 1, 0.0), (1, 1, 0.0), (1, 3, None), (1, 1, None)]
    assert "Age < 30" in answer.sql


def test_a_guessed_number_is_revised_and_counts_less(concert) -> None:
    guessed = "SELECT Name FROM singer WHERE Age > 32"
    llm = Scripted(understand="{}", sql_generation=[sql(guessed), sql(guessed), sql(OLDER)],
                   sql_revision=sql(guessed))
    answer = run(concert, "Which singers are older than average?", llm, rollouts=3, early_stop=0,
                 actions="sql_generation+sql_revision", root_samples=3, discriminator=False)
    revisions = [r for r in llm.requests if stage_of(r) == "sql_revision"]
    assert revisions and "32, which the question does not state" in revisions[0].messages[-1].content
    # Two trajectories guessed 32 (Exec 0.5 each, as a group 0.4*0.5 + 0.4*2/3), one computed
    # the average (0.4*1 + 0.4*1/3): the computed one wins the vote's minority.
    assert "AVG(Age)" in answer.sql


def test_the_ablation_switches_are_settings() -> None:
    settings = Settings.model_validate({"search": {"actions": "schema_selection+sql_revision"}})
    assert settings.search.actions == ("schema_selection", "sql_revision", "sql_generation")
    with pytest.raises(ValueError, match="unknown action"):
        Settings.model_validate({"search": {"actions": "guessing"}})


def test_on_an_empty_database_a_value_is_not_blamed_and_a_right_query_is_not_revised(car) -> None:
    corolla = "SELECT Model FROM cars WHERE Model = 'Corolla'"
    llm = Scripted(understand="{}", sql_generation=sql(corolla),
                   entity_extraction='{"filters": [{"column": "cars.Model", "value": "Corolla"}]}')
    answer = run(car, "Which cars are Corollas?", llm, rollouts=3, early_stop=0, discriminator=False,
                 actions="entity_extraction+sql_revision", root_samples=1)
    assert answer.ok and "sql_revision" not in llm.stages()
    told = [r.messages[-1].content for r in llm.requests
            if "Checked against the data" in r.messages[-1].content]
    assert told and "cars.Model holds no values: 'Corolla' cannot be checked" in told[0]


def test_an_invented_filter_value_is_revised(car) -> None:
    # The database is empty, so no empty result can blame 'Camry'; the question never names it.
    invented = "SELECT Model FROM cars WHERE Model = 'Camry' AND Weight > 2000"
    right = "SELECT Model FROM cars WHERE Weight > 2000"
    llm = Scripted(understand="{}", sql_generation=sql(invented), sql_revision=sql(right))
    answer = run(car, "Which car models weigh over 2000 kg?", llm, rollouts=1, early_stop=0,
                 discriminator=False, actions="sql_revision")
    revisions = [r for r in llm.requests if stage_of(r) == "sql_revision"]
    assert len(revisions) == 1 and "'Camry', which the question does not mention" in revisions[0].messages[-1].content
    assert answer.sql.startswith(right)


def test_a_constant_named_like_a_column_is_bound_to_its_number(car) -> None:
    named = "SELECT Drag_Coefficient * air_density * frontal_area FROM performance_metrics"
    llm = Scripted(understand="{}", sql_generation=sql(named))
    answer = run(car, "What is the drag force term given an air density of 1.225 kg/m³ and a frontal area "
                      "of 2.5 m²?", llm, rollouts=1, early_stop=0, discriminator=False, actions="sql_revision")
    assert answer.ok and "sql_revision" not in llm.stages()
    assert answer.sql.startswith("SELECT Drag_Coefficient * 1.225 * 2.5 FROM performance_metrics")
    generation = next(s for s in answer.steps if s.name == "sql_generation")
    assert sorted(generation.detail["bound"]) == ["air_density", "frontal_area"]


@pytest.mark.parametrize("written, key, told", [
    ("SELECT maximum_rpm * 2 FROM engine_specs WHERE Car_ID = 5", "bound", ["maximum_rpm"]),  # by name
    ("SELECT 10000 * 2 FROM engine_specs WHERE Car_ID = 5", "read", ["Max_RPM"]),  # the copy
])
def test_a_number_the_data_stores_is_read_from_its_column(car, written: str, key: str, told: list) -> None:
    # "a maximum RPM of 10000" restates engine_specs.Max_RPM: the query reads the column.
    llm = Scripted(understand="{}", sql_generation=sql(written))
    answer = run(car, "If the engine with Car_ID 5 has a maximum RPM of 10000, what is twice it?", llm,
                 rollouts=1, early_stop=0, discriminator=False, actions="sql_revision")
    assert answer.ok and answer.sql.startswith("SELECT Max_RPM * 2 FROM engine_specs WHERE Car_ID = 5")
    generation = next(s for s in answer.steps if s.name == "sql_generation")
    assert generation.detail[key] == told


@pytest.mark.parametrize("question, written, expected", [
    # a measurement restated of the named car: the name finds the row
    ("Assuming the Corolla has a cargo capacity of 500 L, how many 50 L boxes fit in it?",
     "SELECT Cargo_Capacity / 50 FROM cars WHERE Model = 'Corolla' AND Cargo_Capacity = 500",
     "SELECT Cargo_Capacity / 50 FROM cars WHERE Model = 'Corolla'"),
    # a count or an amount of money is no measurement: it may select the rows
    ("Assuming Toyota has annual sales of 450,000 vehicles, what is half of it?",
     "SELECT Annual_Sales / 2 FROM manufacturers WHERE Name = 'Toyota' AND Annual_Sales = 450000", None),
])
def test_a_named_rows_restated_measurement_is_not_a_filter(car, question: str, written: str,
                                                          expected: str | None) -> None:
    llm = Scripted(understand="{}", sql_generation=sql(written))
    answer = run(car, question, llm, rollouts=1, early_stop=0, discriminator=False, actions="sql_revision")
    generation = next(s for s in answer.steps if s.name == "sql_generation")
    assert generation.detail["sql"].startswith(expected or written)
    assert ("unfiltered" in generation.detail) == (expected is not None)


def test_on_a_database_with_rows_finding_nothing_alike_is_agreement(concert) -> None:
    # Spider's pets_1: no student keeps both a cat and a dog, and the variants rarely plant one
    # who does; the right queries agree on the empty answer, and that agreement counts.
    none = "SELECT Name FROM singer WHERE Age > Age"  # no data can meet these
    also_none = "SELECT Name FROM singer WHERE Singer_ID <> Singer_ID"
    llm = Scripted(understand="{}", sql_generation=[sql(none), sql(also_none), sql(FRANCE)])
    answer = run(concert, "Which singers are younger than zero?", llm, rollouts=3, early_stop=0,
                 discriminator=False, actions="sql_generation", root_samples=3)
    assert [c["trajectories"] for c in answer.grounds["candidates"]] == [2, 1]
    assert "Age > Age" in answer.sql


def test_the_root_samples_direct_generations_before_reasoning(concert) -> None:
    llm = Scripted(understand="{}", sql_generation=sql(FRANCE), schema_selection='{"tables": ["singer"]}')
    run(concert, "Which singers are from France?", llm, rollouts=4, early_stop=0, discriminator=False,
        root_samples=3)
    # The semantic state is asked when the first reasoning action needs it.
    assert llm.stages()[:6] == ["sql_generation", "sql_generation", "sql_generation", "understand",
                                "schema_selection", "sql_generation"]
    # Three that agree end the search before any reasoning action, and before the state.
    llm = Scripted(understand="{}", sql_generation=sql(FRANCE))
    run(concert, "Which singers are from France?", llm, rollouts=6, early_stop=3, discriminator=False)
    assert llm.stages() == ["sql_generation", "sql_generation", "sql_generation"]


@pytest.mark.parametrize(("reasoning_vote", "winner"), [(0.5, "France"), (1.0, "AVG(Age)")])
def test_trajectories_through_reasoning_actions_vote_with_less_weight(concert, reasoning_vote, winner) -> None:
    # Two direct samples agree on one query, three trajectories through reasoning actions on
    # another: counted alike, the three win; at half a vote each (1.5 against 2), the samples.
    llm = Scripted(understand="{}", schema_selection='{"tables": ["singer"]}',
                   identify_columns='{"columns": []}',
                   sql_generation=[sql(FRANCE), sql(FRANCE), sql(OLDER), sql(OLDER), sql(OLDER)])
    answer = run(concert, "Which singers are from France?", llm, rollouts=5, early_stop=0, depth=3,
                 actions="schema_selection+identify_columns", root_samples=2, discriminator=False,
                 reasoning_vote=reasoning_vote)
    candidates = answer.grounds["candidates"]
    assert sorted((c["trajectories"], c["votes"]) for c in candidates) == sorted(
        [(2, 2.0), (3, 3 * reasoning_vote)])
    assert winner in answer.sql


def test_a_value_required_of_two_columns_is_revised_with_every_problem_told(concert) -> None:
    doubled = "SELECT Name FROM singer WHERE Country = 'France' AND Name = 'France'"
    llm = Scripted(understand="{}", sql_generation=sql(doubled), sql_revision=sql(FRANCE))
    answer = run(concert, "Which singers are from France?", llm, rollouts=1, early_stop=0,
                 discriminator=False, actions="sql_revision")
    told = next(r for r in llm.requests if stage_of(r) == "sql_revision").messages[-1].content
    # The empty result's cause (no singer is named France) and the doubled filter, both.
    assert "not in the data" in told and "'France' of more than one column" in told
    assert answer.sql.startswith(FRANCE)


@pytest.mark.parametrize("understanding", [True, False])
def test_the_rule_bases_formulas_that_fit_the_question_are_shown_to_every_sample(car, understanding) -> None:
    llm = Scripted(understand="{}", sql_generation=sql("SELECT 0.5 * Weight * 27.78 * 27.78 FROM cars"))
    answer = run(car, "A car of 1500 kg travels at 100 km/h: what is its kinetic energy in joules?", llm,
                 rollouts=1, early_stop=0, discriminator=False, baseline_sample="never",
                 understanding=understanding)
    asked = [r for r in llm.requests if stage_of(r) == "sql_generation"]
    shown = "- kinetic energy of a moving mass: energy = 0.5 * mass * speed ** 2"
    # Without understanding (the ablation) the rule base offers nothing.
    assert asked and all((shown in r.messages[1].content) == understanding for r in asked)
    assert any(s.name == "formulas" for s in answer.steps) == understanding


def test_a_foreign_key_compared_with_the_wrong_column_is_revised(concert) -> None:
    wrong = ("SELECT T1.Name FROM stadium AS T1 WHERE T1.Name IN "
             "(SELECT Stadium_ID FROM concert WHERE Year = 2014)")
    right = ("SELECT T1.Name FROM stadium AS T1 WHERE T1.Stadium_ID IN "
             "(SELECT Stadium_ID FROM concert WHERE Year = 2014)")
    llm = Scripted(understand="{}", sql_generation=sql(wrong), sql_revision=sql(right))
    answer = run(concert, "Which stadiums had a concert in 2014?", llm, rollouts=1, early_stop=0,
                 discriminator=False, actions="sql_revision")
    told = next(r for r in llm.requests if stage_of(r) == "sql_revision").messages[-1].content
    assert "concert.Stadium_ID holds stadium.Stadium_ID" in told
    assert answer.sql.startswith(right)


@pytest.mark.parametrize("baseline_sample", ["always", "never"])
def test_the_first_direct_sample_is_the_zero_shot_generators_and_revised_in_its_conversation(
        concert, baseline_sample) -> None:
    llm = Scripted(understand="{}", sql_generation=[sql("SELECT nom FROM singer"), sql(FRANCE)],
                   sql_revision=sql(FRANCE))
    answer = run(concert, "What are the names of the singers from France?", llm, baseline_sample=baseline_sample,
                 actions="sql_generation+sql_revision", root_samples=2, discriminator=False, early_stop=0)
    assert answer.ok and "France" in answer.sql
    zero_shot_system = [r for r in llm.requests if "Given the database schema below" in r.messages[0].content]
    if baseline_sample == "never":  # the ablation: every call starts from the search's prefix
        assert not zero_shot_system
        return
    first, revision = llm.requests[0], llm.requests[1]
    assert zero_shot_system == [first, revision] and len(first.messages) == 2
    # The failed query is revised in the zero-shot conversation: its reply, then the turn
    # telling the real columns; the next sample starts from the search's prefix.
    assert revision.messages[:2] == first.messages and revision.messages[2].role == "assistant"
    assert "nom" in revision.messages[2].content and "Revise the query" in revision.messages[3].content
    assert "Write one" in llm.requests[2].messages[-1].content


@pytest.mark.parametrize("database, asked", [("concert", False), ("car", True)])
def test_the_zero_shot_generator_samples_by_default_only_where_the_searchs_view_leaves_columns_out(
        request, database, asked) -> None:
    # concert_singer (21 columns) is shown whole; LogicCat's car (79) is compressed.
    llm = Scripted(understand="{}", sql_generation=sql("SELECT 1"))
    run(request.getfixturevalue(database), "How many cars have more than 5 seats?", llm,
        actions="sql_generation", root_samples=2, discriminator=False, early_stop=0, rollouts=2)
    zero_shot = [r for r in llm.requests if "Given the database schema below" in r.messages[0].content]
    assert len(zero_shot) == (1 if asked else 0)


def test_under_constrain_the_search_writes_sql_under_the_grammar_of_the_view_it_shows(concert) -> None:
    from tests.test_sql_grammar import admits

    llm = Scripted(understand='{"intent": "singers from France"}', sql_generation=sql(FRANCE),
                   schema_selection='{"tables": ["singer"]}')
    llm.grammars = True
    search = {"compression_settings": {"embedding_weight": 0.0}, "rollouts": 4, "early_stop": 0,
              "discriminator": False, "baseline_sample": "always"}
    settings = Settings.model_validate({"search": search, "generation": {"constrain": True}})
    with Database(f"sqlite:///{concert}") as db:
        answer = get_strategy("search")("What are the names of the singers from France?",
                                        Context(db=db, llm=llm, settings=settings))
    assert answer.ok and answer.grounds["constraint"]["applied"]
    writing = [r for r in llm.requests if stage_of(r) == "sql_generation"]
    assert writing and all(r.grammar and admits(r.grammar, FRANCE) for r in writing)
    assert all(not admits(r.grammar, "SELECT Name FROM singers") for r in writing)
    # Reasoning actions answer under their JSON schema, not the SQL grammar.
    assert all(r.grammar is None for r in llm.requests if stage_of(r) != "sql_generation")
