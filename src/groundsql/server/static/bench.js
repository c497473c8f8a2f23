// The pack's benchmark (GET/POST /v1/databases/{name}/benchmarks): its verified queries and
// the team's own questions, each answered as the service answers and scored with a reason,
// side by side with the run before, so an edit that broke an answer shows as a regression.
// An editor may score an answer by hand, with a note.

import { at, call } from "./api.js";
import { el, fill, readFor, uid } from "./dom.js";

const REASONS = {
  right: "right", error: "error", asked_back: "asked back", empty_result: "empty result",
  missing_columns: "missing columns", extra_columns: "extra columns", missing_rows: "missing rows",
  extra_rows: "extra rows", wrong_order: "wrong order", wrong_values: "wrong values",
  judged_wrong: "judged wrong", "": "—",
};
const POLL_MS = 1000;

export async function showBenchmarks(panel, database, current, shownRun = null) {
  const listed = await readFor(panel, `Reading the benchmark of ${database}…`,
    () => call("GET", at`/v1/databases/${database}/benchmarks`), current, { quiet: Boolean(shownRun) });
  if (!listed) return false;
  const running = listed.running && !listed.running.finished ? listed.running : null;
  const again = (run) => showBenchmarks(panel, database, current, run);
  const problem = el("p", { class: "error", role: "alert" });
  const start = el("button", { type: "button", class: "primary", disabled: Boolean(running) || !listed.may_run,
    on: { click: async () => {
      start.disabled = true;
      problem.textContent = "";
      try {
        await call("POST", at`/v1/databases/${database}/benchmarks`);
        again("latest");
      } catch (error) {
        problem.textContent = `${error.message}.`;
        start.disabled = false;
      }
    } } }, "Run the benchmark");
  const progress = el("p", { class: "meta", role: "status" }, running
    ? `Running (${running.run}): ${running.done} of ${running.total} answered…`
    : listed.running && listed.running.error ? `The last run stopped: ${listed.running.error}` : "");
  if (running) setTimeout(() => { if (current()) again(running.run); }, POLL_MS);
  const runs = listed.runs.filter((r) => !running || r.run !== running.run);
  const chosen = shownRun && runs.some((r) => r.run === shownRun) ? shownRun : (runs[0] || {}).run;
  const picker = el("select", { id: uid("run"), on: { change: () => again(picker.value) } },
    runs.map((r) => new Option(`${r.run}: ${r.right} of ${r.counted} right${r.regressions ? `, ${r.regressions} broken` : ""}`
      + (r.trial ? ` (trial of an unsaved edit of ${r.trial.entry})` : ""), r.run)));
  picker.value = chosen || "";
  fill(panel,
    el("h2", {}, `Benchmark of ${database}`),
    el("p", { class: "meta" }, "The pack's verified queries, each asked with the others as the bank, and the questions "
      + "of its benchmark.jsonl; each answer scored with a reason, beside the run before."),
    el("div", { class: "actions" }, start, listed.may_run ? null
      : el("span", { class: "meta" }, " Only an editor's key may run it, on a pack the server may write.")),
    progress, problem,
    runs.length ? el("div", { class: "picker run-picker" }, el("label", { for: picker.id }, "Run"), picker)
      : el("p", { class: "meta" }, "No run yet."),
    el("div", { class: "run" }));
  if (chosen) await showRun(panel.querySelector(".run"), database, chosen, listed.may_run, current, () => again(chosen));
  return true;
}

async function showRun(box, database, run, mayScore, current, again) {
  const found = await readFor(box, "", () => call("GET", at`/v1/databases/${database}/benchmarks/${run}`), current,
    { quiet: true });
  if (!found) return;
  const broken = found.answers.filter((a) => a.regression);
  const failed = found.answers.filter((a) => a.gold_error);
  fill(box,
    found.trial ? el("p", { class: "notice-inline" }, `A trial: the pack with an edit by ${found.trial.by} of `,
      el("code", {}, found.trial.entry), " that is not saved. Save it in the Pack tab to keep it.") : null,
    el("p", { class: "score" }, el("strong", {}, `${found.right} of ${found.counted} right`),
      found.earlier ? ` · compared with ${found.earlier}` : " · the first run"),
    broken.length ? el("p", { class: "regressions", role: "alert" },
      `${broken.length} answer${broken.length === 1 ? "" : "s"} right in the run before ${broken.length === 1 ? "is" : "are"} not now: `,
      broken.map((a) => a.question).join("; ")) : null,
    failed.length ? el("p", { class: "meta" }, `${failed.length} question${failed.length === 1 ? "'s" : "s'"} gold SQL failed to run: `
      + "listed below, not counted.") : null,
    el("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "Answers of the run" },
      el("table", { class: "benchmark" },
        el("thead", {}, el("tr", {}, ["Question", "Now", "Before", ""].map((h) => el("th", { scope: "col" }, h)))),
        el("tbody", {}, found.answers.map((a) => answerRow(a, database, run, mayScore, again))))));
}

function answerRow(answer, database, run, mayScore, again) {
  const now = answer.gold_error ? "gold failed" : REASONS[answer.reason] ?? answer.reason;
  const details = el("details", {},
    el("summary", {}, "Details"),
    answer.gold_error ? el("p", { class: "error" }, `The gold SQL failed: ${answer.gold_error}`) : null,
    answer.error ? el("p", { class: "error" }, answer.error) : null,
    answer.verified_by ? el("p", {}, `Answered by a verified query, verified by ${answer.verified_by}.`) : null,
    el("p", { class: "meta" }, "Answer:"), el("pre", { class: "raw" }, answer.sql || "(no SQL)"),
    el("p", { class: "meta" }, "Gold:"), el("pre", { class: "raw" }, answer.gold_sql || ""),
    answer.override ? el("p", {}, `Scored ${answer.override.verdict} by ${answer.override.by}: ${answer.override.note} `,
      el("span", { class: "meta" }, `(the comparison said ${REASONS[answer.model_reason] ?? answer.model_reason})`)) : null,
    mayScore && !answer.gold_error ? overrideForm(answer, database, run, again) : null);
  return el("tr", { class: answer.regression ? "broken" : answer.reason === "right" ? "right" : null },
    el("th", { scope: "row" }, answer.question),
    el("td", {}, answer.regression ? el("strong", {}, `Broken: ${now}`) : now),
    el("td", {}, answer.before ? REASONS[answer.before] ?? answer.before : "new"),
    el("td", {}, details));
}

function overrideForm(answer, database, run, again) {
  const verdictId = uid("verdict");
  const noteId = uid("note");
  const verdict = el("select", { id: verdictId }, new Option("right", "right"), new Option("wrong", "wrong"));
  verdict.value = answer.reason === "right" ? "wrong" : "right";
  const note = el("input", { id: noteId, type: "text", autocomplete: "off", required: true });
  const problem = el("p", { class: "error", role: "alert" });
  return el("form", { class: "override", on: { submit: async (event) => {
    event.preventDefault();
    try {
      await call("POST", at`/v1/databases/${database}/benchmarks/${run}/overrides`,
        { item_id: answer.item_id, verdict: verdict.value, note: note.value.trim() });
      again();
    } catch (error) {
      problem.textContent = `${error.message}.`;
    }
  } } },
  el("label", { for: verdictId }, "Score it"), verdict,
  el("label", { for: noteId }, "because"), note,
  el("button", { type: "submit" }, "Save score"), problem);
}
