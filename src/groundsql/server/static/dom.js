// Every element of the page is built here. Text goes in only as text (textContent, never
// innerHTML): database values, questions and model output are hostile input.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "on") {
      for (const [event, handler] of Object.entries(value)) node.addEventListener(event, handler);
    } else if (name === "text") {
      node.textContent = value;
    } else if (name.startsWith("on")) {
      throw new Error(`event handlers go in "on", not ${name}`);
    } else if (value === true) {
      node.setAttribute(name, "");
    } else if (value !== false && value !== null && value !== undefined) {
      node.setAttribute(name, String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// el("p", {class: "note", on: {click: f}}, "text", otherNode): an HTML element.
export function el(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// The same for SVG elements (the charts).
export function svg(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

export function clear(node) {
  node.replaceChildren();
  return node;
}

// The node's children replaced by these (as el takes them: nested lists flattened, null,
// undefined and false skipped, anything else as text).
export function fill(node, ...children) {
  return build(clear(node), {}, children);
}

let counter = 0;
// An id unique on the page, for labels and aria-controls of repeated parts.
export function uid(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}

// What a panel reads from the server: a status line while `read()` runs, the error in the
// panel's place when it fails; undefined then, or when the panel no longer wants it
// (`current()`: the person picked another database, or changed the key, meanwhile).
export async function readFor(panel, reading, read, current, { quiet = false } = {}) {
  if (!quiet) fill(panel, el("p", { class: "meta", role: "status" }, reading));
  try {
    const found = await read();
    return current() ? found : undefined;
  } catch (error) {
    if (current()) fill(panel, el("p", { class: "error", role: "alert" }, error.message));
    return undefined;
  }
}
