// The schema browser: tables, columns, descriptions, foreign keys, and the domain pack's
// reference tables with their rows (GET /v1/databases/{name}/tables).

import { at, call } from "./api.js";
import { el, fill, readFor, uid } from "./dom.js";
import { formatCell, formatNumber } from "./format.js";
import { resultTable } from "./table.js";

// `current()` says whether the panel still wants this database (the person may have picked
// another, or changed the key, while it was read).
export async function showSchema(panel, database, current) {
  const schema = await readFor(panel, `Reading the schema of ${database}…`,
    () => call("GET", at`/v1/databases/${database}/tables`), current);
  if (!schema) return false;
  const anchors = new Map(schema.tables.map((t) => [t.name.toLowerCase(), uid("table")]));
  const list = el("div", { class: "tables" }, schema.tables.map((t) => tableView(t, anchors)));
  fill(panel,
    el("h2", {}, `Schema of ${schema.database}`),
    schema.pack ? el("p", {}, el("strong", {}, `Domain pack ${schema.pack}. `), schema.description) : null,
    filterBox(list), list,
    schema.references.length ? el("h3", {}, "Reference tables") : null,
    schema.references.map(referenceView));
  return true;
}

function filterBox(list) {
  const id = uid("filter");
  const input = el("input", { id, type: "search", autocomplete: "off", on: { input: () => {
    const wanted = input.value.trim().toLowerCase();
    for (const table of list.children) table.hidden = wanted !== "" && !table.dataset.words.includes(wanted);
  } } });
  return el("div", { class: "filter" }, el("label", { for: id }, "Find a table or column"), input);
}

function tableView(table, anchors) {
  const rows = table.row_count === null ? "" : ` · ${formatNumber(table.row_count)} rows`;
  const details = el("details", { class: "table", id: anchors.get(table.name.toLowerCase()) },
    el("summary", {}, el("code", {}, table.name), el("span", { class: "meta" }, rows)),
    table.description ? el("p", {}, table.description) : null,
    columnsTable(table),
    table.foreign_keys.length ? el("ul", { class: "fks", "aria-label": `Foreign keys of ${table.name}` },
      table.foreign_keys.map((fk) => foreignKey(fk, anchors))) : null);
  details.dataset.words = [table.name, ...table.columns.map((c) => c.name)].join(" ").toLowerCase();
  return details;
}

function columnsTable(table) {
  return el("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": `Columns of ${table.name}` },
    el("table", { class: "columns" },
      el("thead", {}, el("tr", {}, ["Column", "Type", "About"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, table.columns.map((c) => el("tr", {},
        el("th", { scope: "row" }, el("code", {}, c.name), c.primary_key ? el("span", { class: "badge" }, "key") : null),
        el("td", {}, c.type || "—"),
        el("td", {}, c.description,
          c.examples.length ? el("span", { class: "meta examples" },
            `${c.description ? " " : ""}e.g. ${c.examples.map((v) => formatCell(c.name, v)).join(", ")}`) : null))))));
}

function foreignKey(fk, anchors) {
  const target = anchors.get(fk.ref_table.toLowerCase());
  const where = `${fk.ref_table}.${fk.ref_columns.join(", ")}`;
  const jump = () => {
    const details = document.getElementById(target);
    details.hidden = false;
    details.open = true;
    details.querySelector("summary").focus();
  };
  return el("li", {}, el("code", {}, fk.columns.join(", ")), " → ",
    target ? el("button", { type: "button", class: "link", on: { click: jump } }, where) : el("code", {}, where));
}

function referenceView(ref) {
  const rows = ref.rows === null
    ? el("p", { class: "meta" }, "Its rows are not shown: the server did not let them be read.")
    : resultTable({ columns: ref.columns, rows: ref.rows, truncated: ref.truncated }, `Rows of ${ref.table}`);
  return el("details", { class: "reference" },
    el("summary", {}, el("code", {}, ref.table), el("span", { class: "meta" }, ` ${ref.key} → ${ref.label}`)),
    ref.description ? el("p", {}, ref.description) : null, rows);
}
