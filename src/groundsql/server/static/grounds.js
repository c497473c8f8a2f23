// The grounds of an answer: what it rests on, in the words a person checks it by.

import { el } from "./dom.js";
import { formatNumber, plural } from "./format.js";
import { reflections } from "./stages.js";

const KNOWN = new Set(["conversation", "constraints", "unresolved", "tables", "joins", "examples", "retrieval", "pack",
  "path", "trusted", "request", "verified_query", "assumed", "fallback", "entities", "no_value",
  "clarification"]);

function section(title, ...body) {
  return el("section", { class: "ground" }, el("h4", {}, title), ...body);
}

function percent(confidence) {
  return typeof confidence === "number" ? `${Math.round(confidence * 100)}%` : "";
}

// A reference row as "column: value" pairs.
function rowList(row) {
  return el("dl", { class: "row" }, Object.entries(row || {}).flatMap(([name, value]) =>
    [el("dt", {}, name), el("dd", {}, value === null ? "NULL" : String(value))]));
}

function constraints(items) {
  return section("Resolved values", el("ul", {}, items.map((c) => el("li", {},
    el("q", {}, c.phrase), " → ", el("strong", {}, c.label ?? String(c.id)), " ",
    el("code", {}, c.filter),
    el("span", { class: "meta" }, ` ${c.source}${c.confidence !== null && c.confidence !== undefined ? `, confidence ${percent(c.confidence)}` : ""}`),
    rowList(c.row)))));
}

function unresolved(items) {
  return section("Not found", el("ul", {}, items.map((u) => el("li", {},
    el("q", {}, u.mention), " matched nothing",
    u.closest ? ` (closest ${u.kind || "name"}: ${u.closest}, ${percent(u.confidence)})` : "."))));
}

function tables(grounds) {
  return section("Tables chosen",
    el("ul", {}, grounds.tables.map((t) => el("li", {}, el("code", {}, t.table), t.why ? ` — ${t.why}` : ""))),
    grounds.joins && grounds.joins.length ? el("p", {}, "Joins: ", grounds.joins.join("; ")) : null);
}

function conversation(answer) {
  const earlier = (answer.grounds.conversation || {}).earlier || [];
  if (answer.standalone_question === answer.question && !earlier.length) return null;
  return section("The question as answered",
    el("p", {}, answer.standalone_question),
    earlier.length ? el("p", { class: "meta" }, "After: ", earlier.map((q) => `“${q}”`).join(", ")) : null);
}

function verified(v) {
  return section("Verified query", el("p", {}, `“${v.question}”`),
    el("dl", { class: "row" }, Object.entries(v.values || {}).flatMap(([name, value]) =>
      [el("dt", {}, name), el("dd", {}, String(value))])),
    el("p", { class: "meta" }, [v.verified_by ? `verified by ${v.verified_by}` : "not verified by anyone yet (drafted)",
      v.verified_at ? `on ${v.verified_at}` : "", `match ${percent(v.score)}`].filter(Boolean).join(", ")));
}

function cost(answer, steps) {
  const usage = answer.usage || {};
  const turns = reflections(steps);
  const mended = tried(steps).flatMap((s) => s.repaired || []).length;
  return section("How it was reached", el("ul", {},
    el("li", {}, `Strategy: ${answer.strategy}${answer.grounds.pack ? `, domain pack ${answer.grounds.pack}` : ""}`),
    el("li", {}, `${plural(usage.model_calls || 0, "model call")}, ${formatNumber(usage.prompt_tokens || 0)} prompt tokens (${formatNumber(usage.cached_prompt_tokens || 0)} cached), ${formatNumber(usage.completion_tokens || 0)} written`),
    el("li", {}, turns ? `${plural(turns, "reflection turn")}: the model was shown what went wrong and wrote the query again`
      : "No reflection turns."),
    mended ? el("li", {}, `${plural(mended, "query", "queries")} mended without the model: each failed with an error the schema alone settles`) : null,
    steps.filter((s) => s.error && s.stage !== "validate+execute").map((s) => el("li", { class: "meta" },
      `${s.stage} failed: ${s.error}`))),
    turns || mended ? attempts(steps) : null);
}

// The steps that validated and ran a query.
function tried(steps) {
  return steps.filter((s) => s.stage === "validate+execute" && s.sql);
}

// Each query the answer tried, in order, and what came of it: the reflection turns and the
// mended queries laid out.
function attempts(steps) {
  const queries = tried(steps).flatMap((s) => [
    ...(s.repaired || []).map((r) => ({ sql: r.sql, error: r.error, mended: true })),
    { sql: s.sql, error: s.error, rows: s.rows },
  ]);
  return el("ol", { class: "attempts", "aria-label": "Queries tried" }, queries.map((t) => el("li", {},
    el("code", { class: "tried" }, t.sql),
    el("p", { class: t.error ? "error" : "meta" },
      t.error ? `Did not work: ${t.error}${t.mended ? " (mended without the model)" : ""}`
        : `Ran: ${plural(t.rows ?? 0, "row")}.`))));
}

export function groundsView(answer, steps) {
  const g = answer.grounds || {};
  const others = Object.entries(g).filter(([name]) => !KNOWN.has(name));
  const parts = [
    conversation(answer),
    g.constraints && g.constraints.length ? constraints(g.constraints) : null,
    g.unresolved && g.unresolved.length ? unresolved(g.unresolved) : null,
    g.entities && g.entities.length ? section("Names found", el("ul", {}, g.entities.map((e) => el("li", {},
      el("q", {}, e.mention), " → ", el("strong", {}, e.name), el("span", { class: "meta" }, ` ${e.table} ${e.key}`))))) : null,
    g.verified_query ? verified(g.verified_query) : null,
    g.request ? section("Semantic request (the model's choice; groundsql wrote the SQL)",
      el("pre", { class: "raw" }, JSON.stringify(g.request, null, 2))) : null,
    g.assumed && g.assumed.length ? section("Assumed", el("ul", {}, g.assumed.map((a) => el("li", {}, a)))) : null,
    g.fallback ? section("Why the model wrote the SQL", el("p", {}, g.fallback)) : null,
    g.tables && g.tables.length ? tables(g) : null,
    g.examples && g.examples.length ? section(`Solved examples used (${g.retrieval || "retrieved"})`,
      el("ul", {}, g.examples.map((q) => el("li", {}, q)))) : null,
    cost(answer, steps),
    // What another strategy reports (votes, search) is shown as it came: nothing is hidden.
    ...others.map(([name, value]) => section(name, el("pre", { class: "raw" }, JSON.stringify(value, null, 2)))),
  ];
  return el("details", { class: "grounds" }, el("summary", {}, "Why this answer"), parts);
}
