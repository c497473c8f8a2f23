// One turn of the conversation: the question, its stages as they finish, then the answer: the
// SQL, the result as a chart and a table, the grounds, and the right/wrong control.

import { at, download } from "./api.js";
import { el } from "./dom.js";
import { chartView } from "./chart.js";
import { groundsView } from "./grounds.js";
import { turnSummary } from "./history.js";
import { sqlBlock } from "./sql.js";
import { stagesView } from "./stages.js";
import { resultTable } from "./table.js";
import { teachView } from "./teach.js";

export function turnView(question) {
  const stages = stagesView();
  const body = el("div", { class: "answer-body" });
  const item = el("li", { class: "turn", "aria-busy": "true" },
    el("h3", { class: "asked" }, question), stages.element, body);
  return {
    element: item,
    step: (step) => stages.add(step),
    answered(answer) {
      stages.finish(answer);
      item.removeAttribute("aria-busy");
      body.append(...answerParts(answer, stages.steps).filter(Boolean));
    },
    failed(error) {
      stages.finish(null);
      item.removeAttribute("aria-busy");
      body.append(el("p", { class: "error", role: "alert" }, error.message));
    },
  };
}

// A turn of a conversation continued from the history: its question and SQL in brief.
export function earlierTurnView(turn) {
  return turnSummary(turn);
}

function answerParts(answer, steps) {
  const asked = answer.standalone_question !== answer.question
    ? el("p", { class: "meta" }, "Answered as: ", answer.standalone_question) : null;
  if (answer.kind === "clarification") return [clarificationView(answer.clarification), groundsView(answer, steps)];
  if (!answer.ok) {
    // A failed answer's SQL is what the validator refused or the database rejected.
    return [asked, el("p", { class: "error", role: "alert" }, sentence(answer.error)),
      answer.sql ? sqlBlock(answer.sql, "SQL that did not run") : null,
      groundsView(answer, steps), teachView(answer)];
  }
  const noValue = (answer.grounds || {}).no_value;
  // No row, or only NULL: said with the reason, never shown as a value.
  const result = noValue ? [el("p", { class: "no-value", role: "status" }, `No value: ${noValue}.`)]
    : [chartView(answer.columns, answer.rows), resultTable(answer), downloadsView(answer)];
  return [asked, pathView(answer), assumedView(answer), sqlBlock(answer.sql), ...result, groundsView(answer, steps),
    teachView(answer)];
}

// A question asked back: its options as buttons. A click replies with the option, as the next
// question of the conversation (app.js listens for the "reply" event); words typed in the
// question box reply too.
function clarificationView(clarification) {
  const buttons = clarification.options.map((option) => {
    const button = el("button", { type: "button", class: "option", title: option.question }, option.label);
    button.addEventListener("click", () => {
      button.dispatchEvent(new CustomEvent("reply", { bubbles: true, detail: option.label }));
    });
    return button;
  });
  return el("div", { class: "clarification", role: "group", "aria-label": clarification.text },
    el("p", {}, el("strong", {}, "Asked back: "), clarification.text),
    el("div", { class: "options" }, ...buttons),
    el("p", { class: "meta" }, "Choose one, or reply in your own words."));
}

// What the answer assumed (a default period, a conversion, a year the request left out): shown
// with the result, not only in the grounds, so that a figure is read as what it is.
function assumedView(answer) {
  const notes = (answer.grounds || {}).assumed || [];
  if (!notes.length) return null;
  return el("div", { class: "assumed" }, el("strong", {}, "Assumed: "),
    el("ul", {}, ...notes.map((note) => el("li", {}, note))));
}

// Which path made the SQL: a verified query (trusted), a semantic request compiled by
// groundsql, or SQL the model wrote.
function pathView(answer) {
  const g = answer.grounds || {};
  if (g.path === "verified") {
    const v = g.verified_query || {};
    const values = Object.entries(v.values || {}).map(([name, value]) => `${name} = ${value}`).join(", ");
    return el("p", { class: g.trusted ? "path trusted" : "path" },
      el("strong", {}, g.trusted ? "Trusted" : "Drafted verified query"),
      ` — the verified query “${v.question}”${values ? ` with ${values}` : ""}`,
      v.verified_by ? el("span", { class: "meta" }, ` (verified by ${v.verified_by}${v.verified_at ? `, ${v.verified_at}` : ""})`) : null);
  }
  if (g.path === "semantic") {
    return el("p", { class: "path" }, el("strong", {}, "Compiled"),
      " — the model chose a semantic request; groundsql wrote the SQL");
  }
  if (g.path === "generated") {
    return el("p", { class: "path" }, el("strong", {}, "Generated"), " — SQL written by the model",
      g.fallback ? el("span", { class: "meta" }, ` (${g.fallback})`) : null);
  }
  return null;
}

// The result as CSV, from the server (its SQL run again, read-only): a cut result says so in
// the button and in the file's name.
function downloadsView(answer) {
  const status = el("span", { class: "meta", role: "status" });
  const button = el("button", { type: "button", class: "download-csv" },
    answer.truncated ? "Download CSV (the first rows only)" : "Download CSV");
  button.addEventListener("click", async () => {
    status.textContent = "";
    try {
      await download(at`/v1/answers/${answer.answer_id}/result.csv`);
    } catch (error) {
      status.textContent = `Not downloaded: ${error.message}`;
    }
  });
  return el("div", { class: "downloads" }, button, status);
}

function sentence(error) {
  const text = error || "there is no answer";
  return `No answer: ${text}${/[.!?]$/.test(text) ? "" : "."}`;
}
