// Right or wrong on an answer (POST /v1/feedback). "Wrong" opens an editor with the answer's
// SQL; saving runs the correction through the validator first (POST /v1/sql) and shows its
// result, then stores it as the answer's correction.

import { call } from "./api.js";
import { el, clear, uid } from "./dom.js";
import { resultTable } from "./table.js";

export function teachView(answer) {
  const status = el("p", { class: "teach-status", role: "status" });
  const editorId = uid("editor");
  const right = el("button", { type: "button", disabled: !answer.sql || !answer.ok, on: { click: confirm } }, "Right");
  const wrong = el("button", { type: "button", "aria-expanded": "false", "aria-controls": editorId, on: { click: open } }, "Wrong");
  const editor = correctionEditor(answer, editorId, status);

  async function confirm() {
    status.textContent = "Saving…";
    try {
      await call("POST", "/v1/feedback", { answer_id: answer.answer_id, verdict: "right" });
      status.textContent = "Thank you: this answer is now a solved example for the next questions.";
      right.disabled = true; // once is enough: a second would store the example twice
    } catch (error) {
      status.textContent = `Not saved: ${error.message}`;
    }
  }

  function open() {
    editor.hidden = false;
    wrong.setAttribute("aria-expanded", "true");
    editor.querySelector("textarea").focus();
  }

  return el("div", { class: "teach" },
    el("div", { class: "teach-bar", role: "group", "aria-label": "Is this answer right?" },
      el("span", {}, "Is this answer right?"), right, wrong),
    status, editor);
}

function correctionEditor(answer, id, status) {
  const fieldId = uid("corrected");
  const hintId = uid("editor-hint");
  const text = el("textarea", { id: fieldId, rows: 5, spellcheck: "false", class: "code", "aria-describedby": hintId,
                                on: { keydown: runOnCtrlEnter } });
  text.value = answer.sql || "";
  const problem = el("p", { class: "error", role: "alert" });
  const result = el("div", { class: "correction-result" });
  let busy = false;

  // Through the validator and the read-only executor; the result shown, or the one sentence why not.
  async function run() {
    clear(problem);
    clear(result);
    try {
      const ran = await call("POST", "/v1/sql", { database: answer.database, sql: text.value });
      result.append(el("p", { class: "meta" }, "Ran as validated: ", el("code", {}, ran.sql)), resultTable(ran, "Corrected result"));
      return true;
    } catch (error) {
      problem.textContent = error.message;
      return false;
    }
  }

  function runOnCtrlEnter(event) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      run();
    }
  }

  async function save(event) {
    event.preventDefault();
    if (busy) return;
    busy = true;
    status.textContent = "Checking the corrected SQL…";
    try {
      if (!(await run())) {
        status.textContent = "Not saved.";
        return;
      }
      await call("POST", "/v1/feedback", { answer_id: answer.answer_id, verdict: "wrong", corrected_sql: text.value });
      status.textContent = "Saved: the corrected SQL is now a solved example for the next questions.";
    } catch (error) {
      status.textContent = `Not saved: ${error.message}`;
    } finally {
      busy = false;
    }
  }

  return el("form", { class: "editor", id, hidden: true, on: { submit: save } },
    el("label", { for: fieldId }, "Corrected SQL"), text,
    el("p", { id: hintId, class: "meta" }, "Run shows its result (Ctrl+Enter); saving runs it through the validator first, then stores it."),
    el("div", { class: "actions" },
      el("button", { type: "button", on: { click: run } }, "Run"),
      el("button", { type: "submit" }, "Save correction")),
    problem, result);
}
