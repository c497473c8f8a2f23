// One turn of the conversation: the question, its stages as they finish, then the answer: the
// SQL, the result as a chart and a table, the grounds, and the right/wrong control.

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
  if (!answer.ok) {
    // A failed answer's SQL is what the validator refused or the database rejected.
    return [asked, el("p", { class: "error", role: "alert" }, sentence(answer.error)),
      answer.sql ? sqlBlock(answer.sql, "SQL that did not run") : null,
      groundsView(answer, steps), teachView(answer)];
  }
  return [asked, pathView(answer), sqlBlock(answer.sql), chartView(answer.columns, answer.rows),
    resultTable(answer), groundsView(answer, steps), teachView(answer)];
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

function sentence(error) {
  const text = error || "there is no answer";
  return `No answer: ${text}${/[.!?]$/.test(text) ? "" : "."}`;
}
