// The database's domain pack (GET /v1/databases/{name}/pack): its entries by kind, each one a
// form an editor's key may save (POST .../pack/edits). The pack's files stay the source of
// truth: the server checks each edit against the database and writes it into its file. A
// refused edit keeps what the person wrote, with the server's sentence (file, line, field), or,
// when someone changed the entry meanwhile, what it is now and who changed it.

import { at, call } from "./api.js";
import { el, fill, readFor, uid } from "./dom.js";

const GROUPS = [
  ["verified_query", "Verified queries"], ["example", "Solved examples"], ["measure", "Measures"],
  ["dimension", "Dimensions"], ["time_dimension", "Time dimensions"], ["fact", "Facts"],
  ["filter", "Named filters"], ["rules", "Rules"], ["table", "Table descriptions"],
  ["benchmark_question", "Added to the benchmark"],
];
const SEMANTIC = new Set(["measure", "dimension", "time_dimension", "fact", "filter"]);

// `current()` says whether the panel still wants this database. `opened`: the entry to show
// open (the one just saved), with a message for it.
export async function showPack(panel, database, current, opened = null) {
  const found = await readFor(panel, `Reading the pack of ${database}…`, () => Promise.all([
    call("GET", at`/v1/databases/${database}/pack`), call("GET", at`/v1/databases/${database}/pack/history`)]),
  current, { quiet: Boolean(opened) });
  if (!found) return false;
  const [pack, changes] = found;
  const again = (id, message) => showPack(panel, database, current, { id, message });
  const context = { database, editable: pack.may_edit, again };
  const groups = GROUPS.map(([kind, title]) => {
    const items = pack.entries.filter((e) => e.kind === kind);
    const adder = !pack.may_edit ? null : kind === "verified_query" ? addVerifiedQuery(context)
      : kind === "benchmark_question" ? addBenchmarkQuestion(context) : null;
    if (!items.length && !adder) return null;
    return el("section", { class: "pack-group", "aria-label": title },
      el("h3", {}, `${title} `, el("span", { class: "meta" }, `(${items.length})`)), adder,
      items.map((entry) => entryView(entry, context, opened && opened.id === entry.id ? opened.message : null)));
  });
  const list = el("div", { class: "pack-entries" }, groups);
  fill(panel,
    el("h2", {}, `Pack of ${database}`),
    pack.read_only ? el("p", { class: "notice-inline" }, `Read-only: ${pack.read_only}.`)
      : pack.may_edit ? el("p", { class: "meta" }, "Each save is checked against the database, then written to the "
        + "pack's file (its other lines untouched) and used from the next question on.")
        : el("p", { class: "notice-inline" }, "This API key may read the pack but not change it: an editor's key "
          + "may (groundsql keys add NAME --role editor)."),
    pack.may_edit && pack.collections.length ? addField(context, pack.collections) : null,
    filterBox(list), list, historyView(changes));
  if (opened) {
    const shown = panel.querySelector(`details[data-entry="${CSS.escape(opened.id)}"]`);
    if (shown) shown.querySelector("summary").focus();
  }
  return true;
}

function filterBox(list) {
  const id = uid("find-entry");
  const input = el("input", { id, type: "search", autocomplete: "off", on: { input: () => {
    const wanted = input.value.trim().toLowerCase();
    for (const entry of list.querySelectorAll("details.entry[data-entry]")) {
      entry.hidden = wanted !== "" && !entry.dataset.words.includes(wanted);
    }
  } } });
  return el("div", { class: "filter" }, el("label", { for: id }, "Find an entry"), input);
}

// -- one entry --------------------------------------------------------------------------------------

function entryView(entry, context, message) {
  const form = entryForm(entry);
  const status = el("p", { class: "teach-status", role: "status" }, message || "");
  const problem = el("div", { class: "error", role: "alert" });
  let base = entry.version;
  let removing = false;

  async function send(body) {
    fill(problem);
    status.textContent = "Checking against the database…";
    try {
      const saved = await call("POST", at`/v1/databases/${context.database}/pack/edits`, body);
      await context.again(saved.entry, saved.action === "removed" ? "Removed." : `Saved to ${saved.file}.`);
    } catch (error) {
      status.textContent = "";
      if (error.code === "conflict" && error.detail.current) {
        const now = error.detail.current;
        fill(problem, el("p", {}, `${error.message}.`),
          el("p", { class: "meta" }, "Now in the pack:"), el("pre", { class: "raw" }, JSON.stringify(now.value, null, 2)),
          el("button", { type: "button", on: { click: () => { base = now.version; save(); } } }, "Save mine over it"));
      } else {
        fill(problem, el("p", {}, `${error.message}.`));
      }
    }
  }

  // The entry as the form says, or undefined with why not (JSON that does not parse).
  function formValue() {
    try {
      return form.value();
    } catch (error) {
      fill(problem, el("p", {}, error.message));
      return undefined;
    }
  }

  function save() {
    const value = formValue();
    if (value !== undefined) send({ entry: entry.id, base, value });
  }

  // The edit on the pack's benchmark, not saved: the Benchmarks tab shows the trial's run.
  async function tryIt() {
    const value = formValue();
    if (value === undefined) return;
    fill(problem);
    status.textContent = "Checking against the database…";
    try {
      await call("POST", at`/v1/databases/${context.database}/benchmarks`, { edit: { entry: entry.id, base, value } });
      status.textContent = "The benchmark is running with this edit; it is not saved.";
      details.dispatchEvent(new CustomEvent("show-tab", { bubbles: true, detail: "benchmarks" }));
    } catch (error) {
      status.textContent = "";
      fill(problem, el("p", {}, `${error.message}.`));
    }
  }

  const remove = el("button", { type: "button", class: "quiet", on: { click: () => {
    if (!removing) {
      removing = true;
      remove.textContent = "Confirm removal";
      return;
    }
    send({ entry: entry.id, base, remove: true });
  } } }, "Remove…");
  const details = el("details", { class: "entry", "data-entry": entry.id, open: Boolean(message) },
    el("summary", {}, el("span", { class: "entry-title" }, entry.title), " ",
      el("span", { class: "meta" }, summaryNote(entry))),
    el("form", { class: "entry-form", on: { submit: (event) => { event.preventDefault(); save(); } } },
      form.fields,
      context.editable ? el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Save"),
        el("button", { type: "button", on: { click: tryIt } }, "Try on the benchmark"),
        entry.kind === "rules" ? null : remove) : null),
    status, problem);
  if (!context.editable) for (const field of details.querySelectorAll("input, textarea")) field.readOnly = true;
  details.dataset.words = `${entry.title} ${entry.id} ${JSON.stringify(entry.value)}`.toLowerCase();
  return details;
}

function summaryNote(entry) {
  const v = entry.value;
  if (entry.kind === "verified_query") return `verified by ${v.verified_by}${v.verified_at ? ` on ${v.verified_at}` : ""}`;
  if (SEMANTIC.has(entry.kind)) return (v.synonyms || []).length ? `also: ${v.synonyms.join(", ")}` : "";
  if (entry.kind === "rules") return `${entry.value.length} rules`;
  return entry.file;
}

// The fields of an entry's form, and `value()`: the entry as they say (what is not shown kept).
function entryForm(entry) {
  if (entry.kind === "rules") return rulesForm(entry.value);
  if (entry.kind === "table") return tableForm(entry.value);
  if (SEMANTIC.has(entry.kind)) return fieldForm(entry.value);
  if (entry.kind === "benchmark_question") return goldForm(entry.value);
  return queryForm(entry.value, entry.kind === "verified_query");
}

function field(label, input, hint) {
  const id = uid("field");
  input.id = id;
  return el("div", { class: "field" }, el("label", { for: id }, label), input,
    hint ? el("p", { class: "meta hint" }, hint) : null);
}

function textArea(value, rows, code = false) {
  const area = el("textarea", { rows, spellcheck: code ? "false" : "true", class: code ? "code" : null });
  area.value = value || "";
  return area;
}

function textInput(value) {
  const input = el("input", { type: "text", autocomplete: "off" });
  input.value = value || "";
  return input;
}

function checkBox(label, checked) {
  const id = uid("check");
  const box = el("input", { type: "checkbox", id, checked: Boolean(checked) });
  return { box, element: el("div", { class: "check" }, box, el("label", { for: id }, label)) };
}

function parsed(text, what) {
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${what} is not valid JSON.`);
  }
}

function words(text) {
  return text.split(",").map((w) => w.trim()).filter(Boolean);
}

function rulesForm(rules) {
  const area = textArea(rules.join("\n"), Math.min(14, rules.length + 2));
  return {
    fields: [field("Rules, one a line", area)],
    value: () => area.value.split("\n").map((r) => r.trim()).filter(Boolean),
  };
}

function tableForm(doc) {
  const description = textArea(doc.description, 2);
  const columns = Object.entries(doc.columns || {}).map(([name, text]) => [name, textInput(text)]);
  return {
    fields: [field("Description", description),
      columns.map(([name, input]) => field(`Column ${name}`, input))],
    value: () => ({ ...doc, description: description.value.trim(),
      columns: Object.fromEntries(columns.map(([name, input]) => [name, input.value.trim()])) }),
  };
}

function fieldForm(value) {
  const { description, synonyms, ...rest } = value;
  const about = textArea(description, 2);
  const also = textInput((synonyms || []).join(", "));
  const definition = textArea(JSON.stringify(rest, null, 2), Math.min(12, JSON.stringify(rest, null, 2).split("\n").length), true);
  return {
    fields: [field("Description", about), field("Synonyms", also, "Other words questions use for it, separated by commas."),
      field("Definition (JSON)", definition, "Its name, expression and the rest, as semantic.yaml holds them.")],
    value: () => {
      const out = { ...parsed(definition.value, "The definition") };
      if (about.value.trim()) out.description = about.value.trim();
      const listed = words(also.value);
      if (listed.length) out.synonyms = listed;
      return out;
    },
  };
}

function queryForm(value, verified) {
  const question = textInput(value.question);
  const sql = textArea(value.sql, 4, true);
  const reasoning = textArea(value.reasoning, 2);
  const params = textArea(value.params ? JSON.stringify(value.params) : "", 2, true);
  const trusted = checkBox("Verified: trusted for answers like it (you are recorded as who verified it)", verified);
  const onboarding = checkBox("Offered to newcomers in an empty conversation", value.onboarding);
  return {
    // "Asked as", not "Question": the page has one field called that, where questions are asked.
    fields: [field("Asked as", question), field("SQL", sql), field("Reasoning", reasoning),
      field("Parameters (JSON)", params, 'The values of the SQL a similar question changes: [{"name", "kind", "value"}].'),
      trusted.element, onboarding.element],
    value: () => {
      const out = { ...value, question: question.value.trim(), sql: sql.value.trim() };
      if (out.sql !== value.sql) delete out.request; // the semantic request of the old SQL
      if (reasoning.value.trim()) out.reasoning = reasoning.value.trim(); else delete out.reasoning;
      const given = parsed(params.value, "The parameters");
      if (given) out.params = given; else delete out.params;
      if (trusted.box.checked) out.verified_by = value.verified_by || "you"; else delete out.verified_by;
      if (!trusted.box.checked) delete out.verified_at;
      if (onboarding.box.checked) out.onboarding = true; else delete out.onboarding;
      delete out.drafted; // saved by a person: reviewed
      return out;
    },
  };
}

// A question of the team's benchmark with its gold SQL.
function goldForm(value) {
  const question = textInput(value.question);
  const sql = textArea(value.sql, 4, true);
  return {
    fields: [field("Asked as", question), field("Gold SQL", sql)],
    value: () => ({ ...value, question: question.value.trim(), sql: sql.value.trim() }),
  };
}

// -- adding -------------------------------------------------------------------------------------------

function addForm(title, fields, value, addTo, context) {
  const problem = el("p", { class: "error", role: "alert" });
  const status = el("p", { class: "teach-status", role: "status" });
  const form = el("form", { class: "entry-form add", on: { submit: async (event) => {
    event.preventDefault();
    problem.textContent = "";
    status.textContent = "Checking against the database…";
    try {
      const saved = await call("POST", at`/v1/databases/${context.database}/pack/edits`,
        { add_to: addTo(), value: value() });
      await context.again(saved.entry, `Added to ${saved.file}.`);
    } catch (error) {
      status.textContent = "";
      problem.textContent = `${error.message}.`;
    }
  } } }, fields, el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Add")), status, problem);
  return el("details", { class: "entry adding" }, el("summary", {}, title), form);
}

function addVerifiedQuery(context) {
  const form = queryForm({}, true);
  return addForm("Add a verified query", form.fields, form.value, () => "bank.jsonl", context);
}

function addBenchmarkQuestion(context) {
  const form = goldForm({});
  return addForm("Add a benchmark question", form.fields, form.value, () => "benchmark.jsonl", context);
}

function addField(context, collections) {
  const where = el("select", {}, collections.filter((c) => c.startsWith("semantic.yaml:")).map((c) =>
    new Option(c.replace("semantic.yaml:tables.", "").replace(".", " → "), c)));
  if (!where.options.length) return null;
  const definition = textArea('{\n  "name": "",\n  "expr": ""\n}', 5, true);
  return addForm("Add a field to the semantic model",
    [field("To", where), field("Field (JSON)", definition, "As semantic.yaml holds it: name, expr, description, synonyms…")],
    () => parsed(definition.value, "The field"), () => where.value, context);
}

// -- history --------------------------------------------------------------------------------------------

function historyView(changes) {
  return el("section", { class: "pack-history", "aria-label": "Changes to the pack" },
    el("h3", {}, "Changes"),
    changes.length ? el("ol", { class: "changes" }, changes.slice(0, 50).map((c) => el("li", {},
      el("span", { class: "meta" }, `${c.at.replace("T", " ").slice(0, 16)} `),
      el("strong", {}, c.key_name || "local"), ` ${c.action} `, el("code", {}, c.entry),
      c.note ? el("span", { class: "meta" }, ` — ${c.note}`) : null)))
      : el("p", { class: "meta" }, "No change made through the page or the API yet."));
}
