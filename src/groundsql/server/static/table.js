// A result as a table: sortable by any column, in pages, numbers right-aligned and formatted,
// NULL shown as such, and a cut result said plainly.

import { el, fill, uid } from "./dom.js";
import { formatCell, formatNumber, isNumberColumn, plural } from "./format.js";

const PAGE = 20;

function compare(a, b) {
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

// NULL last, whichever the direction.
function sorter(i, descending) {
  return (x, y) => {
    const [a, b] = [x[i], y[i]];
    if (a === b) return 0;
    if (a === null) return 1;
    if (b === null) return -1;
    return descending ? compare(b, a) : compare(a, b);
  };
}

// `label` names the table for assistive technology ("Result", "Rows of ref_unit").
export function resultTable({ columns, rows, truncated }, label = "Result") {
  const numeric = columns.map((_, i) => isNumberColumn(rows, i));
  const state = { sortBy: null, descending: false, page: 0 };
  const body = el("tbody");
  const headers = columns.map((name, i) => sortHeader(name, i));
  const status = el("span", { class: "pager-status", "aria-live": "polite" });
  const previous = el("button", { type: "button", on: { click: () => turn(-1) } }, "Previous");
  const next = el("button", { type: "button", on: { click: () => turn(1) } }, "Next");
  const pages = Math.max(1, Math.ceil(rows.length / PAGE));
  const id = uid("result");

  function sortHeader(name, i) {
    const button = el("button", { type: "button", class: "sort", on: { click: () => sortOn(i) } },
      name, el("span", { class: "sort-mark", "aria-hidden": "true" }));
    return el("th", { scope: "col", class: numeric[i] ? "num" : null }, button);
  }

  function sortOn(i) {
    state.descending = state.sortBy === i ? !state.descending : false;
    state.sortBy = i;
    state.page = 0;
    headers.forEach((th, j) => {
      const order = j === i ? (state.descending ? "descending" : "ascending") : null;
      if (order) th.setAttribute("aria-sort", order); else th.removeAttribute("aria-sort");
      th.querySelector(".sort-mark").textContent = order ? (state.descending ? " ▼" : " ▲") : "";
    });
    render();
  }

  function turn(step) {
    state.page = Math.min(pages - 1, Math.max(0, state.page + step));
    render();
  }

  function ordered() {
    if (state.sortBy === null) return rows;
    return [...rows].sort(sorter(state.sortBy, state.descending));
  }

  function render() {
    const first = state.page * PAGE;
    const shown = ordered().slice(first, first + PAGE);
    fill(body, ...shown.map((row) => el("tr", {}, row.map((value, i) => cell(columns[i], value, numeric[i])))));
    status.textContent = rows.length ? `Rows ${formatNumber(first + 1)}–${formatNumber(first + shown.length)} of ${formatNumber(rows.length)}` : "";
    previous.disabled = state.page === 0;
    next.disabled = state.page >= pages - 1;
  }

  render();
  const table = el("table", { class: "result", id },
    el("caption", { class: "visually-hidden" }, label),
    el("thead", {}, el("tr", {}, headers)), body);
  return el("div", { class: "table-block" },
    el("p", { class: "count" }, rows.length ? plural(rows.length, "row") : "No rows: the query ran and found nothing."),
    truncated ? el("p", { class: "note truncated" },
      `The result was cut: only its first ${plural(rows.length, "row")} came back (the server's row or size cap).`) : null,
    el("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": label }, table),
    pages > 1 ? el("nav", { class: "pager", "aria-label": `Pages of ${label.toLowerCase()}` }, previous, status, next) : null);
}

function cell(name, value, numeric) {
  if (value === null || value === undefined) return el("td", { class: "null" }, "NULL");
  return el("td", { class: numeric ? "num" : null }, formatCell(name, value));
}
