// Softmax scaling explorer, D2L 11.3 "Attention Scoring Functions": why dot products are divided by sqrt(d).
//
// One module for JupyterLab (anywidget) and the book (book_host.js); see qkv/widgets/_live.py. State:
//   data   {d_values, num_keys, seed, trials, scores: [[K unscaled dot products of one random query] per d],
//           curves: {unscaled: [...], scaled: [...]} (mean entropy over `trials` queries, per d), log_k}
//          made by qkv.widgets.attention_scoring_functions.softmax_scaling_data;
//   d      the size of queries and keys (one of data.d_values);
//   scaled whether the scores are divided by sqrt(d).
// The page computes the weights and their entropy in float64 from the scores; the curves are qkv's.

const NS = "http://www.w3.org/2000/svg";
const RED = "#d62728"; // unscaled, as in the static figure
const BLUE = "#1f77b4"; // scaled
const STYLE_ID = "qkv-explorer-style-softmax-scaling";
const STYLE = `
.qkv-softmax-scaling { font: inherit; margin: 0.5em 0 1em; }
.qkv-softmax-scaling .qkv-controls { display: flex; flex-wrap: wrap; gap: 0.4em 1.5em; align-items: center; }
.qkv-softmax-scaling .qkv-control { display: flex; flex-wrap: wrap; align-items: center; gap: 0.2em 0.5em; }
.qkv-softmax-scaling label, .qkv-softmax-scaling output { white-space: nowrap; }
.qkv-softmax-scaling input[type=range] { width: 12em; max-width: 60vw; accent-color: ${BLUE}; }
.qkv-softmax-scaling input:focus-visible, .qkv-softmax-scaling select:focus-visible {
  outline: 3px solid #e8710a; outline-offset: 2px; }
.qkv-softmax-scaling output { font-variant-numeric: tabular-nums; min-width: 5.5em; }
.qkv-softmax-scaling .qkv-panels { display: flex; flex-wrap: wrap; gap: 0.5em; }
.qkv-softmax-scaling svg { flex: 1 1 280px; min-width: 0; max-width: 460px; height: auto; overflow: visible; }
.qkv-softmax-scaling svg text { fill: currentColor; font-family: inherit; }
.qkv-softmax-scaling .qkv-axis { stroke: currentColor; stroke-opacity: 0.55; fill: none; }
.qkv-softmax-scaling .qkv-grid { stroke: currentColor; stroke-opacity: 0.12; }
.qkv-softmax-scaling .qkv-summary { margin: 0.3em 0 0; font-variant-numeric: tabular-nums; }
`;

// ---- compute (float64), tested against qkv ----------------------------------------------------------------------

/** Softmax of one row of scores, the largest subtracted first. */
export function softmax(scores) {
  const top = Math.max(...scores);
  const exps = scores.map((s) => Math.exp(s - top));
  const total = exps.reduce((a, b) => a + b, 0);
  return exps.map((e) => e / total);
}

/** The attention weights of one query: softmax of its dot products, divided by sqrt(d) when scaled. */
export function attentionWeights(scores, d, scaled) {
  return softmax(scaled ? scores.map((s) => s / Math.sqrt(d)) : scores);
}

/** Entropy in nats, -sum w log w with 0 log 0 = 0. */
export function entropy(weights) {
  return -weights.reduce((acc, w) => acc + (w > 0 ? w * Math.log(w) : 0), 0);
}

/** Everything the explorer shows at one setting. */
export function explore(data, d, scaled) {
  const index = nearestIndex(data.d_values, d);
  const dShown = data.d_values[index];
  const weights = attentionWeights(data.scores[index], dShown, scaled);
  const order = weights.map((_, k) => k).sort((a, b) => weights[b] - weights[a] || a - b);
  return {
    index,
    d: dShown,
    scaled,
    weights,
    order,
    entropy: entropy(weights),
    top: { key: order[0], weight: weights[order[0]] },
    meanEntropy: data.curves[scaled ? "scaled" : "unscaled"][index],
  };
}

function nearestIndex(values, d) {
  let best = 0;
  for (let i = 1; i < values.length; i++) {
    if (Math.abs(Math.log(values[i] / d)) < Math.abs(Math.log(values[best] / d))) best = i;
  }
  return best;
}

export function summary(result, data) {
  const how = result.scaled ? "scaled" : "unscaled";
  return (
    `d = ${result.d}, ${how}: the largest weight is ${result.top.weight.toFixed(2)}, on key ${result.top.key}; ` +
    `entropy ${result.entropy.toFixed(2)} nats (uniform weights: ${data.log_k.toFixed(2)}; ` +
    `mean over ${data.trials} queries: ${result.meanEntropy.toFixed(2)}).`
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

function star(cx, cy, r) {
  const points = [];
  for (let i = 0; i < 10; i++) {
    const radius = i % 2 ? r * 0.45 : r;
    const angle = -Math.PI / 2 + (i * Math.PI) / 5;
    points.push(`${(cx + radius * Math.cos(angle)).toFixed(2)},${(cy + radius * Math.sin(angle)).toFixed(2)}`);
  }
  return points.join(" ");
}

const W = 360;
const H = 250;
const PAD = { left: 46, right: 12, top: 44, bottom: 40 };

function barsPanel(parent, numKeys) {
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "qkv-bars" }, parent);
  const x0 = PAD.left;
  const x1 = W - PAD.right;
  const y = (v) => H - PAD.bottom - v * (H - PAD.top - PAD.bottom);
  for (const v of [0, 0.25, 0.5, 0.75, 1]) {
    el("line", { x1: x0, x2: x1, y1: y(v), y2: y(v), class: "qkv-grid" }, svg);
    el("text", { x: x0 - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11 }, svg, String(v));
  }
  el("path", { d: `M${x0},${PAD.top - 4}V${y(0)}H${x1}`, class: "qkv-axis" }, svg);
  const title = el("text", { x: (x0 + x1) / 2, y: 16, "text-anchor": "middle", "font-size": 13 }, svg);
  el("text", { x: (x0 + x1) / 2, y: H - 10, "text-anchor": "middle", "font-size": 12 }, svg, "keys, sorted by weight");
  const yLabel = { transform: `translate(12 ${(PAD.top + y(0)) / 2}) rotate(-90)`, "text-anchor": "middle" };
  el("text", { ...yLabel, "font-size": 12 }, svg, "weight");
  const slot = (x1 - x0) / numKeys;
  const bars = [];
  for (let k = 0; k < numKeys; k++) {
    const x = (x0 + k * slot + slot * 0.1).toFixed(2);
    bars.push(el("rect", { x, width: (slot * 0.8).toFixed(2), y: y(0), height: 0 }, svg));
  }
  const topLabel = el("text", { "text-anchor": "start", "font-size": 11 }, svg);
  return {
    draw(result) {
      const color = result.scaled ? BLUE : RED;
      result.order.forEach((key, rank) => {
        const w = result.weights[key];
        bars[rank].setAttribute("y", y(w).toFixed(2));
        bars[rank].setAttribute("height", (y(0) - y(w)).toFixed(2));
        bars[rank].setAttribute("fill", color);
      });
      topLabel.setAttribute("x", (x0 + slot + 2).toFixed(2));
      topLabel.setAttribute("y", (Math.min(y(result.top.weight) + 10, y(0) - 4)).toFixed(2));
      topLabel.textContent = `key ${result.top.key}`;
      const how = result.scaled ? "scaled" : "unscaled";
      title.textContent = `d = ${result.d}, ${how}: entropy ${result.entropy.toFixed(2)} nats`;
      svg.setAttribute(
        "aria-label",
        `Bar chart of one query's ${numKeys} attention weights, sorted from the largest, at d = ${result.d}, ` +
          `${result.scaled ? "scaled" : "unscaled"}: the largest is ${result.top.weight.toFixed(2)}.`,
      );
    },
  };
}

function curvesPanel(parent, data) {
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "qkv-curves" }, parent);
  const logs = data.d_values.map(Math.log2);
  const lo = Math.min(...logs);
  const hi = Math.max(...logs);
  const x0 = PAD.left;
  const x1 = W - PAD.right - 6;
  const x = (d) => (hi > lo ? x0 + ((Math.log2(d) - lo) / (hi - lo)) * (x1 - x0) : (x0 + x1) / 2);
  const top = Math.max(data.log_k, ...data.curves.unscaled, ...data.curves.scaled) * 1.1;
  const y = (v) => H - PAD.bottom - (v / top) * (H - PAD.top - PAD.bottom);
  const step = top > 2 ? 1 : 0.5;
  for (let v = 0; v <= top; v += step) {
    el("line", { x1: x0, x2: x1, y1: y(v), y2: y(v), class: "qkv-grid" }, svg);
    el("text", { x: x0 - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11 }, svg, String(v));
  }
  for (const d of data.d_values) {
    el("text", { x: x(d), y: y(0) + 15, "text-anchor": "middle", "font-size": 11 }, svg, String(d));
  }
  el("path", { d: `M${x0},${PAD.top - 4}V${y(0)}H${x1}`, class: "qkv-axis" }, svg);
  el("text", { x: (x0 + x1) / 2, y: 16, "text-anchor": "middle", "font-size": 12 }, svg,
    `mean over ${data.trials} random queries, ${data.num_keys} keys`);
  el("text", { x: (x0 + x1) / 2, y: H - 8, "text-anchor": "middle", "font-size": 12 }, svg, "d");
  const yLabel = { transform: `translate(12 ${(PAD.top + y(0)) / 2}) rotate(-90)`, "text-anchor": "middle" };
  el("text", { ...yLabel, "font-size": 12 }, svg, "mean entropy (nats)");
  el("line", { x1: x0, x2: x1, y1: y(data.log_k), y2: y(data.log_k), stroke: "gray", "stroke-dasharray": "2 3" }, svg);
  for (const [key, color] of [["unscaled", RED], ["scaled", BLUE]]) {
    const points = data.d_values.map((d, i) => `${x(d).toFixed(2)},${y(data.curves[key][i]).toFixed(2)}`);
    el("polyline", { points: points.join(" "), fill: "none", stroke: color, "stroke-width": 2 }, svg);
    data.d_values.forEach((d, i) => el("circle", { cx: x(d), cy: y(data.curves[key][i]), r: 3, fill: color }, svg));
  }
  const legend = el("g", { transform: `translate(${x0} 30)`, "font-size": 11 }, svg);
  [["scaled by 1/√d", BLUE, "", 0], ["unscaled", RED, "", 104], [`uniform: log ${data.num_keys}`, "gray", "2 3", 180]]
    .forEach(([text, color, dash, at]) => {
      el("line", { x1: at, x2: at + 16, y1: 0, y2: 0, stroke: color, "stroke-width": 2, "stroke-dasharray": dash },
        legend);
      el("text", { x: at + 20, y: 4 }, legend, text);
    });
  const mark = el("polygon", { fill: "currentColor", stroke: "white", "stroke-width": 0.8 }, svg);
  return {
    draw(result) {
      mark.setAttribute("points", star(x(result.d), y(result.meanEntropy), 9));
      svg.setAttribute(
        "aria-label",
        `Mean entropy against d, unscaled falling from ${data.curves.unscaled[0].toFixed(2)} to ` +
          `${data.curves.unscaled.at(-1).toFixed(2)} nats, scaled staying between ` +
          `${Math.min(...data.curves.scaled).toFixed(2)} and ${Math.max(...data.curves.scaled).toFixed(2)}; ` +
          `the star marks d = ${result.d}, ${result.scaled ? "scaled" : "unscaled"}, ` +
          `at ${result.meanEntropy.toFixed(2)}.`,
      );
    },
  };
}

let instances = 0;

function render({ model, el: root }) {
  if (!document.getElementById(STYLE_ID)) {
    html("style", { id: STYLE_ID }, document.head, STYLE);
  }
  const id = `qkv-softmax-${++instances}-${Math.random().toString(36).slice(2, 8)}`; // unique if loaded twice
  const box = html("div", { class: "qkv-explorer qkv-softmax-scaling" }, root);
  let cleanup = () => {};

  function build() {
    cleanup();
    box.replaceChildren();
    const data = model.get("data");
    const controls = html("div", { class: "qkv-controls" }, box);
    const dControl = html("div", { class: "qkv-control" }, controls);
    html("label", { for: `${id}-d` }, dControl, "size d of queries and keys");
    const slider = html("input", {
      type: "range", id: `${id}-d`, min: 0, max: data.d_values.length - 1, step: 1,
    }, dControl);
    const readout = html("output", { for: `${id}-d` }, dControl);
    const sControl = html("div", { class: "qkv-control" }, controls);
    const checkbox = html("input", { type: "checkbox", id: `${id}-scaled` }, sControl);
    html("label", { for: `${id}-scaled` }, sControl, "scale the scores by 1/√d");
    const panels = html("div", { class: "qkv-panels" }, box);
    const bars = barsPanel(panels, data.num_keys);
    const curves = curvesPanel(panels, data);
    const text = html("p", { class: "qkv-summary", "aria-live": "polite" }, box);
    // JupyterLab's shortcuts (arrows select cells) would take the keys the controls need; Lumino leaves alone the
    // keys pressed on an element with this attribute.
    for (const control of controls.querySelectorAll("input, select")) {
      control.setAttribute("data-lm-suppress-shortcuts", "true");
    }

    function update() {
      const result = explore(data, model.get("d"), Boolean(model.get("scaled")));
      slider.value = String(result.index);
      slider.setAttribute("aria-valuetext", `d = ${result.d}`);
      readout.textContent = `d = ${result.d}`;
      checkbox.checked = result.scaled;
      bars.draw(result);
      curves.draw(result);
      text.textContent = summary(result, data);
    }
    const onSlide = () => {
      model.set("d", data.d_values[Number(slider.value)]);
      model.save_changes();
    };
    const onCheck = () => {
      model.set("scaled", checkbox.checked);
      model.save_changes();
    };
    slider.addEventListener("input", onSlide);
    checkbox.addEventListener("change", onCheck);
    model.on("change:d", update);
    model.on("change:scaled", update);
    update();
    cleanup = () => {
      model.off("change:d", update);
      model.off("change:scaled", update);
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
