// The questions of the conversation going on, and the earlier conversations of this browser
// (their ids kept in localStorage, their questions read from GET /v1/conversations/{id}); one
// may be continued.

import { at, call } from "./api.js";
import { el, fill } from "./dom.js";
import { plural } from "./format.js";
import { sqlBlock } from "./sql.js";

const STORE = "groundsql.conversations";
const MOST = 50;

function stored() {
  try {
    const list = JSON.parse(localStorage.getItem(STORE));
    return Array.isArray(list) ? list : [];
  } catch {
    return [];
  }
}

export function remember(id, database, question) {
  const known = stored().find((c) => c.id === id);
  const entry = known || { id, database, first: question, at: new Date().toISOString() };
  const others = stored().filter((c) => c.id !== id);
  localStorage.setItem(STORE, JSON.stringify([entry, ...others].slice(0, MOST)));
}

function forget(id) {
  localStorage.setItem(STORE, JSON.stringify(stored().filter((c) => c.id !== id)));
}

// `onContinue(conversation)` takes the person back to asking in that conversation. Only the
// conversations of `databases` (those the key may use) are listed; the server checks the rest
// (another key's conversation is not found).
export function showHistory(panel, onContinue, { current, databases }) {
  const list = stored().filter((c) => databases.includes(c.database) && c.id !== current);
  const now = el("div", { class: "conversation-detail" });
  const detail = el("div", { class: "conversation-detail" });
  const again = () => showHistory(panel, onContinue, { current, databases });
  fill(panel, el("h2", {}, "History"),
    el("h3", {}, "This conversation"),
    current ? now : el("p", { class: "meta" }, "No question asked yet in this conversation."),
    el("h3", {}, "Earlier conversations in this browser"),
    list.length ? el("ul", { class: "history" }, list.map((c) => el("li", {},
      el("button", { type: "button", class: "link", on: { click: () => open(c.id, detail, again, onContinue) } },
        c.first),
      el("span", { class: "meta" }, ` · ${c.database} · ${new Date(c.at).toLocaleString()}`))))
      : el("p", { class: "meta" }, "None yet."),
    detail);
  if (current) open(current, now, again, null);
}

async function open(id, detail, again, onContinue) {
  fill(detail, el("p", { class: "meta", role: "status" }, "Reading the conversation…"));
  let found;
  try {
    found = await call("GET", at`/v1/conversations/${id}`);
  } catch (error) {
    const drop = el("button", { type: "button", on: { click: () => { forget(id); again(); } } }, "Forget it");
    fill(detail, el("p", { class: "error", role: "alert" }, error.message), drop);
    return;
  }
  const heading = el("h4", { tabindex: "-1" }, `${plural(found.turns.length, "question")} on ${found.database}`);
  fill(detail, heading,
    el("ol", { class: "turns compact" }, found.turns.map(turnSummary)),
    onContinue ? el("button", { type: "button", on: { click: () => onContinue(found) } },
      "Continue this conversation") : null);
  if (onContinue) heading.focus();
}

// One earlier turn in brief: the question, how it was understood, its outcome and SQL.
export function turnSummary(turn) {
  return el("li", { class: "turn earlier" },
    el("p", { class: "asked" }, turn.question),
    turn.standalone_question !== turn.question ? el("p", { class: "meta" }, `Answered as: ${turn.standalone_question}`) : null,
    turn.error ? el("p", { class: "error" }, `No answer: ${turn.error}`)
      : el("p", { class: "meta" }, `${plural(turn.row_count, "row")}: ${turn.columns.join(", ")}`),
    turn.sql ? sqlBlock(turn.sql) : null);
}
