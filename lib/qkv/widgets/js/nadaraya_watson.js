// Nadaraya-Watson explorer, D2L 11.2 "Attention Pooling by Similarity": a kernel menu and a width slider.
//
// One module for JupyterLab (anywidget) and the book (book_host.js); see qkv/widgets/_live.py. State:
//   data   {x, y: the training points; grid: the queries; truth: the true function on the grid, or null;
//           kernels: the menu; log_sigma: {min, max, step}, the slider's range in log10 sigma}
//          made by qkv.widgets.attention_pooling.nadaraya_watson_data;
//   kernel the kernel's name; sigma the width.
// The page computes the estimate on the grid and the leave-one-out loss in float64, as qkv.nadaraya_watson does.

const NS = "http://www.w3.org/2000/svg";
const BLUE = "#1f77b4";
const PURPLE = "#9467bd";
const STYLE_ID = "qkv-explorer-style-nadaraya-watson";
const STYLE = `
.qkv-nadaraya-watson { font: inherit; margin: 0.5em 0 1em; }
.qkv-nadaraya-watson .qkv-controls { display: flex; flex-wrap: wrap; gap: 0.4em 1.5em; align-items: center; }
.qkv-nadaraya-watson .qkv-control { display: flex; flex-wrap: wrap; align-items: center; gap: 0.2em 0.5em; }
.qkv-nadaraya-watson label, .qkv-nadaraya-watson output { white-space: nowrap; }
.qkv-nadaraya-watson input[type=range] { width: 14em; max-width: 55vw; accent-color: ${BLUE}; }
.qkv-nadaraya-watson select { font: inherit; }
.qkv-nadaraya-watson input:focus-visible, .qkv-nadaraya-watson select:focus-visible {
  outline: 3px solid #e8710a; outline-offset: 2px; }
.qkv-nadaraya-watson output { font-variant-numeric: tabular-nums; min-width: 5.5em; }
.qkv-nadaraya-watson .qkv-panels { display: flex; flex-wrap: wrap; gap: 0.5em; }
.qkv-nadaraya-watson svg { flex: 1 1 300px; min-width: 0; max-width: 600px; height: auto; overflow: visible; }
.qkv-nadaraya-watson svg text { fill: currentColor; font-family: inherit; }
.qkv-nadaraya-watson .qkv-axis { stroke: currentColor; stroke-opacity: 0.55; fill: none; }
.qkv-nadaraya-watson .qkv-grid { stroke: currentColor; stroke-opacity: 0.12; }
.qkv-nadaraya-watson .qkv-summary { margin: 0.3em 0 0; font-variant-numeric: tabular-nums; }
`;

// ---- compute (float64), tested against qkv.nadaraya_watson --------------------------------------------------

/** The kernels of D2L 11.2.1, as functions of the scaled distance u = (q - k) / sigma. */
export const KERNELS = {
  gaussian: (u) => Math.exp(-(u * u) / 2),
  boxcar: (u) => (Math.abs(u) < 1 ? 1 : 0),
  constant: () => 1,
  epanechnikov: (u) => Math.max(1 - Math.abs(u), 0),
};
KERNELS.epanechikov = KERNELS.epanechnikov; // D2L's spelling

function kernelOf(name) {
  const kernel = KERNELS[String(name).toLowerCase()];
  if (!kernel) throw new Error(`unknown kernel ${name}; choose one of ${Object.keys(KERNELS).join(", ")}`);
  return kernel;
}

/** One query's normalised weights over the keys x; `skip` (an index or -1) gets none. A query whose kernel
 * reaches no key falls back to its nearest key(s), shared equally, as qkv does. */
export function weightsRow(q, x, kernel, sigma, skip = -1) {
  const k = new Float64Array(x.length);
  let total = 0;
  for (let i = 0; i < x.length; i++) {
    if (i === skip) continue;
    k[i] = kernel((q - x[i]) / sigma);
    total += k[i];
  }
  if (total === 0) {
    let nearest = Infinity;
    for (let i = 0; i < x.length; i++) if (i !== skip) nearest = Math.min(nearest, Math.abs(q - x[i]));
    for (let i = 0; i < x.length; i++) {
      k[i] = i !== skip && Math.abs(q - x[i]) === nearest ? 1 : 0;
      total += k[i];
    }
  }
  for (let i = 0; i < x.length; i++) k[i] /= total;
  return k;
}

/** The estimate at each query: its weights times the labels y. */
export function estimate(x, y, queries, kernelName, sigma) {
  const kernel = kernelOf(kernelName);
  return queries.map((q) => {
    const w = weightsRow(q, x, kernel, sigma);
    let sum = 0;
    for (let i = 0; i < x.length; i++) sum += w[i] * y[i];
    return sum;
  });
}

/** Leave-one-out mean squared error: each point predicted from all the others. */
export function looLoss(x, y, kernelName, sigma) {
  const kernel = kernelOf(kernelName);
  let total = 0;
  for (let j = 0; j < x.length; j++) {
    const w = weightsRow(x[j], x, kernel, sigma, j);
    let sum = 0;
    for (let i = 0; i < x.length; i++) sum += w[i] * y[i];
    total += (sum - y[j]) ** 2;
  }
  return total / x.length;
}

/** Everything the explorer shows at one setting. */
export function explore(data, kernel, sigma) {
  const yHat = estimate(data.x, data.y, data.grid, kernel, sigma);
  return { kernel, sigma, grid: data.grid, yHat, loo: looLoss(data.x, data.y, kernel, sigma) };
}

export function formatSigma(sigma) {
  return sigma >= 1 ? sigma.toFixed(2) : sigma.toPrecision(2);
}

export function summary(result) {
  let lo = 0;
  let hi = 0;
  result.yHat.forEach((v, i) => {
    if (v < result.yHat[lo]) lo = i;
    if (v > result.yHat[hi]) hi = i;
  });
  const at = (i) => `${result.yHat[i].toFixed(2)} at x = ${result.grid[i].toFixed(2)}`;
  return (
    `${result.kernel} kernel, sigma = ${formatSigma(result.sigma)}: leave-one-out loss ${result.loo.toFixed(3)}; ` +
    `the estimate runs from ${at(lo)} to ${at(hi)}.`
  );
}

// ---- drawing --------------------------------------------------------------------------------------------------

function el(tag, attrs = {}, parent = null, text = null) {
  const node = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== null) node.textContent = text;
  if (parent) parent.append(node);
  return node;
}

function html(tag, attrs = {}, parent = null, text = null) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== null) node.textContent = text;
  if (parent) parent.append(node);
  return node;
}

function ticks(lo, hi, count = 6) {
  const raw = (hi - lo) / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(Number(v.toFixed(10)));
  return out;
}

const W = 440;
const H = 280;
const PAD = { left: 44, right: 12, top: 46, bottom: 36 };

function fitPanel(parent, data, grid) {
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "qkv-fit" }, parent);
  const values = [...data.y, ...(data.truth || [])];
  const xlo = grid[0];
  const xhi = grid.at(-1);
  const span = Math.max(...values) - Math.min(...values) || 1;
  const ylo = Math.min(...values) - 0.05 * span;
  const yhi = Math.max(...values) + 0.05 * span;
  const x0 = PAD.left;
  const x1 = W - PAD.right;
  const sx = (v) => x0 + ((v - xlo) / (xhi - xlo)) * (x1 - x0);
  const sy = (v) => H - PAD.bottom - ((v - ylo) / (yhi - ylo)) * (H - PAD.top - PAD.bottom);
  for (const v of ticks(ylo, yhi)) {
    el("line", { x1: x0, x2: x1, y1: sy(v), y2: sy(v), class: "qkv-grid" }, svg);
    el("text", { x: x0 - 6, y: sy(v) + 4, "text-anchor": "end", "font-size": 11 }, svg, String(v));
  }
  for (const v of ticks(xlo, xhi)) {
    el("line", { x1: sx(v), x2: sx(v), y1: PAD.top, y2: sy(ylo), class: "qkv-grid" }, svg);
    el("text", { x: sx(v), y: H - PAD.bottom + 15, "text-anchor": "middle", "font-size": 11 }, svg, String(v));
  }
  el("path", { d: `M${x0},${PAD.top - 4}V${sy(ylo)}H${x1}`, class: "qkv-axis" }, svg);
  el("text", { x: (x0 + x1) / 2, y: H - 6, "text-anchor": "middle", "font-size": 12 }, svg, "x");
  const title = el("text", { x: (x0 + x1) / 2, y: 16, "text-anchor": "middle", "font-size": 13 }, svg);
  const points = el("g", { fill: "gray", "fill-opacity": 0.55 }, svg);
  data.x.forEach((v, i) => el("circle", { cx: sx(v).toFixed(2), cy: sy(data.y[i]).toFixed(2), r: 3.2 }, points));
  const path = (ys) => ys.map((v, i) => `${i ? "L" : "M"}${sx(grid[i]).toFixed(2)},${sy(v).toFixed(2)}`).join("");
  if (data.truth) {
    el("path", { d: path(data.truth), fill: "none", stroke: PURPLE, "stroke-width": 1.5, "stroke-dasharray": "6 4" },
      svg);
  }
  const curve = el("path", { fill: "none", stroke: BLUE, "stroke-width": 2.2 }, svg);
  const legend = el("g", { transform: `translate(${x0} 32)`, "font-size": 11 }, svg);
  const entries = [["training points", "gray", null], ["estimate", BLUE, ""]];
  if (data.truth) entries.push(["true f", PURPLE, "6 4"]);
  entries.forEach(([text, color, dash], i) => {
    const at = i * 110;
    if (dash === null) el("circle", { cx: at + 8, cy: 0, r: 3.2, fill: color, "fill-opacity": 0.55 }, legend);
    else {
      el("line", { x1: at, x2: at + 16, y1: 0, y2: 0, stroke: color, "stroke-width": 2, "stroke-dasharray": dash },
        legend);
    }
    el("text", { x: at + 20, y: 4 }, legend, text);
  });
  return {
    draw(result) {
      curve.setAttribute("d", path(result.yHat));
      title.textContent =
        `${result.kernel}, sigma = ${formatSigma(result.sigma)}: leave-one-out loss ${result.loo.toFixed(3)}`;
      svg.setAttribute(
        "aria-label",
        `Nadaraya-Watson estimate with the ${result.kernel} kernel at sigma = ${formatSigma(result.sigma)} over ` +
          `${data.x.length} training points${data.truth ? " and the true function" : ""}; ` +
          `leave-one-out loss ${result.loo.toFixed(3)}.`,
      );
    },
  };
}

let instances = 0;

function render({ model, el: root }) {
  if (!document.getElementById(STYLE_ID)) {
    html("style", { id: STYLE_ID }, document.head, STYLE);
  }
  const id = `qkv-nw-${++instances}-${Math.random().toString(36).slice(2, 8)}`; // unique if loaded twice
  const box = html("div", { class: "qkv-explorer qkv-nadaraya-watson" }, root);
  let cleanup = () => {};

  function build() {
    cleanup();
    box.replaceChildren();
    const data = model.get("data");
    const { min, max, step } = data.log_sigma;
    const stops = Math.round((max - min) / step);
    const controls = html("div", { class: "qkv-controls" }, box);
    const kControl = html("div", { class: "qkv-control" }, controls);
    html("label", { for: `${id}-kernel` }, kControl, "kernel");
    const menu = html("select", { id: `${id}-kernel` }, kControl);
    for (const name of data.kernels) html("option", { value: name }, menu, name);
    const sControl = html("div", { class: "qkv-control" }, controls);
    html("label", { for: `${id}-sigma` }, sControl, "width sigma (log scale)");
    const slider = html("input", { type: "range", id: `${id}-sigma`, min: 0, max: stops, step: 1 }, sControl);
    const readout = html("output", { for: `${id}-sigma` }, sControl);
    const panels = html("div", { class: "qkv-panels" }, box);
    const fit = fitPanel(panels, data, data.grid);
    const text = html("p", { class: "qkv-summary", "aria-live": "polite" }, box);
    // JupyterLab's shortcuts (arrows select cells) would take the keys the controls need; Lumino leaves alone the
    // keys pressed on an element with this attribute.
    for (const control of controls.querySelectorAll("input, select")) {
      control.setAttribute("data-lm-suppress-shortcuts", "true");
    }

    function update() {
      const sigma = Number(model.get("sigma"));
      const result = explore(data, model.get("kernel"), sigma);
      menu.value = result.kernel;
      slider.value = String(Math.min(stops, Math.max(0, Math.round((Math.log10(sigma) - min) / step))));
      slider.setAttribute("aria-valuetext", `sigma = ${formatSigma(sigma)}`);
      readout.textContent = `sigma = ${formatSigma(sigma)}`;
      fit.draw(result);
      text.textContent = summary(result);
    }
    const onSlide = () => {
      model.set("sigma", 10 ** (min + Number(slider.value) * step));
      model.save_changes();
    };
    const onKernel = () => {
      model.set("kernel", menu.value);
      model.save_changes();
    };
    slider.addEventListener("input", onSlide);
    menu.addEventListener("change", onKernel);
    model.on("change:sigma", update);
    model.on("change:kernel", update);
    update();
    cleanup = () => {
      model.off("change:sigma", update);
      model.off("change:kernel", update);
    };
  }

  build();
  model.on("change:data", build);
  return () => {
    cleanup();
    model.off("change:data", build);
  };
}

export default { render };
