"""The pack and its benchmark in the page, in headless Chromium (as tests/test_web.py): an editor
adds a synonym and the next answer uses it; adds a verified query and the next like question
is answered by it, trusted; runs the benchmark and sees an answer a bad edit broke flagged; a
reader's key is refused an edit. The model is scripted: these prove the page and the service,
never accuracy."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import Page, expect

from groundsql.packs.load import load_pack
from tests.server_harness import live_server
from tests.test_grounded import scripted
from tests.test_pack_edit import pack  # noqa: F401 (a fixture)
from tests.test_web import ask, browser, cells, last_turn, shoot, start, tab  # noqa: F401 (fixtures)

NORTHWIND_YEARS = {"select": ["fiscal_year"], "where": [{"field": "company", "value": "Northwind Logistics Inc."}]}
BOTTOM_LINE = "What was the bottom line of Northwind Logistics Inc. in each fiscal year?"
STAFF_SQL = ("SELECT COUNT(DISTINCT cp.person_id) AS people FROM company_professional AS cp JOIN company AS c "
             "ON cp.company_id = c.company_id WHERE c.company_name = 'Northwind Logistics Inc.'")


def serve(tmp_path: Path, pack: Path, answer: dict, *, auth: bool = False):
    setup = {"state_url": f"sqlite:///{tmp_path / 'state.sqlite'}", "auth": auth,
             "databases": {"demo": {"url": None, "pack": str(pack), "strategy": "compiled",
                                    "settings": {"grounded": {"embeddings": False}}}}}
    return live_server(setup, llm=scripted(generate=json.dumps(answer)))


def open_entry(page: Page, title: str):
    page.get_by_role("tab", name="Pack").click()
    page.get_by_label("Find an entry").fill(title)
    entry = page.locator("details.entry:not([hidden])", has=page.locator(".entry-title", has_text=title)).first
    entry.locator("summary").click()
    return entry


def test_a_synonym_added_in_the_pack_tab_is_used_by_the_next_answer(tab: Page, tmp_path: Path, pack: Path) -> None:
    with serve(tmp_path, pack, NORTHWIND_YEARS) as (url, _):
        start(tab, url)
        ask(tab, BOTTOM_LINE)  # "bottom line" names no measure yet: the years alone
        assert cells(last_turn(tab).locator("table.result"))[0] == ["2019"]

        entry = open_entry(tab, "financials.net_income")
        synonyms = entry.get_by_label("Synonyms")
        expect(synonyms).to_have_value("profit, earnings, net profit, net loss")
        synonyms.fill("profit, earnings, net profit, net loss, bottom line")
        entry.get_by_role("button", name="Save").click()
        saved = tab.locator("details.entry[open]", has=tab.locator(".entry-title", has_text="financials.net_income"))
        expect(saved.get_by_role("status")).to_have_text("Saved to semantic.yaml.")
        expect(tab.locator(".pack-history")).to_contain_text(
            "local changed semantic.yaml:tables.financials.measures.net_income")
        saved.scroll_into_view_if_needed()
        shoot(tab, "pack-edit", tmp_path, full=False)

        tab.get_by_role("tab", name="Ask").click()
        tab.get_by_role("button", name="New conversation").click()
        ask(tab, BOTTOM_LINE)
        expect(last_turn(tab).locator("table.result thead")).to_contain_text("net_income")
    measures = {m.name: m for m in load_pack(pack).semantic.table("financials").measures}
    assert measures["net_income"].synonyms == ("profit", "earnings", "net profit", "net loss", "bottom line")


def test_a_verified_query_added_in_the_page_answers_the_next_like_question_trusted(tab: Page, tmp_path: Path,
                                                                                  pack: Path) -> None:
    with serve(tmp_path, pack, {"select": ["company_count"], "where": []}) as (url, _):
        start(tab, url)
        tab.get_by_role("tab", name="Pack").click()
        adding = tab.locator("details.adding", has_text="Add a verified query")
        adding.locator("summary").click()
        adding.get_by_label("Asked as").fill("How many people work as executives or directors at Northwind Logistics Inc.?")
        adding.get_by_label("SQL", exact=True).fill(STAFF_SQL.replace("person_id", "people_id"))
        adding.get_by_label("Parameters (JSON)").fill(
            '[{"name": "company", "kind": "entity", "value": "Northwind Logistics Inc."}]')
        adding.get_by_role("button", name="Add").click()
        # A mistake is refused with the file, the line and the field; what was typed stays.
        expect(adding.get_by_role("alert")).to_contain_text("bank.jsonl:3: sql: no such column: cp.people_id")
        adding.get_by_label("SQL", exact=True).fill(STAFF_SQL)
        adding.get_by_role("button", name="Add").click()
        added = tab.locator("details.entry[open]", has=tab.locator(".entry-title", has_text="executives or directors"))
        expect(added.get_by_role("status")).to_have_text("Added to bank.jsonl.")
        expect(added.locator("summary")).to_contain_text("verified by local")

        tab.get_by_role("tab", name="Ask").click()
        ask(tab, "How many people work as executives or directors at Helios Energy AG?")
        path = last_turn(tab).locator("p.path")
        expect(path).to_contain_text("Trusted")
        expect(path).to_contain_text("company = Helios Energy AG")
        expect(path).to_contain_text("verified by local")


def test_the_benchmark_flags_the_answer_a_bad_edit_broke_and_a_score_can_be_overridden(tab: Page, tmp_path: Path,
                                                                                       pack: Path) -> None:
    bank = pack / "bank.jsonl"
    japan = {"question": "How many companies are headquartered in Japan?", "verified_by": "team",
             "sql": "SELECT COUNT(*) FROM company AS c JOIN ref_country AS r ON c.country_id = r.country_id "
                    "WHERE r.country_name = 'Japan'"}
    bank.write_text(bank.read_text() + json.dumps(japan) + "\n")
    answer = {"select": ["company_count"], "where": [{"field": "country", "value": "Japan"}]}
    with serve(tmp_path, pack, answer) as (url, _):
        start(tab, url)
        tab.get_by_role("tab", name="Benchmarks").click()
        expect(tab.locator("#benchmarks-panel")).to_contain_text("No run yet.")
        tab.get_by_role("button", name="Run the benchmark").click()
        row = tab.locator("table.benchmark tbody tr", has_text=japan["question"])
        expect(row.locator("td").first).to_have_text("right")
        expect(row.locator("td").nth(1)).to_have_text("new")
        tab.wait_for_timeout(1100)  # runs are named by the second they start

        semantic = (pack / "semantic.yaml").read_text()
        entry = open_entry(tab, "companies.company_count")
        definition = entry.get_by_label("Definition (JSON)")
        value = json.loads(definition.input_value())
        definition.fill(json.dumps({**value, "expr": value["expr"] + " + 1"}))
        # Tried first: the benchmark runs the pack with the edit, which is not saved.
        entry.get_by_role("button", name="Try on the benchmark").click()
        expect(tab.get_by_role("tab", name="Benchmarks")).to_have_attribute("aria-selected", "true")
        expect(tab.locator("#benchmarks-panel .notice-inline")).to_contain_text("that is not saved")
        expect(tab.locator(".regressions")).to_contain_text(
            f"1 answer right in the run before is not now: {japan['question']}")
        assert (pack / "semantic.yaml").read_text() == semantic
        tab.wait_for_timeout(1100)

        # Saved all the same (the form kept it), and run: the same answer broken.
        tab.get_by_role("tab", name="Pack").click()
        entry.get_by_role("button", name="Save").click()
        expect(tab.locator(".pack-history")).to_contain_text("companies.measures.company_count")
        assert "COUNT(*) + 1" in (pack / "semantic.yaml").read_text()

        tab.get_by_role("tab", name="Benchmarks").click()
        tab.get_by_role("button", name="Run the benchmark").click()
        expect(tab.locator("#benchmarks-panel .notice-inline")).to_have_count(0)
        expect(tab.locator(".regressions")).to_contain_text(
            f"1 answer right in the run before is not now: {japan['question']}")
        expect(row).to_have_class("broken")
        expect(row.locator("td").first).to_have_text("Broken: wrong values")
        expect(row.locator("td").nth(1)).to_have_text("right")
        shoot(tab, "benchmark-regression", tmp_path)

        row.locator("summary").click()
        row.get_by_label("Score it").select_option("right")
        row.get_by_label("because").fill("one more is fine here")
        row.get_by_role("button", name="Save score").click()
        expect(tab.locator(".regressions")).to_be_hidden()
        row.locator("summary").click()
        expect(row).to_contain_text("Scored right by local: one more is fine here")


def test_a_readers_key_sees_the_pack_and_is_refused_an_edit(tab: Page, tmp_path: Path, pack: Path) -> None:
    with serve(tmp_path, pack, NORTHWIND_YEARS, auth=True) as (url, service):
        reader = service.state.add_key("reader", [])
        tab.goto(f"{url}/")
        dialog = tab.get_by_role("dialog", name="API key")
        dialog.get_by_label("Key").fill(reader)
        dialog.get_by_role("button", name="Use this key").click()
        expect(tab.get_by_label("Database")).to_be_enabled()
        tab.get_by_role("tab", name="Pack").click()
        expect(tab.locator("#pack-panel")).to_contain_text("This API key may read the pack but not change it")
        entry = open_entry(tab, "financials.net_income")
        expect(entry.get_by_role("button", name="Save")).to_have_count(0)
        expect(entry.get_by_label("Synonyms")).not_to_be_editable()
        tab.get_by_role("tab", name="Benchmarks").click()
        expect(tab.get_by_role("button", name="Run the benchmark")).to_be_disabled()
        # The API refuses the edit the page does not offer, and says why.
        status = tab.evaluate("""async (key) => {
            const view = await (await fetch('/v1/databases/demo/pack', {headers: {authorization: 'Bearer ' + key}})).json();
            const entry = view.entries.find((e) => e.id.endsWith('measures.net_income'));
            const response = await fetch('/v1/databases/demo/pack/edits', {method: 'POST',
              headers: {authorization: 'Bearer ' + key, 'content-type': 'application/json'},
              body: JSON.stringify({entry: entry.id, base: entry.version, value: entry.value})});
            return [response.status, (await response.json()).error.message];
        }""", reader)
        assert status[0] == 403 and "only an editor's key may change a pack" in status[1]
