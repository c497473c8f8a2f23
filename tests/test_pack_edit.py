"""Editing a domain pack through the API (packs/edit.py, the service, /v1/databases/{db}/pack):
edits written back to the files diffing as their own lines and loading as hand-written files do,
checked against the database first (a broken edit refused with file, line and field), two
people's edits of one entry (the later refused with what changed), editor and reader keys, the
history and the audit log; and the pack's benchmark run through the API."""

from __future__ import annotations

import difflib
import json
import shutil
import time
from pathlib import Path

import httpx
import pytest

from groundsql.packs.edit import Edit, entries, save
from groundsql.packs.load import load_pack
from groundsql.strategies.grounded import demo_pack_path
from tests.server_harness import live_server
from tests.test_grounded import scripted

JAPAN = {"select": ["company_count"], "where": [{"field": "country", "value": "Japan"}]}
JAPAN_QUESTION = "How many companies are headquartered in Japan?"
JAPAN_SQL = ("SELECT COUNT(*) FROM company AS c JOIN ref_country AS r ON c.country_id = r.country_id "
             "WHERE r.country_name = 'Japan'")


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    """A copy of the demo pack with two of its verified queries, so a benchmark is quick."""
    folder = tmp_path / "pack"
    shutil.copytree(demo_pack_path(), folder)
    lines = (folder / "bank.jsonl").read_text().splitlines()
    kept = [line for line in lines if '"verified_by"' in line][:2]
    (folder / "bank.jsonl").write_text("\n".join(kept) + "\n")
    return folder


def server(tmp_path: Path, pack: Path, *, auth: bool = True, answer: dict = JAPAN):
    setup = {"state_url": f"sqlite:///{tmp_path / 'state.sqlite'}", "auth": auth,
             "databases": {"demo": {"url": None, "pack": str(pack), "strategy": "compiled",
                                    "settings": {"grounded": {"embeddings": False}}}}}
    return live_server(setup, llm=scripted(generate=json.dumps(answer)))


def bearer(secret: str) -> dict[str, str]:
    return {"authorization": f"Bearer {secret}"}


def entry(url: str, headers: dict, entry_id: str) -> dict:
    view = httpx.get(f"{url}/v1/databases/demo/pack", headers=headers).json()
    return next(e for e in view["entries"] if e["id"] == entry_id)


def changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


COMPANY = "semantic.yaml:tables.companies.dimensions.company"


def test_an_edit_rewrites_only_its_own_lines_and_loads_as_the_same_edit_by_hand(tmp_path: Path, pack: Path) -> None:
    by_hand = tmp_path / "by-hand"
    shutil.copytree(pack, by_hand)
    text = (pack / "semantic.yaml").read_text()
    with server(tmp_path, pack, auth=False) as (url, _):
        found = entry(url, {}, COMPANY)
        assert found["kind"] == "dimension" and found["value"]["synonyms"] == ["firm", "issuer", "company name"]
        value = {**found["value"], "synonyms": [*found["value"]["synonyms"], "outfit"]}
        saved = httpx.post(f"{url}/v1/databases/demo/pack/edits",
                           json={"entry": COMPANY, "base": found["version"], "value": value, "note": "a word"})
        assert saved.status_code == 200, saved.text
        assert saved.json()["action"] == "changed" and saved.json()["value"]["synonyms"][-1] == "outfit"
        rules = entry(url, {}, "pack.yaml:rules.generation")
        saved = httpx.post(f"{url}/v1/databases/demo/pack/edits",
                           json={"entry": rules["id"], "base": rules["version"],
                                 "value": [*rules["value"], "Amounts are in millions unless asked otherwise."]})
        assert saved.status_code == 200, saved.text
    new = (pack / "semantic.yaml").read_text()
    assert changed_lines(text, new) == ["-        synonyms: [firm, issuer, company name]",
                                        "+        synonyms: [firm, issuer, company name, outfit]"]
    (by_hand / "semantic.yaml").write_text(text.replace("synonyms: [firm, issuer, company name]",
                                                        "synonyms: [firm, issuer, company name, outfit]"))
    hand_rules = (by_hand / "pack.yaml").read_text()
    (by_hand / "pack.yaml").write_text(hand_rules.replace(
        "match the exact name found by entity lookup.\n",
        "match the exact name found by entity lookup.\n    - >-\n      Amounts are in millions unless asked otherwise.\n"))
    assert changed_lines(hand_rules, (pack / "pack.yaml").read_text()) == [
        "+    - >-", "+      Amounts are in millions unless asked otherwise."]
    edited, hand = load_pack(pack), load_pack(by_hand)
    assert edited.semantic == hand.semantic and edited.rules == hand.rules
    assert edited.model_dump(exclude={"semantic_path"}) == hand.model_dump(exclude={"semantic_path"})


def test_saving_an_entry_of_each_kind_unchanged_leaves_every_file_as_it_was(pack: Path) -> None:
    before = {p.name: p.read_bytes() for p in pack.iterdir()}
    kinds = {found.kind: found for found in entries(pack) if found.kind != "verified_query"}  # one is re-stamped
    assert set(kinds) == {"table", "rules", "dimension", "time_dimension", "fact", "measure", "filter"}
    for found in kinds.values():
        save(pack, Edit(entry=found.id, base=found.version, value=found.value), lambda *_: None, editor="x")
    assert {p.name: p.read_bytes() for p in pack.iterdir()} == before


def test_an_edit_waits_while_another_process_edits_the_same_pack(pack: Path) -> None:
    """Several servers may share one pack folder: an edit holds a lock on the folder itself,
    and another's waits for it (here the other is a second handle, as another process's is)."""
    import fcntl
    import os
    import threading

    found = next(e for e in entries(pack) if e.id == COMPANY)
    edit = Edit(entry=COMPANY, base=found.version, value={**found.value, "synonyms": ["firm"]})
    other = os.open(pack, os.O_RDONLY)
    fcntl.flock(other, fcntl.LOCK_EX)
    done: list[object] = []
    saving = threading.Thread(target=lambda: done.append(save(pack, edit, lambda *_: None)))
    saving.start()
    saving.join(timeout=1.0)
    assert done == [] and "synonyms: [firm]\n" not in (pack / "semantic.yaml").read_text()
    os.close(other)  # the other is done
    saving.join(timeout=30)
    assert len(done) == 1 and "synonyms: [firm]\n" in (pack / "semantic.yaml").read_text()


def test_a_broken_edit_is_refused_with_file_line_entry_and_field_and_nothing_is_written(tmp_path: Path,
                                                                                       pack: Path) -> None:
    files = {p.name: p.read_bytes() for p in pack.iterdir()}
    revenue = "semantic.yaml:tables.financials.measures.revenue"
    with server(tmp_path, pack, auth=False) as (url, service):
        found = entry(url, {}, revenue)
        bad = {**found["value"], "expr": "SUM(no_such_column)"}
        refused = httpx.post(f"{url}/v1/databases/demo/pack/edits",
                             json={"entry": revenue, "base": found["version"], "value": bad})
        assert refused.status_code == 422
        message = refused.json()["error"]["message"]
        assert message.startswith("not saved: semantic.yaml:")  # the pack's file, not where the server keeps it
        assert "tables.16.measures.0.expr" in message and "no column 'no_such_column'" in message
        wrong_sql = {"question": "How many planets?", "sql": "SELECT COUNT(*) FROM planets", "verified_by": "x"}
        refused = httpx.post(f"{url}/v1/databases/demo/pack/edits", json={"add_to": "bank.jsonl", "value": wrong_sql})
        assert refused.status_code == 422
        assert "not saved: bank.jsonl:3: sql: refused table planets" in refused.json()["error"]["message"]
        not_text = httpx.post(f"{url}/v1/databases/demo/pack/edits",
                              json={"add_to": "bank.jsonl", "value": {"question": "How many?", "sql": 5}})
        assert not_text.status_code == 422
        assert "not saved: bank.jsonl:3: 'sql' must be text, found int" in not_text.json()["error"]["message"]
        not_a_field = httpx.post(f"{url}/v1/databases/demo/pack/edits",
                                 json={"entry": COMPANY, "base": entry(url, {}, COMPANY)["version"],
                                       "value": {"name": "company", "expr": "company_name", "colour": "red"}})
        assert not_a_field.status_code == 422 and "colour: Extra inputs are not permitted" in \
            not_a_field.json()["error"]["message"]
        refusals = [r for r in service.state.audit_rows() if r["kind"] == "pack"]
        assert [r["verdict"] for r in refusals] == ["refused"] * 4
    assert {p.name: p.read_bytes() for p in pack.iterdir()} == files


def test_the_later_of_two_edits_of_one_entry_is_refused_with_who_changed_what(tmp_path: Path, pack: Path) -> None:
    with server(tmp_path, pack) as (url, service):
        alice = bearer(service.state.add_key("alice", [], "editor"))
        bob = bearer(service.state.add_key("bob", [], "editor"))
        opened = entry(url, alice, COMPANY)  # both open the entry
        first = httpx.post(f"{url}/v1/databases/demo/pack/edits", headers=alice, json={
            "entry": COMPANY, "base": opened["version"],
            "value": {**opened["value"], "synonyms": ["firm", "business"]}})
        assert first.status_code == 200
        second = httpx.post(f"{url}/v1/databases/demo/pack/edits", headers=bob, json={
            "entry": COMPANY, "base": opened["version"],
            "value": {**opened["value"], "description": "A company's legal name."}})
        assert second.status_code == 409
        error = second.json()["error"]
        assert error["code"] == "conflict" and error["by"] == "alice" and error["changed"] == ["synonyms"]
        assert "was changed since you opened it by alice" in error["message"]
        assert error["current"]["value"]["synonyms"] == ["firm", "business"]
        # Bob applies his edit to the entry as it is now: both changes are kept.
        third = httpx.post(f"{url}/v1/databases/demo/pack/edits", headers=bob, json={
            "entry": COMPANY, "base": error["current"]["version"],
            "value": {**error["current"]["value"], "description": "A company's legal name."}})
        assert third.status_code == 200
        history = httpx.get(f"{url}/v1/databases/demo/pack/history", headers=alice, params={"entry": COMPANY}).json()
        assert [(h["key_name"], h["action"]) for h in history] == [("bob", "changed"), ("alice", "changed")]
        assert history[0]["after"]["synonyms"] == ["firm", "business"]
        assert history[0]["after"]["description"] == "A company's legal name."
    assert load_pack(pack).semantic.table("companies").dimensions[0].synonyms == ("firm", "business")


def test_only_an_editors_key_may_change_a_pack_and_every_change_is_audited(tmp_path: Path, pack: Path) -> None:
    with server(tmp_path, pack) as (url, service):
        reader = bearer(service.state.add_key("reader", []))
        editor = bearer(service.state.add_key("editor", [], "editor"))
        view = httpx.get(f"{url}/v1/databases/demo/pack", headers=reader).json()
        assert view["may_edit"] is False and view["read_only"] is None
        assert httpx.get(f"{url}/v1/databases/demo/pack", headers=editor).json()["may_edit"] is True
        found = entry(url, reader, COMPANY)
        edit = {"entry": COMPANY, "base": found["version"], "value": {**found["value"], "synonyms": ["firm"]}}
        refused = httpx.post(f"{url}/v1/databases/demo/pack/edits", headers=reader, json=edit)
        assert refused.status_code == 403 and "only an editor's key" in refused.json()["error"]["message"]
        assert httpx.post(f"{url}/v1/databases/demo/benchmarks", headers=reader).status_code == 403
        assert httpx.post(f"{url}/v1/databases/demo/pack/edits", headers=editor, json=edit).status_code == 200
        audited = [(r["key_name"], r["verdict"], r["detail"]) for r in service.state.audit_rows() if r["kind"] == "pack"]
        assert audited[0] == ("editor", "saved", f"changed {COMPANY}")
        assert audited[1][:2] == ("reader", "refused") and audited[2][:2] == ("reader", "refused")


def test_the_demos_own_pack_is_shown_read_only(tmp_path: Path) -> None:
    setup = {"state_url": f"sqlite:///{tmp_path / 'state.sqlite'}", "auth": False,
             "databases": {"demo": {"url": None, "settings": {"grounded": {"embeddings": False}}}}}
    with live_server(setup, llm=scripted()) as (url, _):
        view = httpx.get(f"{url}/v1/databases/demo/pack").json()
        assert view["may_edit"] is False and "read-only here" in view["read_only"] and view["entries"]
        found = view["entries"][0]
        refused = httpx.post(f"{url}/v1/databases/demo/pack/edits",
                             json={"entry": found["id"], "base": found["version"], "value": found["value"]})
        assert refused.status_code == 400 and "copy the folder" in refused.json()["error"]["message"]


def wait_for_run(url: str, headers: dict) -> dict:
    for _ in range(600):
        listed = httpx.get(f"{url}/v1/databases/demo/benchmarks", headers=headers).json()
        running = listed["running"]
        if running and running["finished"]:
            assert running["error"] is None, running["error"]
            return httpx.get(f"{url}/v1/databases/demo/benchmarks/{running['run']}", headers=headers).json()
        time.sleep(0.2)
    raise AssertionError("the benchmark did not finish")


def test_a_verified_query_added_is_benchmarked_and_a_bad_edit_shows_as_a_regression(tmp_path: Path,
                                                                                    pack: Path) -> None:
    with server(tmp_path, pack) as (url, service):
        editor = bearer(service.state.add_key("ann", [], "editor"))
        added = httpx.post(f"{url}/v1/databases/demo/pack/edits", headers=editor, json={
            "add_to": "bank.jsonl", "value": {"question": JAPAN_QUESTION, "sql": JAPAN_SQL, "verified_by": "someone"}})
        assert added.status_code == 200, added.text
        assert added.json()["value"]["verified_by"] == "ann"  # who saved it verified it
        assert httpx.post(f"{url}/v1/databases/demo/benchmarks", headers=editor).status_code == 202
        first = wait_for_run(url, editor)
        japan = next(a for a in first["answers"] if a["question"] == JAPAN_QUESTION)
        assert japan["reason"] == "right" and first["earlier"] is None and first["counted"] == 3
        time.sleep(1.1)  # runs are named by the second they start

        count = entry(url, editor, "semantic.yaml:tables.companies.measures.company_count")
        bad = {**count["value"], "expr": count["value"]["expr"] + " + 1"}
        assert httpx.post(f"{url}/v1/databases/demo/pack/edits", headers=editor,
                          json={"entry": count["id"], "base": count["version"], "value": bad}).status_code == 200
        assert httpx.post(f"{url}/v1/databases/demo/benchmarks", headers=editor).status_code == 202
        second = wait_for_run(url, editor)
        japan = next(a for a in second["answers"] if a["question"] == JAPAN_QUESTION)
        assert (japan["before"], japan["reason"], japan["regression"]) == ("right", "wrong_values", True)
        assert second["earlier"] == first["run"] and second["regressions"] >= 1

        overridden = httpx.post(f"{url}/v1/databases/demo/benchmarks/{second['run']}/overrides", headers=editor,
                                json={"item_id": japan["item_id"], "verdict": "right", "note": "off by one is fine"})
        assert overridden.status_code == 200
        again = httpx.get(f"{url}/v1/databases/demo/benchmarks/{second['run']}", headers=editor).json()
        japan = next(a for a in again["answers"] if a["question"] == JAPAN_QUESTION)
        assert (japan["reason"], japan["model_reason"], japan["regression"]) == ("right", "wrong_values", False)
        assert japan["override"]["note"] == "off by one is fine" and japan["override"]["by"] == "ann"


def test_an_edit_tried_on_the_benchmark_shows_what_it_breaks_without_being_saved(tmp_path: Path, pack: Path) -> None:
    """A trial runs the pack with the edit (checked as a save is) and leaves the files alone;
    a later run is compared with the pack as it was, not with the trial. A benchmark question
    whose gold fails to run is listed with its error and never counted."""
    (pack / "benchmark.jsonl").write_text(json.dumps({"question": JAPAN_QUESTION, "sql": JAPAN_SQL}) + "\n"
                                          + json.dumps({"question": "How many moons?", "sql": "SELECT COUNT(*) FROM moon"})
                                          + "\n")
    with server(tmp_path, pack) as (url, service):
        editor = bearer(service.state.add_key("ann", [], "editor"))
        assert httpx.post(f"{url}/v1/databases/demo/benchmarks", headers=editor).status_code == 202
        first = wait_for_run(url, editor)
        moons = next(a for a in first["answers"] if a["question"] == "How many moons?")
        assert moons["gold_error"] and "moon" in moons["gold_error"] and moons["reason"] == ""
        assert (first["counted"], first["gold_failed"]) == (3, 1)
        time.sleep(1.1)

        files = {p.name: p.read_bytes() for p in pack.iterdir() if p.is_file()}
        count = entry(url, editor, "semantic.yaml:tables.companies.measures.company_count")
        bad = {"entry": count["id"], "base": count["version"], "value": {**count["value"], "expr": "COUNT(*) + 1"}}
        broken = {**bad, "value": {**count["value"], "expr": "COUNT(no_such_column)"}}
        refused = httpx.post(f"{url}/v1/databases/demo/benchmarks", headers=editor, json={"edit": broken})
        assert refused.status_code == 422 and "no_such_column" in refused.json()["error"]["message"]
        assert httpx.post(f"{url}/v1/databases/demo/benchmarks", headers=editor, json={"edit": bad}).status_code == 202
        tried = wait_for_run(url, editor)
        assert tried["run"].endswith("-trial") and tried["earlier"] == first["run"]
        assert tried["trial"]["entry"] == count["id"] and tried["trial"]["by"] == "ann"
        japan = next(a for a in tried["answers"] if a["question"] == JAPAN_QUESTION)
        assert (japan["before"], japan["reason"], japan["regression"]) == ("right", "wrong_values", True)
        assert {p.name: p.read_bytes() for p in pack.iterdir() if p.is_file()} == files  # nothing saved
        time.sleep(1.1)

        assert httpx.post(f"{url}/v1/databases/demo/benchmarks", headers=editor).status_code == 202
        again = wait_for_run(url, editor)
        assert again["earlier"] == first["run"] and again["regressions"] == 0 and again["trial"] is None
        listed = httpx.get(f"{url}/v1/databases/demo/benchmarks", headers=editor).json()["runs"]
        assert [r["run"] for r in listed] == [again["run"], tried["run"], first["run"]]


def test_benchmark_questions_are_entries_of_the_pack_and_their_gold_is_checked(tmp_path: Path, pack: Path) -> None:
    with server(tmp_path, pack, auth=False) as (url, _):
        view = httpx.get(f"{url}/v1/databases/demo/pack").json()
        assert "benchmark.jsonl" in view["collections"]
        refused = httpx.post(f"{url}/v1/databases/demo/pack/edits", json={
            "add_to": "benchmark.jsonl", "value": {"question": "How many moons?", "sql": "SELECT COUNT(*) FROM moon"}})
        assert refused.status_code == 422
        assert "not saved: benchmark.jsonl:1: sql: refused table moon" in refused.json()["error"]["message"]
        added = httpx.post(f"{url}/v1/databases/demo/pack/edits", json={
            "add_to": "benchmark.jsonl", "value": {"question": JAPAN_QUESTION, "sql": JAPAN_SQL}})
        assert added.status_code == 200 and added.json()["entry"].startswith("benchmark.jsonl:q-")
        assert entry(url, {}, added.json()["entry"])["kind"] == "benchmark_question"
    assert json.loads((pack / "benchmark.jsonl").read_text()) == {"question": JAPAN_QUESTION, "sql": JAPAN_SQL}


@pytest.mark.parametrize("role", ["editor", "reader"])
def test_an_editors_correction_is_trusted_for_like_questions_and_a_readers_is_an_example(
        tmp_path: Path, pack: Path, role: str) -> None:
    staff = ("SELECT COUNT(DISTINCT cp.person_id) AS people FROM company_professional AS cp JOIN company AS c "
             "ON cp.company_id = c.company_id WHERE c.company_name = '{}'")
    with server(tmp_path, pack, answer={"select": ["company_count"], "where": []}) as (url, service):
        key = bearer(service.state.add_key("kim", [], role))
        asked = httpx.post(f"{url}/v1/ask", headers=key, json={
            "database": "demo", "question": "How many people work as executives or directors at Northwind Logistics Inc.?"})
        given = httpx.post(f"{url}/v1/feedback", headers=key, json={
            "answer_id": asked.json()["answer_id"], "verdict": "wrong",
            "corrected_sql": staff.format("Northwind Logistics Inc.")})
        assert given.status_code == 200 and given.json()["learned"]
        like = httpx.post(f"{url}/v1/ask", headers=key, json={
            "database": "demo", "question": "How many people work as executives or directors at Helios Energy AG?"}).json()
    if role == "editor":
        assert like["grounds"]["path"] == "verified" and like["grounds"]["verified_query"]["verified_by"] == "kim"
    else:
        assert like["grounds"]["path"] == "semantic"


def test_a_wrong_answer_an_editor_confirmed_shows_in_the_benchmark_as_what_broke(tmp_path: Path, pack: Path) -> None:
    """The benchmark runs with the examples people confirmed: a wrong correction of a question
    shaped like a benchmark question answers that one wrongly, flagged, and says whose it was."""
    (pack / "benchmark.jsonl").write_text(json.dumps({"question": JAPAN_QUESTION, "sql": JAPAN_SQL}) + "\n")
    with server(tmp_path, pack) as (url, service):
        editor = bearer(service.state.add_key("kim", [], "editor"))
        assert httpx.post(f"{url}/v1/databases/demo/benchmarks", headers=editor).status_code == 202
        first = wait_for_run(url, editor)
        assert next(a for a in first["answers"] if a["question"] == JAPAN_QUESTION)["reason"] == "right"
        time.sleep(1.1)
        asked = httpx.post(f"{url}/v1/ask", headers=editor, json={
            "database": "demo", "question": "How many companies are headquartered in Germany?"})
        wrong = JAPAN_SQL.replace("COUNT(*)", "COUNT(*) + 1").replace("'Japan'", "'Germany'")
        assert httpx.post(f"{url}/v1/feedback", headers=editor, json={
            "answer_id": asked.json()["answer_id"], "verdict": "wrong", "corrected_sql": wrong}).status_code == 200
        assert httpx.post(f"{url}/v1/databases/demo/benchmarks", headers=editor).status_code == 202
        second = wait_for_run(url, editor)
    japan = next(a for a in second["answers"] if a["question"] == JAPAN_QUESTION)
    assert (japan["reason"], japan["regression"], japan["verified_by"]) == ("wrong_values", True, "kim")
