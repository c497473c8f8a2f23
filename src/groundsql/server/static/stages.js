// The stages of an answer as they finish (the API's `step` events), then their summary.

import { el } from "./dom.js";
import { plural } from "./format.js";

function note(step) {
  if (step.error) return `failed: ${step.error}`;
  if (step.standalone) return `as “${step.standalone}”`;
  if (step.missing && step.missing.length) return `not in the data: ${step.missing.join(", ")}`;
  if (typeof step.rows === "number") return plural(step.rows, "row");
  return "";
}

export function stagesView() {
  const list = el("ol", { class: "stages", "aria-live": "polite" });
  const working = el("li", { class: "working" }, "Working…");
  const summary = el("summary", {}, "Stages");
  const box = el("details", { class: "stages-box", open: true }, summary, list);
  list.append(working);
  const steps = [];
  return {
    element: box,
    steps,
    add(step) {
      steps.push(step);
      const mark = step.error ? "✗" : "✓";
      working.before(el("li", { class: step.error ? "stage failed" : "stage" },
        el("span", { class: "mark", "aria-hidden": "true" }, mark), el("span", { class: "stage-name" }, step.stage),
        el("span", { class: "seconds" }, `${step.seconds.toFixed(2)} s`), el("span", { class: "stage-note" }, note(step))));
    },
    finish(answer) {
      working.remove();
      const calls = answer && answer.usage ? `, ${plural(answer.usage.model_calls, "model call")}` : "";
      const seconds = answer ? ` in ${answer.elapsed_s.toFixed(2)} s` : "";
      summary.textContent = `Stages: ${steps.length}${seconds}${calls}`;
      box.open = false;
    },
  };
}

// Reflection turns: the model asked again after a query failed or found nothing.
export function reflections(steps) {
  return steps.filter((step) => step.stage === "reflect").length;
}
