// A chart of a result, when its shape suits one: a time column and numbers make a line, a
// label column and numbers make bars. Chosen by these rules from the columns and values alone
// (never by running model-written code), drawn as SVG here; the person may switch or hide it.

import { saveBlob } from "./api.js";
import { el, svg, clear, uid } from "./dom.js";
import { columnValues, formatCell, formatNumber, isNumberColumn, isTimeColumn, timeOf } from "./format.js";

const KEY_NAME = /(^|_)id$/i; // a key is a number, not a measure
const MOST_BARS = 40;
const MOST_SERIES = 4;
const COLORS = ["#1f5fa8", "#b4531a", "#2e7d4f", "#7b3fa0"];
const WIDTH = 640; // the widest a chart is drawn, in CSS pixels
const MIN_WIDTH = 280;

// The chart a result suits: {kind: "line" | "bar", x, ys} (column indexes), or null.
export function chooseChart(columns, rows) {
  if (rows.length < 2) return null; // one row is a figure, not a trend or a comparison
  const time = columns.findIndex((name, i) => isTimeColumn(name, rows, i));
  const measures = columns.map((name, i) => i)
    .filter((i) => i !== time && !KEY_NAME.test(columns[i]) && isNumberColumn(rows, i))
    .slice(0, MOST_SERIES);
  if (measures.length === 0) return null;
  if (time >= 0) return { kind: "line", x: time, ys: measures };
  const label = columns.findIndex((_, i) => {
    const values = columnValues(rows, i);
    return values.length > 0 && values.every((v) => typeof v === "string");
  });
  if (label >= 0 && rows.length <= MOST_BARS) return { kind: "bar", x: label, ys: measures };
  return null;
}

// The chart with its controls (bars, line, hidden); null when the result suits none.
export function chartView(columns, rows) {
  const plan = chooseChart(columns, rows);
  if (!plan) return null;
  const area = el("div", { class: "chart-area" });
  const name = uid("chart-kind");
  const shown = { kind: plan.kind, width: WIDTH };
  const choice = (kind, text) => el("label", { class: "choice" },
    el("input", { type: "radio", name, value: kind, checked: kind === plan.kind,
                  on: { change: () => draw(kind, shown.width) } }), text);
  function draw(kind, width) {
    Object.assign(shown, { kind, width });
    clear(area);
    if (kind !== "off") area.append(drawChart(kind, columns, rows, plan, width));
  }
  draw(plan.kind, WIDTH);
  // Drawn at the width it has on the screen, so its text stays readable on a phone.
  new ResizeObserver(([entry]) => {
    const width = Math.max(MIN_WIDTH, Math.min(WIDTH, Math.floor(entry.contentRect.width / 10) * 10));
    if (entry.contentRect.width > 0 && width !== shown.width) draw(shown.kind, width);
  }).observe(area);
  const status = el("span", { class: "meta", role: "status" });
  const save = (format) => el("button", { type: "button", on: { click: async () => {
    status.textContent = "";
    try {
      await saveChart(area, format);
    } catch (error) {
      status.textContent = `Not saved: ${error.message}`;
    }
  } } }, `Download ${format.toUpperCase()}`);
  return el("div", { class: "chart" },
    el("fieldset", { class: "chart-kind" }, el("legend", {}, "Chart"),
      choice("bar", "Bars"), choice("line", "Line"), choice("off", "Hidden")),
    area, el("div", { class: "downloads" }, save("svg"), save("png"), status));
}

// -- the chart as a file --------------------------------------------------------------------------

const KEPT_STYLE = ["fill", "stroke", "stroke-width", "font-size", "font-family", "font-weight"];

// The chart shown, as an SVG file (the page's stylesheet does not travel with it: each part's
// computed style is written into it, and the legend is drawn below) or drawn on a canvas as PNG.
async function saveChart(area, format) {
  const shown = area.querySelector("svg.chart-svg");
  if (!shown) throw new Error("the chart is hidden");
  const copy = shown.cloneNode(true);
  const parts = [shown, ...shown.querySelectorAll("*")];
  // As presentation attributes, not a style attribute: the page's CSP refuses inline styles.
  [copy, ...copy.querySelectorAll("*")].forEach((node, i) => {
    const style = getComputedStyle(parts[i]);
    for (const name of KEPT_STYLE) node.setAttribute(name, style.getPropertyValue(name));
  });
  const width = Number(shown.getAttribute("width"));
  let height = Number(shown.getAttribute("height"));
  const keys = [...area.querySelectorAll(".legend li")].map((item) => ({
    color: item.querySelector("rect").getAttribute("fill"), name: item.textContent }));
  keys.forEach((key, i) => {
    const y = height + 8 + 18 * i;
    copy.append(svg("rect", { x: 8, y, width: 12, height: 12, fill: key.color }),
      svg("text", { x: 26, y: y + 11, "font-size": "13px", "font-family": "sans-serif", fill: "#333333" }, key.name));
  });
  height += keys.length ? 12 + 18 * keys.length : 0;
  Object.entries({ width, height, viewBox: `0 0 ${width} ${height}`, xmlns: "http://www.w3.org/2000/svg" })
    .forEach(([name, value]) => copy.setAttribute(name, String(value)));
  copy.insertBefore(svg("rect", { width, height, fill: "#ffffff" }), copy.firstChild);
  const file = new Blob([new XMLSerializer().serializeToString(copy)], { type: "image/svg+xml" });
  const name = `${(shown.getAttribute("aria-label") || "chart").replace(/[^\w-]+/g, "-").toLowerCase()}`;
  if (format === "svg") {
    saveBlob(file, `${name}.svg`);
    return;
  }
  const image = new Image();
  const url = URL.createObjectURL(file);
  try {
    image.src = url;
    await image.decode();
    const scale = 2; // sharp on a high-density screen and in a document
    const canvas = Object.assign(document.createElement("canvas"), { width: width * scale, height: height * scale });
    canvas.getContext("2d").drawImage(image, 0, 0, width * scale, height * scale);
    const png = await new Promise((done) => canvas.toBlob(done, "image/png"));
    if (!png) throw new Error("the browser could not draw the chart");
    saveBlob(png, `${name}.png`);
  } finally {
    URL.revokeObjectURL(url);
  }
}

function drawChart(kind, columns, rows, plan, width) {
  const timed = isTimeColumn(columns[plan.x], rows, plan.x);
  const points = rows.filter((row) => row[plan.x] !== null);
  if (timed) points.sort((a, b) => timeOf(a[plan.x]) - timeOf(b[plan.x]));
  const series = plan.ys.map((i, n) => ({ name: columns[i], color: COLORS[n], values: points.map((row) => row[i]) }));
  const labels = points.map((row) => formatCell(columns[plan.x], row[plan.x]));
  const what = `${series.map((s) => s.name).join(", ")} by ${columns[plan.x]}`;
  if (kind === "bar") return bars(labels, series, `Bar chart of ${what}`, width);
  const xs = timed ? points.map((row) => timeOf(row[plan.x])) : points.map((_, i) => i);
  return line(xs, labels, series, `Line chart of ${what}`, width);
}

// Round tick values from lo to hi (about `count` of them).
function ticks(lo, hi, count = 5) {
  if (lo === hi) hi = lo + 1;
  const raw = (hi - lo) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const out = [];
  let t = Math.floor(lo / step) * step;
  for (;;) { // from at or below lo to at or above hi, so no value falls outside the axis
    out.push(Number(t.toFixed(10)));
    if (t >= hi - step * 1e-9) return out;
    t += step;
  }
}

function range(values) {
  const numbers = values.flat().filter((v) => typeof v === "number");
  return [Math.min(0, ...numbers), Math.max(0, ...numbers)];
}

function shorten(text, most) {
  return text.length > most ? `${text.slice(0, most - 1)}…` : text;
}

function legend(series) {
  if (series.length < 2) return null;
  return el("ul", { class: "legend" }, series.map((s) =>
    el("li", {}, svg("svg", { width: 12, height: 12, "aria-hidden": "true" },
      svg("rect", { width: 12, height: 12, fill: s.color })), s.name)));
}

function frame(width, height, label, ...parts) {
  return svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": label,
                      class: "chart-svg" }, ...parts);
}

// Horizontal bars: long labels stay readable on a phone.
function bars(labels, series, label, width) {
  const band = 14 * series.length + 10;
  const [left, right, top] = [Math.min(150, Math.round(width * 0.32)), 24, 28];
  const most = Math.floor((left - 8) / 7.5); // characters of a label that fit beside its bar
  const height = top + band * labels.length + 8;
  const [lo, hi] = range(series.map((s) => s.values));
  const scale = ticks(lo, hi);
  const [min, max] = [scale[0], scale[scale.length - 1]];
  const x = (v) => left + ((v - min) / (max - min)) * (width - left - right);
  const grid = scale.map((t) => svg("g", {},
    svg("line", { x1: x(t), x2: x(t), y1: top - 4, y2: height - 8, class: "grid" }),
    svg("text", { x: x(t), y: top - 10, "text-anchor": "middle", class: "tick" }, formatNumber(t))));
  const rowsOf = labels.map((text, i) => svg("g", {},
    svg("text", { x: left - 8, y: top + band * i + band / 2 + 4, "text-anchor": "end", class: "tick" },
      svg("title", {}, text), shorten(text, most)),
    series.map((s, n) => {
      const v = s.values[i] ?? 0;
      return svg("rect", { x: Math.min(x(0), x(v)), y: top + band * i + 5 + 14 * n, height: 12,
                           width: Math.max(1, Math.abs(x(v) - x(0))), fill: s.color },
        svg("title", {}, `${text}, ${s.name}: ${s.values[i] === null ? "NULL" : formatNumber(v)}`));
    })));
  const chart = frame(width, height, label, grid, rowsOf);
  return el("figure", {}, chart, legend(series));
}

function line(xs, labels, series, label, width) {
  const [left, right, top, bottom] = [64, 24, 16, 40];
  const height = Math.round(Math.min(300, width * 0.6));
  const [lo, hi] = range(series.map((s) => s.values));
  const scale = ticks(lo, hi);
  const [min, max] = [scale[0], scale[scale.length - 1]];
  const [first, last] = [Math.min(...xs), Math.max(...xs)];
  const x = (v) => left + (last === first ? 0.5 : (v - first) / (last - first)) * (width - left - right);
  const y = (v) => height - bottom - ((v - min) / (max - min)) * (height - top - bottom);
  const grid = scale.map((t) => svg("g", {},
    svg("line", { x1: left, x2: width - right, y1: y(t), y2: y(t), class: "grid" }),
    svg("text", { x: left - 8, y: y(t) + 4, "text-anchor": "end", class: "tick" }, formatNumber(t))));
  const every = Math.max(1, Math.ceil(xs.length / Math.max(2, Math.floor(width / 100))));
  const xTicks = xs.map((v, i) => (i % every === 0 || i === xs.length - 1) &&
    svg("text", { x: x(v), y: height - bottom + 18, "text-anchor": "middle", class: "tick" }, shorten(labels[i], 12)));
  const paths = series.map((s) => {
    const at = xs.map((v, i) => ({ v, i, value: s.values[i] })).filter((p) => typeof p.value === "number");
    return svg("g", {},
      svg("polyline", { points: at.map((p) => `${x(p.v)},${y(p.value)}`).join(" "), fill: "none",
                        stroke: s.color, "stroke-width": 2 }),
      at.length <= 60 && at.map((p) => svg("circle", { cx: x(p.v), cy: y(p.value), r: 3, fill: s.color },
        svg("title", {}, `${labels[p.i]}, ${s.name}: ${formatNumber(p.value)}`))));
  });
  const axis = svg("line", { x1: left, x2: width - right, y1: height - bottom, y2: height - bottom, class: "axis" });
  return el("figure", {}, frame(width, height, label, grid, axis, xTicks, paths), legend(series));
}
