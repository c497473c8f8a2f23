"""The web page in a real browser: headless Chromium from Debian's packages (/usr/bin/chromium;
.ci/run installs it) driven by Playwright against a live `groundsql serve` on 127.0.0.1.

Most tests answer from the replay backend (recorded from the real 0.5B model) or a scripted
model: they prove the page (streaming, tables, charts, grounds, teaching, keys, escaping), never
accuracy; one runs the real 0.5B model. Every test fails on a script error, a console error, a
browser dialog (an `alert` from injected markup) or a request to any host but the server.

Screenshots of the main states are taken as the tests go; with GROUNDSQL_SCREENSHOTS=1 they are
written to docs/screenshots/ (the README's pictures), otherwise to the test's temporary folder.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from groundsql.config import LLMConfig
from groundsql.llm import LLM, ChatRequest, Completion, build_llm
from tests.conftest import REPO, spider_db
from tests.server_harness import REPLAY_LLM, live_server
from tests.test_grounded import scripted
from tests.test_server import Slow, config, digest, with_pets

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = REPO / "docs" / "screenshots"
STATIC = REPO / "src" / "groundsql" / "server" / "static"
DEMO = {"url": None, "strategy": "grounded", "settings": {"grounded": {"embeddings": False}}}
EVIL = '<img src=x onerror="window.pwned=1;alert(1)">'
WAIT_MS = 60_000
expect.set_options(timeout=WAIT_MS)


# -- the browser and the page ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.is_file():
        message = f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)  # in CI a missing browser must not pass as skipped tests
        pytest.skip(message)
    with sync_playwright() as playwright:
        # Debian's Chromium, never a browser Playwright would download.
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield browser
        browser.close()


def open_page(browser: Browser, *, phone: bool = False) -> tuple[Page, list[str]]:
    """A fresh tab (its own sessionStorage and localStorage) and the list of what went wrong in it."""
    size = {"width": 390, "height": 844} if phone else {"width": 1280, "height": 860}
    context = browser.new_context(viewport=size, locale="en-US", is_mobile=phone, has_touch=phone)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    problems: list[str] = []
    # A 4xx answer is logged as "Failed to load resource"; the page shows those itself.
    page.on("console", lambda m: m.type == "error" and not m.text.startswith("Failed to load resource")
            and problems.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"script error: {e}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    # A blob: URL of the server's own origin is something the page made (a chart as PNG).
    page.on("request", lambda r: urlparse(r.url.removeprefix("blob:")).hostname != "127.0.0.1"
            and problems.append(f"request to {r.url}"))
    return page, problems


@pytest.fixture
def tab(browser: Browser) -> Iterator[Page]:
    page, problems = open_page(browser)
    yield page
    page.context.close()
    assert problems == []


def shoot(page: Page, name: str, folder: Path, *, full: bool = True) -> None:
    target = SHOTS if os.environ.get("GROUNDSQL_SCREENSHOTS") else folder
    target.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=target / f"{name}.png", full_page=full)


def ask(page: Page, question: str, timeout_ms: float = WAIT_MS) -> None:
    """Ask as a person does (type, Enter) and wait for the answer or the failure."""
    turns = page.locator("#turns > li.turn:not(.earlier)")
    before = turns.count()
    page.get_by_label("Question").fill(question)
    page.get_by_label("Question").press("Enter")
    expect(turns).to_have_count(before + 1)
    expect(turns.last).not_to_have_attribute("aria-busy", "true", timeout=timeout_ms)


def last_turn(page: Page):
    return page.locator("#turns > li.turn").last


def cells(table) -> list[list[str]]:
    return table.locator("tbody tr").evaluate_all("rows => rows.map(r => [...r.cells].map(c => c.textContent))")


# -- servers ----------------------------------------------------------------------------------------------


class Paced(LLM):
    """The recorded answers, each after `delay_s`: slow enough to watch the stages arrive."""

    def __init__(self, delay_s: float) -> None:
        self.inner = build_llm(LLMConfig.model_validate(REPLAY_LLM))
        self.model_id, self.retries, self.delay_s = self.inner.model_id, 0, delay_s

    def _complete(self, request: ChatRequest) -> Completion:
        time.sleep(self.delay_s)
        return self.inner.complete(request)


@pytest.fixture
def singers(tmp_path: Path) -> Path:
    copy = tmp_path / "concert_singer.sqlite"
    shutil.copy(spider_db("concert_singer"), copy)
    return copy


def start(page: Page, url: str, database: str | None = None) -> None:
    page.goto(f"{url}/" + (f"#db={database}" if database else ""))
    expect(page.get_by_label("Database")).to_be_enabled()


# -- asking ------------------------------------------------------------------------------------------------


def test_ask_streams_its_stages_then_shows_sql_table_and_chart(tab: Page, tmp_path: Path, singers: Path) -> None:
    with live_server(config(tmp_path, singers), llm=Paced(1.5)) as (url, _):
        start(tab, url)
        expect(tab.get_by_label("Database")).to_have_value("singers")
        tab.context.grant_permissions(["clipboard-read", "clipboard-write"])
        tab.get_by_label("Question").fill("How many singers are there in each country?")
        tab.get_by_role("button", name="Ask", exact=True).click()
        busy = tab.locator("#turns > li.turn[aria-busy='true']")
        # The schema stage is listed while the model is still writing: the stream, live.
        expect(busy.locator(".stage-name")).to_have_text(["schema"])
        expect(busy.locator(".working")).to_be_visible()
        shoot(tab, "ask-stages", tmp_path)
        expect(tab.locator("#turns > li.turn[aria-busy]")).to_have_count(0)
        turn = last_turn(tab)
        expect(turn.locator(".stages-box summary")).to_have_text(re.compile(r"Stages: 3 in [\d.]+ s, 1 model call"))

        sql = turn.locator(".sql pre")
        expect(sql).to_have_text("SELECT Country, COUNT(*) AS Singer_count FROM singer GROUP BY Country LIMIT 1000")
        expect(sql.locator(".sql-keyword").first).to_have_text("SELECT")
        turn.get_by_role("button", name="Copy SQL").click()
        expect(turn.locator(".copy-status")).to_have_text("Copied.")
        assert tab.evaluate("navigator.clipboard.readText()").startswith("SELECT Country, COUNT(*)")

        table = turn.locator("table.result")
        expect(turn.locator(".count")).to_have_text("3 rows")
        assert cells(table) == [["France", "4"], ["Netherlands", "1"], ["United States", "1"]]
        assert table.locator("td.num").first.evaluate("td => getComputedStyle(td).textAlign") == "right"
        table.get_by_role("button", name="Country").click()
        table.get_by_role("button", name="Country").click()  # again: descending
        expect(table.locator("th").first).to_have_attribute("aria-sort", "descending")
        assert [row[0] for row in cells(table)] == ["United States", "Netherlands", "France"]

        chart = turn.locator(".chart")
        expect(chart.locator("svg[role='img']")).to_have_attribute("aria-label", "Bar chart of Singer_count by Country")
        expect(chart.locator("svg[role='img'] rect")).to_have_count(3)
        shoot(tab, "ask-answer", tmp_path)
        chart.get_by_label("Line").check()
        expect(chart.locator("svg[role='img']")).to_have_attribute("aria-label", "Line chart of Singer_count by Country")
        chart.get_by_label("Hidden").check()
        expect(chart.locator("svg[role='img']")).to_have_count(0)


def test_a_result_downloads_as_csv_and_a_cut_one_says_it_holds_the_first_rows(tab: Page, tmp_path: Path,
                                                                              singers: Path) -> None:
    capped = {"databases": {"singers": {"url": str(singers), "strategy": "zero-shot",
                                        "settings": {"database": {"max_rows": 4}}}}}
    model = Slow("SELECT Name, Country FROM singer ORDER BY Name")
    with live_server({**config(tmp_path, singers), **capped}, llm=model) as (url, _):
        start(tab, url)
        ask(tab, "List the singers and their countries")
        turn = last_turn(tab)
        button = turn.get_by_role("button", name="Download CSV (the first rows only)")
        with tab.expect_download() as waiting:
            button.click()
        download = waiting.value
        assert re.fullmatch(r"answer-[0-9a-f]{8}-first-4-rows\.csv", download.suggested_filename)
        text = Path(download.path()).read_text()
        assert text.splitlines()[0] == "Name,Country" and len(text.splitlines()) == 5
        assert text.splitlines()[1].split(",")[0] == cells(turn.locator("table.result"))[0][0]


def test_a_chart_downloads_as_svg_with_its_styles_and_as_png(tab: Page, tmp_path: Path, singers: Path) -> None:
    import struct

    model = Slow("SELECT Country, COUNT(*) AS singers, AVG(Age) AS age FROM singer GROUP BY Country")
    with live_server(config(tmp_path, singers), llm=model) as (url, _):
        start(tab, url)
        ask(tab, "How many singers, and how old, in each country?")
        turn = last_turn(tab)
        with tab.expect_download() as waiting:
            turn.get_by_role("button", name="Download SVG").click()
        saved = waiting.value
        assert saved.suggested_filename == "bar-chart-of-singers-age-by-country.svg"
        text = Path(saved.path()).read_text()
        assert text.startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in text
        # Each country's two bars, in the series' colours (as computed), and the legend's keys.
        assert text.count('<rect x=') >= 6 and 'fill="rgb(31, 95, 168)"' in text and 'fill="rgb(180, 83, 26)"' in text
        assert 'fill="#1f5fa8"/><text' in text and 'fill="#b4531a"/><text' in text
        assert ">France<" in text and ">singers<" in text and ">age<" in text  # labels, and the legend's names
        assert 'class="tick"' in text and 'font-size="13px"' in text  # the stylesheet's, written in
        with tab.expect_download() as waiting:
            turn.get_by_role("button", name="Download PNG").click()
        png = Path(waiting.value.path()).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", png[16:24])
        shown = turn.locator("svg.chart-svg")
        assert width == 2 * int(shown.get_attribute("width")) and height > 2 * int(shown.get_attribute("height"))


@pytest.mark.parametrize(("repair", "how", "first_error"), [
    # The model's query named a column of another table: the join is added without the model,
    (True, ["No reflection turns.", "1 query mended without the model"],
     "Did not work: no such column: YEAR (mended without the model)"),
    # or, with repair off, the model is shown the error and writes the join itself.
    (False, ["1 reflection turn: the model was shown what went wrong"], "Did not work: no such column: YEAR"),
])
def test_a_time_column_makes_a_line_and_the_queries_tried_are_shown(
        tab: Page, tmp_path: Path, singers: Path, repair: bool, how: list[str], first_error: str) -> None:
    setup = config(tmp_path, singers)
    setup["databases"]["singers"]["settings"] = {"generation": {"repair": repair}}
    with live_server(setup) as (url, _):
        start(tab, url)
        ask(tab, "How many singers released a song in each year?")
        turn = last_turn(tab)
        expect(turn.locator(".chart svg[role='img']")).to_have_attribute("aria-label",
                                                                        "Line chart of num_singers by Year")
        assert cells(turn.locator("table.result")) == [["2014", "6"], ["2015", "4"]]
        turn.locator(".grounds summary").click()
        grounds = turn.locator(".grounds")
        for text in how:
            expect(grounds).to_contain_text(text)
        attempts = grounds.locator(".attempts > li")
        expect(attempts).to_have_count(2)
        expect(attempts.first).to_contain_text(first_error)
        expect(attempts.last).to_contain_text("JOIN concert")
        expect(attempts.last).to_contain_text("Ran: 2 rows.")


def test_a_follow_up_continues_the_conversation_and_the_history_lists_it(tab: Page, tmp_path: Path,
                                                                         singers: Path) -> None:
    with live_server(config(tmp_path, singers)) as (url, _):
        start(tab, url)
        ask(tab, "How many singers do we have?")
        assert cells(last_turn(tab).locator("table.result")) == [["6"]]
        expect(last_turn(tab).locator(".chart")).to_have_count(0)  # one figure: no chart
        ask(tab, "And how many of them are from France?")
        turn = last_turn(tab)
        expect(turn.locator(".stage-name").first).to_have_text("resolve")
        expect(turn.locator(".answer-body > .meta").first).to_have_text(
            "Answered as: How many singers are there from France?")
        assert cells(turn.locator("table.result")) == [["4"]]
        expect(tab.locator("#conversation-title")).to_have_text("Conversation on singers: 2 questions")
        shoot(tab, "follow-up", tmp_path)

        tab.get_by_role("tab", name="History").click()
        history = tab.locator("#history-panel")
        expect(history.locator(".asked")).to_have_text(["How many singers do we have?",
                                                        "And how many of them are from France?"])
        # A new conversation; the first is listed among the earlier ones and can be continued.
        tab.get_by_role("tab", name="Ask").click()
        tab.get_by_role("button", name="New conversation").click()
        expect(tab.locator("#turns > li")).to_have_count(0)
        tab.get_by_role("tab", name="History").click()
        history.get_by_role("button", name="How many singers do we have?").click()
        history.get_by_role("button", name="Continue this conversation").click()
        expect(tab.locator("#turns > li.earlier")).to_have_count(2)
        expect(tab.get_by_label("Question")).to_be_focused()


# -- teaching -------------------------------------------------------------------------------------------------


def test_wrong_opens_the_editor_and_a_corrected_sql_is_run_then_saved(tab: Page, tmp_path: Path,
                                                                     singers: Path) -> None:
    before = digest(singers)
    setup = config(tmp_path, singers)
    setup["databases"]["singers"]["settings"] = {"database": {"max_rows": 30}}  # a cap to reach
    with live_server(setup) as (url, service):
        start(tab, url)
        ask(tab, "How many singers are there in each country?")
        turn = last_turn(tab)
        answered = turn.locator(".sql pre").text_content()
        turn.get_by_role("button", name="Wrong").click()
        editor = turn.get_by_label("Corrected SQL")
        expect(editor).to_be_focused()
        expect(editor).to_have_value(answered)
        # Run (Ctrl+Enter) shows a result without storing it: here one cut by the row cap, in pages.
        editor.fill("SELECT s.Name, c.concert_Name FROM singer s CROSS JOIN concert c ORDER BY 1, 2")
        editor.press("Control+Enter")
        result = turn.locator(".correction-result")
        expect(result.locator(".count")).to_have_text("30 rows")
        expect(result.locator(".truncated")).to_have_text(
            "The result was cut: only its first 30 rows came back (the server's row or size cap).")
        expect(result.locator(".pager-status")).to_have_text("Rows 1–20 of 30")
        expect(result.locator("tbody tr")).to_have_count(20)
        result.get_by_role("button", name="Next").click()
        expect(result.locator(".pager-status")).to_have_text("Rows 21–30 of 30")
        expect(result.get_by_role("button", name="Next")).to_be_disabled()
        expect(turn.locator(".teach-status")).to_have_text("")
        # A write is refused by the validator, in one sentence, and nothing is stored.
        editor.fill("DELETE FROM singer")
        turn.get_by_role("button", name="Save correction").click()
        expect(turn.locator(".editor .error")).to_have_text(re.compile(r"^refused DELETE: DELETE is not a read-only"))
        expect(turn.locator(".teach-status")).to_have_text("Not saved.")
        editor.fill("SELECT Country, COUNT(*) AS singers FROM singer GROUP BY Country ORDER BY singers DESC, Country")
        turn.get_by_role("button", name="Save correction").click()
        expect(turn.locator(".teach-status")).to_have_text(
            "Saved: the corrected SQL is now a solved example for the next questions.")
        expect(turn.locator(".editor .error")).to_be_hidden()
        assert cells(turn.locator(".correction-result table")) == [
            ["France", "4"], ["Netherlands", "1"], ["United States", "1"]]
        shoot(tab, "teach", tmp_path)
        learned = [(e.question, e.sql) for e in service.databases["singers"].session.context.learned]
    assert learned == [("How many singers are there in each country?",
                        "SELECT Country, COUNT(*) AS singers FROM singer GROUP BY Country ORDER BY singers DESC, "
                        "Country LIMIT 1000")]
    assert digest(singers) == before


def test_a_refused_question_is_one_clear_sentence(tab: Page, tmp_path: Path, singers: Path) -> None:
    before = digest(singers)
    with live_server(config(tmp_path, singers)) as (url, _):
        start(tab, url)
        ask(tab, "Delete all the singers from France.")
        turn = last_turn(tab)
        error = turn.locator(".answer-body > p.error[role='alert']")
        expect(error).to_have_text(re.compile(
            r"^No answer: no working query after 2 attempts: refused DELETE: DELETE is not a read-only query; .*\.$"))
        assert "\n" not in error.text_content()
        expect(turn.locator(".sql-label")).to_have_text("SQL that did not run")
        expect(turn.get_by_role("button", name="Right")).to_be_disabled()
        expect(turn.locator("table.result")).to_have_count(0)
        shoot(tab, "refused", tmp_path)
    assert digest(singers) == before


# -- grounds and the schema (the demo database, its domain pack, a scripted model) --------------------------------

TREND_SQL = (
    "SELECT fp.fiscal_year, fd.data_value AS revenue FROM financial_data fd JOIN financial_period fp "
    "ON fd.financial_period_id = fp.financial_period_id WHERE fp.company_id = 7375367 "
    "AND fd.data_item_id = 28 AND fp.period_type_id = 1 ORDER BY fp.fiscal_year")


def demo_config(tmp_path: Path) -> dict:
    return {"state_url": f"sqlite:///{tmp_path / 'state.sqlite'}", "auth": False, "databases": {"demo": DEMO}}


def compiled_server(tmp_path: Path, request: dict):
    """The demo on the compiled path, its model scripted to answer with `request`."""
    import json

    setup = {**demo_config(tmp_path), "databases": {"demo": {**DEMO, "strategy": "compiled"}}}
    return live_server(setup, llm=scripted(generate=json.dumps(request)))


def test_the_page_says_which_path_made_the_sql(tab: Page, tmp_path: Path) -> None:
    """A verified query is shown as trusted with its values; a semantic request as compiled,
    with the request in the grounds."""
    request = {"select": ["company_count"], "where": [{"field": "country", "value": "Japan"}]}
    with compiled_server(tmp_path, request) as (url, _):
        start(tab, url)
        ask(tab, "Which companies are subsidiaries of Coral Sea Financial Ltd?")
        turn = last_turn(tab)
        path = turn.locator("p.path")
        expect(path).to_contain_text("Trusted")
        expect(path).to_contain_text("Which companies are subsidiaries of Keystone Dairy Holdings, Inc.?")
        expect(path).to_contain_text("company = Coral Sea Financial Ltd")
        expect(path).to_contain_text("verified by groundsql maintainers")
        turn.locator(".grounds summary").click()
        expect(turn.locator(".grounds").get_by_role("heading", name="Verified query")).to_be_visible()
        shoot(tab, "trusted", tmp_path)

        # A new conversation: the scripted model would answer a follow-up's resolution with its request.
        tab.get_by_role("button", name="New conversation").click()
        ask(tab, "How many companies are based in Japan?")
        turn = last_turn(tab)
        expect(turn.locator("p.path")).to_contain_text("Compiled")
        expect(turn.locator("table.result")).to_contain_text("8")
        turn.locator(".grounds summary").click()
        grounds = turn.locator(".grounds")
        expect(grounds.get_by_role("heading", name=re.compile("^Semantic request"))).to_be_visible()
        expect(grounds).to_contain_text('"company_count"')


def test_an_empty_conversation_offers_the_packs_onboarding_questions_and_a_click_asks_one(tab: Page,
                                                                                          tmp_path: Path) -> None:
    """The demo pack marks four verified queries `onboarding`: a new conversation lists them,
    a click asks the question and the verified query answers it, trusted."""
    with compiled_server(tmp_path, {"select": ["company_count"], "where": []}) as (url, _):
        start(tab, url)
        offered = tab.get_by_role("list", name="Try one of these").get_by_role("button")
        expect(offered).to_have_count(4)
        expect(offered.nth(2)).to_have_text("How many banks are there in the database?")
        offered.nth(2).click()
        expect(tab.locator("#turns > li.turn[aria-busy]")).to_have_count(0)
        turn = last_turn(tab)
        expect(turn.locator("h3.asked")).to_have_text("How many banks are there in the database?")
        expect(turn.locator("p.path")).to_contain_text("Trusted")
        expect(tab.locator("#onboarding")).to_be_hidden()
        tab.get_by_role("button", name="New conversation").click()
        expect(offered).to_have_count(4)
        expect(tab.locator("#onboarding")).to_be_visible()


def test_a_question_asked_back_shows_its_options_as_buttons_and_a_click_answers_it(tab: Page,
                                                                                  tmp_path: Path) -> None:
    request = {"select": ["founded_year"], "where": [{"field": "company", "value": "Marlow Reinsurance plc"}]}
    with compiled_server(tmp_path, request) as (url, _):
        start(tab, url)
        ask(tab, "When was Reinsurance founded?")
        turn = last_turn(tab)
        group = turn.get_by_role("group", name="Which company do you mean by 'Reinsurance'?")
        expect(group).to_be_visible()
        options = group.get_by_role("button")
        expect(options).to_have_text(["Banksia Reinsurance Ltd", "Marlow Reinsurance plc"])
        shoot(tab, "asked-back", tmp_path)
        turns = tab.locator("#turns > li.turn:not(.earlier)")
        group.get_by_role("button", name="Marlow Reinsurance plc").click()
        expect(turns).to_have_count(2)
        reply = last_turn(tab)
        expect(reply.locator("h3.asked")).to_have_text("Marlow Reinsurance plc")
        expect(reply.locator("p.meta").first).to_contain_text("When was Marlow Reinsurance plc founded?")
        expect(reply.locator("table.result")).to_be_visible()
        expect(reply.locator("p.path")).to_contain_text("Compiled")


def test_grounds_show_resolved_ids_entities_tables_examples_and_what_was_not_found(tab: Page,
                                                                                    tmp_path: Path) -> None:
    model = scripted(generate=f"```sql\n{TREND_SQL}\n```")
    with live_server(demo_config(tmp_path), llm=model) as (url, _):
        start(tab, url)
        ask(tab, "What was the annual revenue of Aurora Therapeutics each year?")
        turn = last_turn(tab)
        expect(turn.locator(".chart svg[role='img']")).to_have_attribute("aria-label",
                                                                        "Line chart of revenue by fiscal_year")
        rows = cells(turn.locator("table.result"))
        assert rows[0] == ["2019", "45.467"] and len(rows) == 5  # a year is not "2,019"
        # Every point lies on the plot, the highest (2023) below the top of the axis, not cut off.
        tops = turn.locator(".chart svg[role='img'] circle").evaluate_all("cs => cs.map(c => +c.getAttribute('cy'))")
        lines = turn.locator(".chart svg[role='img'] line.grid").evaluate_all("ls => ls.map(l => +l.getAttribute('y1'))")
        assert len(tops) == 5 and min(tops) >= min(lines)
        turn.locator(".grounds summary").click()
        grounds = turn.locator(".grounds")
        resolved = grounds.locator("section", has=tab.get_by_role("heading", name="Resolved values")).locator("ul > li")
        expect(resolved).to_have_count(3)
        expect(resolved.nth(0)).to_contain_text("revenue → Total Revenue ref_data_item.data_item_id = 28 lookup")
        expect(resolved.nth(0).locator("dl.row")).to_contain_text("data_item_name")
        expect(resolved.nth(2)).to_contain_text(
            "Aurora Therapeutics → Aurora Therapeutics plc company.company_id = 7375367 entity, confidence 100%")
        expect(grounds).to_contain_text("financial_data — chosen by the model: revenue figures of a company")
        expect(grounds).to_contain_text("financial_period — bridge: joins the chosen tables")
        expect(grounds.get_by_role("heading", name=re.compile("^Solved examples used"))).to_be_visible()
        expect(grounds).to_contain_text("Strategy: grounded, domain pack findemo")
        tab.evaluate("window.scrollTo(0, 0)")
        shoot(tab, "grounds", tmp_path)
        turn.get_by_role("button", name="Right").click()
        expect(turn.locator(".teach-status")).to_have_text(
            "Thank you: this answer is now a solved example for the next questions.")

        tab.get_by_role("button", name="New conversation").click()
        ask(tab, "What was the revenue of Blorptech Holdings plc in 2023?")
        turn = last_turn(tab)
        expect(turn.locator(".answer-body > p.error")).to_have_text(re.compile(
            r"^No answer: No company named 'Blorptech Holdings' in the database \(closest: .*\)\. "
            r"I did not guess an ID for it\.$"))
        turn.locator(".grounds summary").click()
        expect(turn.locator(".grounds")).to_contain_text("Blorptech Holdings matched nothing (closest company:")


def test_schema_browser_shows_tables_columns_descriptions_keys_and_reference_rows(tab: Page,
                                                                                 tmp_path: Path) -> None:
    with live_server(demo_config(tmp_path), llm=scripted()) as (url, _):
        start(tab, url)
        tab.get_by_role("tab", name="Schema").click()
        panel = tab.locator("#schema-panel")
        expect(panel.get_by_role("heading", name="Schema of demo")).to_be_visible()
        expect(panel).to_contain_text("Domain pack findemo.")
        tables = panel.locator("details.table")
        expect(tables).to_have_count(24)
        company = tables.filter(has=tab.locator("summary code", has_text=re.compile("^company$")))
        company.locator("summary").click()
        expect(company.locator("summary")).to_contain_text("114 rows")
        name_row = company.locator("table.columns tbody tr", has=tab.locator("code", has_text=re.compile("^company_name$")))
        assert name_row.locator("td").last.text_content().strip() != ""  # the pack's description
        expect(company.locator("table.columns tbody tr").first).to_contain_text("key")  # the primary key
        # A foreign key leads to its table.
        company.get_by_role("button", name="ref_country.country_id").click()
        target = tables.filter(has=tab.locator("summary code", has_text=re.compile("^ref_country$")))
        expect(target.locator("summary")).to_be_focused()
        expect(target).to_have_attribute("open", "")
        # The reference tables, with their rows.
        references = panel.locator("details.reference")
        expect(references.first).to_be_attached()
        item = references.filter(has=tab.locator("summary code", has_text=re.compile("^ref_data_item$")))
        item.locator("summary").click()
        expect(item.locator("table.result")).to_contain_text("Total Revenue")
        company.scroll_into_view_if_needed()
        tab.evaluate("window.scrollTo(0, 0)")
        shoot(tab, "schema", tmp_path, full=False)
        # Finding a table by a column's name.
        panel.get_by_label("Find a table or column").fill("ticker_symbol")
        shown = panel.locator("details.table:visible")
        expect(shown).to_have_count(1)
        expect(shown.locator("summary code")).to_have_text("trading_item")


# -- keys -----------------------------------------------------------------------------------------------------------


def test_a_missing_key_is_asked_for_and_a_key_without_access_sees_nothing_of_that_database(
        tab: Page, tmp_path: Path, singers: Path) -> None:
    with live_server(with_pets(tmp_path, singers)) as (url, service):
        pets_only = service.state.add_key("pets-app", ["pets"])
        everything = service.state.add_key("admin", [])
        tab.goto(f"{url}/")
        # No key: the server says 401 and the page asks for one.
        dialog = tab.get_by_role("dialog", name="API key")
        expect(dialog).to_be_visible()
        expect(dialog.get_by_label("Key")).to_be_focused()
        shoot(tab, "key", tmp_path, full=False)
        dialog.get_by_label("Key").fill("gsql_not_a_key")
        dialog.get_by_role("button", name="Use this key").click()
        expect(dialog.locator("#key-error")).to_have_text("the API key is not valid")
        dialog.get_by_label("Key").fill(pets_only)
        dialog.get_by_role("button", name="Use this key").click()
        expect(dialog).to_be_hidden()
        picker = tab.get_by_label("Database")
        expect(picker.locator("option")).to_have_text(["pets (sqlite)"])
        assert tab.evaluate("sessionStorage.getItem('groundsql.key')") == pets_only

        # A link to a database the key may not use: the server's 403, plainly; none of its data.
        tab.goto(f"{url}/#db=singers")
        tab.reload()
        expect(tab.locator("#notice")).to_have_text("The key 'pets-app' may not use the database 'singers'.")
        expect(picker).to_have_value("pets")
        tab.get_by_role("tab", name="Schema").click()
        expect(tab.locator("#schema-panel h2")).to_have_text("Schema of pets")
        expect(tab.locator("#schema-panel")).not_to_contain_text("singer")
        shoot(tab, "key-forbidden", tmp_path)

        # Another key, with every database; then back: what the first showed goes with it.
        tab.get_by_role("button", name="API key").click()
        tab.get_by_role("dialog").get_by_label("Key").fill(everything)
        tab.get_by_role("dialog").get_by_role("button", name="Use this key").click()
        expect(picker.locator("option")).to_have_text(["singers (sqlite)", "pets (sqlite)"])
        picker.select_option("singers")
        ask(tab, "How many singers do we have?")
        assert cells(last_turn(tab).locator("table.result")) == [["6"]]
        tab.get_by_role("button", name="API key").click()
        tab.get_by_role("dialog").get_by_label("Key").fill(pets_only)
        tab.get_by_role("dialog").get_by_role("button", name="Use this key").click()
        expect(picker.locator("option")).to_have_text(["pets (sqlite)"])
        expect(tab.locator("#turns > li")).to_have_count(0)
        expect(tab.locator("main")).not_to_contain_text("singer")
        tab.get_by_role("tab", name="History").click()
        expect(tab.locator("#history-panel")).not_to_contain_text("singer")

        # Forgetting the key asks for one again.
        tab.get_by_role("button", name="API key").click()
        tab.get_by_role("dialog").get_by_role("button", name="Forget the key").click()
        expect(tab.get_by_role("dialog", name="API key")).to_be_visible()
        assert tab.evaluate("sessionStorage.getItem('groundsql.key')") is None


# -- hostile values ------------------------------------------------------------------------------------------------------


def test_hostile_values_and_model_output_are_shown_as_text(tab: Page, tmp_path: Path) -> None:
    """Database values, column names, the question and the model's SQL are shown literally:
    no markup from them is ever parsed (no element made, no handler run, no dialog)."""
    db = tmp_path / "notes.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute('CREATE TABLE note (note_id INTEGER PRIMARY KEY, "<b>title</b>" TEXT, body TEXT)')
        conn.executemany("INSERT INTO note VALUES (?, ?, ?)",
                         [(1, EVIL, "<script>window.pwned=2</script>"), (2, "plain", None)])
    conn.close()
    alias = EVIL.replace('"', '""')
    sql = f"SELECT note_id, \"<b>title</b>\", body, '{EVIL}' AS \"{alias}\" FROM note ORDER BY note_id"
    setup = {"state_url": f"sqlite:///{tmp_path / 'state.sqlite'}", "auth": False,
             "databases": {"notes": {"url": str(db), "strategy": "zero-shot"}}}
    with live_server(setup, llm=Slow(sql)) as (url, _):
        start(tab, url)
        ask(tab, f"Show the notes {EVIL}")
        turn = last_turn(tab)
        expect(turn.locator("h3.asked")).to_have_text(f"Show the notes {EVIL}")
        table = turn.locator("table.result")
        expect(table.locator("thead th")).to_have_text(["note_id", "<b>title</b>", "body", EVIL])
        assert cells(table) == [["1", EVIL, "<script>window.pwned=2</script>", EVIL], ["2", "plain", "NULL", EVIL]]
        expect(table.locator("td.null")).to_have_text(["NULL"])
        expect(turn.locator(".sql pre")).to_contain_text(EVIL)
        turn.locator(".grounds summary").click()
        tab.get_by_role("tab", name="Schema").click()
        columns = tab.locator("#schema-panel details.table")
        columns.locator("summary").click()
        expect(columns.locator("table.columns")).to_contain_text("<b>title</b>")
        expect(columns.locator("table.columns")).to_contain_text(EVIL)  # an example value
        assert tab.locator("img[src='x'], b, main script").count() == 0
        assert tab.evaluate("window.pwned") is None


# -- a page for everyone ------------------------------------------------------------------------------------------------


# Text whose colour is below 4.5:1 against the background it sits on (WCAG AA), as
# "text: ratio"; disabled controls are exempt.
LOW_CONTRAST = """() => {
  const rgb = (c) => c.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => v / 255)
    .map((v) => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = (node) => {
    for (let n = node; n; n = n.parentElement) {
      const c = rgb(getComputedStyle(n).backgroundColor);
      if (c.length < 4 || c[3] > 0) return c;
    }
    return [255, 255, 255];
  };
  const low = [];
  for (const node of document.querySelectorAll("main *, header *, .notice")) {
    const own = [...node.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim());
    if (!own || node.closest("svg, [hidden], dialog:not([open])") || node.disabled || !node.getClientRects().length) continue;
    const [a, b] = [lum(rgb(getComputedStyle(node).color)), lum(background(node))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) low.push(`${node.textContent.trim().slice(0, 30)}: ${ratio.toFixed(2)}`);
  }
  return low;
}"""


def test_on_a_phone_by_keyboard_alone(browser: Browser, tmp_path: Path, singers: Path) -> None:
    page, problems = open_page(browser, phone=True)
    with live_server(config(tmp_path, singers)) as (url, _):
        start(page, url)
        # Every control has a name a screen reader says.
        unnamed = page.evaluate("""() => [...document.querySelectorAll('input, select, textarea, button')]
            .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim())
            .map((e) => e.outerHTML)""")
        assert unnamed == []
        page.keyboard.press("Tab")  # the skip link comes first
        expect(page.get_by_role("link", name="Skip to the question")).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.get_by_label("Question")).to_be_focused()
        page.keyboard.type("How many singers are there in each country?")
        page.keyboard.press("Enter")
        expect(page.locator("#turns > li.turn:not([aria-busy])")).to_have_count(1)
        turn = last_turn(page)
        expect(turn.locator(".chart svg[role='img']")).to_be_visible()
        assert page.evaluate(LOW_CONTRAST) == []
        # Nothing wider than the phone: the page does not scroll sideways.
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert turn.locator(".chart svg[role='img']").evaluate("s => s.getBoundingClientRect().right") <= 390
        # Focus is visible: a ring around the focused control.
        page.get_by_role("tab", name="Ask").focus()
        page.keyboard.press("ArrowRight")
        schema = page.get_by_role("tab", name="Schema")
        expect(schema).to_be_focused()
        expect(schema).to_have_attribute("aria-selected", "true")
        assert schema.evaluate("b => getComputedStyle(b).outlineStyle") == "solid"
        page.keyboard.press("ArrowLeft")
        expect(page.get_by_role("tab", name="Ask")).to_have_attribute("aria-selected", "true")
        page.evaluate("window.scrollTo(0, 0)")
        shoot(page, "phone", tmp_path)
    page.context.close()
    assert problems == []


def test_the_page_is_self_contained_and_locked_down(browser: Browser, tmp_path: Path, singers: Path) -> None:
    with live_server(config(tmp_path, singers)) as (url, _):
        # Were a string ever put into a markup sink, the page's Trusted Types policy would throw.
        page, _problems = open_page(browser)
        start(page, url)
        with pytest.raises(PlaywrightError, match="TrustedHTML"):
            page.evaluate("document.createElement('div').innerHTML = '<b>x</b>'")
        page.context.close()
        page = httpx.get(f"{url}/")
        csp = page.headers["content-security-policy"]
        assert page.status_code == 200 and "default-src 'none'" in csp and "script-src 'self'" in csp
        assert "require-trusted-types-for 'script'" in csp  # a string put into a markup sink throws
        assert page.headers["x-content-type-options"] == "nosniff"
        assert httpx.head(f"{url}/").status_code == 200
        for path in sorted(STATIC.iterdir()):
            if path.name == "index.html":
                continue
            served = httpx.get(f"{url}/static/{path.name}")
            assert served.status_code == 200 and served.content == path.read_bytes(), path.name
        for missing in ("nope.js", "..%2Fhttp.py", "%2E%2E%2Fhttp.py"):
            assert httpx.get(f"{url}/static/{missing}").status_code == 404
    # Nothing is fetched from elsewhere at run time, and no markup is built from strings.
    for path in STATIC.iterdir():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text), path.name
        assert not re.search(r"\.(inner|outer)HTML\s*=|insertAdjacentHTML\(|document\.write|\beval\(|new Function\(",
                             text), path.name


# -- the real model -------------------------------------------------------------------------------------------------------


@pytest.mark.model
def test_real_model_answers_in_the_page(tab: Page, tmp_path: Path, singers: Path) -> None:
    setup = {**config(tmp_path, singers), "llm": {"model": "qwen2.5-coder-0.5b", "cache": False}}
    with live_server(setup) as (url, _):
        start(tab, url)
        ask(tab, "How many singers do we have?", timeout_ms=600_000)
        turn = last_turn(tab)
        expect(turn.locator(".stage-name")).to_have_text(["schema", "generate", "validate+execute"])
        assert cells(turn.locator("table.result")) == [["6"]]
        expect(turn.locator(".sql pre")).to_contain_text("FROM singer")
