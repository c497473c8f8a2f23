// SQL shown highlighted and copyable. The highlighter only colours tokens: each one becomes a
// span holding its text, so the SQL is never read as markup.

import { el } from "./dom.js";

const KEYWORDS = new Set(`select from where group by order having limit offset join left right inner outer
full cross natural using on as and or not in is null like ilike glob between case when then else end distinct
union all intersect except with recursive asc desc exists cast over partition rows range window filter
nulls first last true false insert update delete drop create alter into values set table`.split(/\s+/));

const TOKEN = /(--[^\n]*|\/\*[\s\S]*?\*\/)|('(?:[^']|'')*'?)|("(?:[^"]|"")*"?|`[^`]*`?|\[[^\]]*\]?)|(\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b)|([A-Za-z_][A-Za-z0-9_$]*)|(\s+|.)/gi;

export function highlight(sql) {
  const out = [];
  for (const match of sql.matchAll(TOKEN)) {
    const [text, comment, string, quoted, number, word] = match;
    let kind = null;
    if (comment) kind = "comment";
    else if (string) kind = "string";
    else if (quoted) kind = "ident";
    else if (number) kind = "number";
    else if (word && KEYWORDS.has(word.toLowerCase())) kind = "keyword";
    else if (word && sql[match.index + text.length] === "(") kind = "function";
    out.push(kind ? el("span", { class: `sql-${kind}` }, text) : text);
  }
  return out;
}

// The SQL in a code block with a copy button; `label` says what it is ("SQL", "Refused SQL").
export function sqlBlock(sql, label = "SQL") {
  const status = el("span", { class: "copy-status", role: "status" });
  const code = el("code", {}, highlight(sql));
  const copy = el("button", { type: "button", class: "copy", on: { click: () => copyText(sql, code, status) } },
    "Copy SQL");
  return el("div", { class: "sql" },
    el("div", { class: "sql-head" }, el("span", { class: "sql-label" }, label), copy, status),
    el("pre", { tabindex: "0", "aria-label": label }, code));
}

async function copyText(sql, code, status) {
  try {
    await navigator.clipboard.writeText(sql);
    status.textContent = "Copied.";
  } catch {
    // No clipboard access (an insecure origin, a refused permission): select it for Ctrl+C.
    getSelection().selectAllChildren(code);
    status.textContent = "Selected: press Ctrl+C to copy.";
  }
}
