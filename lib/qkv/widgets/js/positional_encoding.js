// Sinusoidal positional encoding explorer, D2L 11.6 "Self-Attention and Positional Encoding": each pair of columns
// of the table walks round the unit circle as the position grows, and a shift by delta positions is a rotation.
//
// One module for JupyterLab (anywidget) and the book (book_host.js); see qkv/widgets/_live.py. State:
//   data     {num_hiddens: d, max_position: the rows of the table drawn}, made by
//            qkv.widgets.self_attention_and_positional_encoding.encoding_data;
//   position the row i; pair the pair j of columns (2j, 2j + 1); offset the shift delta.
// The page computes the table, the pair's points and the rotation in float64, as qkv.positional does.

const NS = "http://www.w3.org/2000/svg";
const BLUE = "#1f77b4";
const RED = "#d62728";
const GREEN = "#2ca02c";
const STYLE_ID = "qkv-explorer-style-positional-encoding";
const STYLE = `
.qkv-positional-encoding { font: inherit; margin: 0.5em 0 1em; }
.qkv-positional-encoding .qkv-controls { display: flex; flex-wrap: wrap; gap: 0.4em 1.5em; align-items: center; }
.qkv-positional-encoding .qkv-control { display: flex; flex-wrap: wrap; align-items: center; gap: 0.2em 0.5em; }
.qkv-positional-encoding label, .qkv-positional-encoding output { white-space: nowrap; }
.qkv-positional-encoding input[type=range] { width: 11em; max-width: 50vw; accent-color: ${BLUE}; }
.qkv-positional-encoding input:focus-visible, .qkv-positional-encoding select:focus-visible {
  outline: 3px solid #e8710a; outline-offset: 2px; }
.qkv-positional-encoding output { font-variant-numeric: tabular-nums; min-width: 3em; }
.qkv-positional-encoding .qkv-panels { display: flex; flex-wrap: wrap; gap: 0.5em; }
.qkv-positional-encoding svg { flex: 1 1 260px; min-width: 0; max-width: 400px; height: auto; overflow: visible; }
.qkv-positional-encoding svg text { fill: currentColor; font-family: inherit; }
.qkv-positional-encoding svg image { image-rendering: pixelated; }
.qkv-positional-encoding .qkv-axis { stroke: currentColor; stroke-opacity: 0.55; fill: none; }
.qkv-positional-encoding .qkv-summary { margin: 0.3em 0 0; font-variant-numeric: tabular-nums; }
`;

// ---- compute (float64), tested against qkv.positional ---------------------------------------------------------

/** The frequency of pair j in a table of width d: w_j = 1 / 10000^(2j / d), in radians per position. */
export function omega(pair, d) {
  return 10000 ** (-(2 * pair) / d);
}

/** The sinusoidal table, rows 0 .. T - 1: P[i][2j] = sin(i w_j), P[i][2j + 1] = cos(i w_j). */
export function table(T, d) {
  const freqs = Array.from({ length: Math.ceil(d / 2) }, (_, j) => omega(j, d));
  return Array.from({ length: T }, (_, i) => {
    const row = new Float64Array(d);
    freqs.forEach((w, j) => {
      row[2 * j] = Math.sin(i * w);
      if (2 * j + 1 < d) row[2 * j + 1] = Math.cos(i * w);
    });
    return row;
  });
}

/** The points (P[t][2j + 1], P[t][2j]) = (cos t w_j, sin t w_j) for t = 0 .. position. */
export function trajectory(position, pair, d) {
  const w = omega(pair, d);
  return Array.from({ length: position + 1 }, (_, t) => [Math.cos(t * w), Math.sin(t * w)]);
}

/** The 2 x 2 block of the shift by delta positions on pair j (eq-shift-rotation): [[c, s], [-s, c]] of the angle
 * delta w_j. */
export function rotation(delta, pair, d) {
  const angle = delta * omega(pair, d);
  const c = Math.cos(angle);
  const s = Math.sin(angle);
  return [
    [c, s],
    [-s, c],
  ];
}

/** (P[i + delta][2j], P[i + delta][2j + 1]) computed as the rotation by delta applied to row i's pair. */
export function shifted(position, delta, pair, d) {
  const w = omega(pair, d);
  const p = [Math.sin(position * w), Math.cos(position * w)];
  const [[a, b], [c, e]] = rotation(delta, pair, d);
  return [a * p[0] + b * p[1], c * p[0] + e * p[1]];
}

/** Everything the explorer shows at one setting. */
export function explore(data, position, pair, offset) {
  const d = data.num_hiddens;
  const w = omega(pair, d);
  const points = trajectory(position, pair, d);
  const [sin, cos] = shifted(position, offset, pair, d);
  return {
    position,
    pair,
    offset,
    omega: w,
    turns: (position * w) / (2 * Math.PI),
    points,
    point: points[position],
    rotation: rotation(offset, pair, d),
    target: [cos, sin],
  };
}

const f2 = (v) => (Math.abs(v) < 0.005 ? 0 : v).toFixed(2);

export function summary(result) {
  const { position: i, pair: j, offset } = result;
  return (
    `position ${i}, pair ${j} (columns ${2 * j} and ${2 * j + 1}): w = ${result.omega.toPrecision(3)} radians per ` +
    `position, ${result.turns.toFixed(2)} turns; (cos, sin) = (${f2(result.point[0])}, ${f2(result.point[1])}). ` +
    `Shift by ${offset}: a turn of ${(offset * result.omega).toFixed(2)} radians, to position ${i + offset}, ` +
    `(cos, sin) = (${f2(result.target[0])}, ${f2(result.target[1])}).`
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

function circlePanel(parent, maxPosition) {
  const S = 300;
  const R = 105;
  const c = { x: 165, y: 150 };
  const svg = el("svg", { viewBox: `0 0 ${S} ${S}`, role: "img", class: "qkv-circle" }, parent);
  const px = (v) => (c.x + R * v).toFixed(2);
  const py = (v) => (c.y - R * v).toFixed(2);
  el("circle", { cx: c.x, cy: c.y, r: R, fill: "none", stroke: "gray", "stroke-opacity": 0.5 }, svg);
  el("path", { d: `M${c.x - R - 12},${c.y}H${c.x + R + 12}M${c.x},${c.y - R - 12}V${c.y + R + 12}`, class: "qkv-axis",
    "stroke-opacity": 0.25 }, svg);
  const title = el("text", { x: c.x, y: 18, "text-anchor": "middle", "font-size": 13 }, svg);
  const xLabel = el("text", { x: c.x, y: S - 8, "text-anchor": "middle", "font-size": 12 }, svg);
  const yLabel = el("text", { transform: `translate(18 ${c.y}) rotate(-90)`, "text-anchor": "middle", "font-size": 12 },
    svg);
  const arc = el("path", { fill: "none", stroke: GREEN, "stroke-width": 2.5, "stroke-opacity": 0.8 }, svg);
  const dots = el("g", { fill: BLUE }, svg);
  for (let t = 0; t < maxPosition; t++) el("circle", { r: 2.6 }, dots);
  const toTarget = el("line", { x1: c.x, y1: c.y, stroke: GREEN, "stroke-width": 2, "stroke-dasharray": "5 3" }, svg);
  const targetDot = el("circle", { r: 5, fill: GREEN }, svg);
  const radius = el("line", { x1: c.x, y1: c.y, stroke: RED, "stroke-width": 2.5 }, svg);
  const pointDot = el("circle", { r: 5.5, fill: RED }, svg);
  return {
    draw(result) {
      [...dots.children].forEach((dot, t) => {
        const p = result.points[t];
        dot.setAttribute("display", p ? "inline" : "none");
        if (p) {
          dot.setAttribute("cx", px(p[0]));
          dot.setAttribute("cy", py(p[1]));
        }
      });
      const [x, y] = result.point;
      radius.setAttribute("x2", px(x));
      radius.setAttribute("y2", py(y));
      pointDot.setAttribute("cx", px(x));
      pointDot.setAttribute("cy", py(y));
      const [tx, ty] = result.target;
      toTarget.setAttribute("x2", px(tx));
      toTarget.setAttribute("y2", py(ty));
      targetDot.setAttribute("cx", px(tx));
      targetDot.setAttribute("cy", py(ty));
      // the arc of the shift, at 0.82 of the radius, from angle i w to (i + delta) w
      const start = result.position * result.omega;
      const sweep = result.offset * result.omega;
      const steps = Math.max(2, Math.min(400, Math.ceil(Math.abs(sweep) / 0.05)));
      let d = "";
      for (let k = 0; k <= steps; k++) {
        const a = start + (sweep * k) / steps;
        d += `${k ? "L" : "M"}${px(0.82 * Math.cos(a))},${py(0.82 * Math.sin(a))}`;
      }
      arc.setAttribute("d", result.offset ? d : "");
      title.textContent = `position ${result.position}, pair ${result.pair}: w = ${result.omega.toPrecision(3)}, ` +
        `${result.turns.toFixed(2)} turns`;
      xLabel.textContent = `column ${2 * result.pair + 1} (cos)`;
      yLabel.textContent = `column ${2 * result.pair} (sin)`;
      svg.setAttribute(
        "aria-label",
        `Unit circle with the points (cos, sin) of pair ${result.pair} for positions 0 to ${result.position}; ` +
          `row ${result.position} is at (${f2(x)}, ${f2(y)}), and the shift by ${result.offset} turns it to ` +
          `(${f2(tx)}, ${f2(ty)}).`,
      );
    },
  };
}

// RdBu_r, as the static figure's table: -1 blue, 0 white, 1 red.
const STOPS = [
  [-1, [5, 48, 97]],
  [-0.5, [67, 147, 195]],
  [0, [247, 247, 247]],
  [0.5, [214, 96, 77]],
  [1, [103, 0, 31]],
];

function colour(v) {
  for (let k = 1; k < STOPS.length; k++) {
    const [v1, c1] = STOPS[k];
    if (v <= v1 || k === STOPS.length - 1) {
      const [v0, c0] = STOPS[k - 1];
      const t = Math.min(1, Math.max(0, (v - v0) / (v1 - v0)));
      return c0.map((a, i) => Math.round(a + t * (c1[i] - a)));
    }
  }
  return STOPS[0][1];
}

function tablePanel(parent, data) {
  const d = data.num_hiddens;
  const T = data.max_position;
  const P = table(T, d);
  const S = { w: 300, h: 300 };
  const box = { x: 46, y: 28, w: 240, h: 232 };
  const svg = el("svg", { viewBox: `0 0 ${S.w} ${S.h}`, role: "img", class: "qkv-table" }, parent);
  const canvas = document.createElement("canvas");
  canvas.width = d;
  canvas.height = T;
  const context = canvas.getContext("2d");
  const pixels = context.createImageData(d, T);
  P.forEach((row, i) =>
    row.forEach((v, j) => {
      const [r, g, b] = colour(v);
      pixels.data.set([r, g, b, 255], 4 * (i * d + j));
    }),
  );
  context.putImageData(pixels, 0, 0);
  el("image", { href: canvas.toDataURL(), x: box.x, y: box.y, width: box.w, height: box.h,
    preserveAspectRatio: "none" }, svg);
  const cx = (col) => box.x + (col / d) * box.w;
  const cy = (row) => box.y + ((row + 0.5) / T) * box.h;
  el("text", { x: box.x + box.w / 2, y: 18, "text-anchor": "middle", "font-size": 12 }, svg,
    "the table; row and pair shown");
  el("text", { x: box.x + box.w / 2, y: S.h - 8, "text-anchor": "middle", "font-size": 12 }, svg, "column");
  el("text", { transform: `translate(14 ${box.y + box.h / 2}) rotate(-90)`, "text-anchor": "middle", "font-size": 12 },
    svg, "position");
  for (const col of [0, d / 2, d]) {
    el("text", { x: cx(col), y: box.y + box.h + 14, "text-anchor": "middle", "font-size": 11 }, svg, String(col));
  }
  for (const row of [0, Math.floor(T / 2), T - 1]) {
    el("text", { x: box.x - 5, y: cy(row) + 4, "text-anchor": "end", "font-size": 11 }, svg, String(row));
  }
  const pairHalo = el("rect", { y: box.y, height: box.h, fill: "none", stroke: "white", "stroke-width": 3 }, svg);
  const pairBox = el("rect", { y: box.y, height: box.h, fill: "none", stroke: "black", "stroke-width": 1.5,
    "stroke-dasharray": "4 3" }, svg);
  const target = el("line", { x1: box.x, x2: box.x + box.w, stroke: GREEN, "stroke-width": 2,
    "stroke-dasharray": "5 3" }, svg);
  const row = el("line", { x1: box.x, x2: box.x + box.w, stroke: RED, "stroke-width": 2 }, svg);
  return {
    draw(result) {
      const y = cy(result.position).toFixed(2);
      row.setAttribute("y1", y);
      row.setAttribute("y2", y);
      const shifted = result.position + result.offset;
      target.setAttribute("display", shifted >= 0 && shifted < T && result.offset ? "inline" : "none");
      target.setAttribute("y1", cy(shifted).toFixed(2));
      target.setAttribute("y2", cy(shifted).toFixed(2));
      for (const rect of [pairHalo, pairBox]) {
        rect.setAttribute("x", cx(2 * result.pair).toFixed(2));
        rect.setAttribute("width", (cx(Math.min(d, 2 * result.pair + 2)) - cx(2 * result.pair)).toFixed(2));
      }
      svg.setAttribute(
        "aria-label",
        `Heatmap of the sinusoidal table, ${T} positions by ${d} columns, with row ${result.position}` +
          (target.getAttribute("display") === "inline" ? ` and row ${shifted}` : "") +
          ` and columns ${2 * result.pair} and ${2 * result.pair + 1} marked.`,
      );
    },
  };
}

let instances = 0;

function slider(parent, id, label, min, max) {
  const control = html("div", { class: "qkv-control" }, parent);
  html("label", { for: id }, control, label);
  const input = html("input", { type: "range", id, min, max, step: 1 }, control);
  const readout = html("output", { for: id }, control);
  return { input, readout };
}

function render({ model, el: root }) {
  if (!document.getElementById(STYLE_ID)) {
    html("style", { id: STYLE_ID }, document.head, STYLE);
  }
  const id = `qkv-pe-${++instances}-${Math.random().toString(36).slice(2, 8)}`; // unique if loaded twice
  const box = html("div", { class: "qkv-explorer qkv-positional-encoding" }, root);
  let cleanup = () => {};

  function build() {
    cleanup();
    box.replaceChildren();
    const data = model.get("data");
    const T = data.max_position;
    const pairs = Math.floor(data.num_hiddens / 2);
    const controls = html("div", { class: "qkv-controls" }, box);
    const sliders = {
      position: slider(controls, `${id}-position`, "position i", 0, T - 1),
      pair: slider(controls, `${id}-pair`, "pair j", 0, pairs - 1),
      offset: slider(controls, `${id}-offset`, "shift δ", -(T - 1), T - 1),
    };
    const panels = html("div", { class: "qkv-panels" }, box);
    const circle = circlePanel(panels, T);
    const heat = tablePanel(panels, data);
    const text = html("p", { class: "qkv-summary", "aria-live": "polite" }, box);
    // JupyterLab's shortcuts (arrows select cells) would take the keys the controls need; Lumino leaves alone the
    // keys pressed on an element with this attribute.
    for (const control of controls.querySelectorAll("input, select")) {
      control.setAttribute("data-lm-suppress-shortcuts", "true");
    }
    const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, Math.round(Number(v))));

    function update() {
      const position = clamp(model.get("position"), 0, T - 1);
      const pair = clamp(model.get("pair"), 0, pairs - 1);
      const offset = clamp(model.get("offset"), -(T - 1), T - 1);
      const result = explore(data, position, pair, offset);
      for (const [key, value] of Object.entries({ position, pair, offset })) {
        const { input, readout } = sliders[key];
        input.value = String(value);
        const spoken = { position: `position ${value}`, pair: `pair ${value}`, offset: `shift ${value}` }[key];
        input.setAttribute("aria-valuetext", spoken);
        readout.textContent = String(value);
      }
      circle.draw(result);
      heat.draw(result);
      text.textContent = summary(result);
    }
    const handlers = Object.entries(sliders).map(([key, { input }]) => {
      const handler = () => {
        model.set(key, Number(input.value));
        model.save_changes();
      };
      input.addEventListener("input", handler);
      return handler;
    });
    for (const key of Object.keys(sliders)) model.on(`change:${key}`, update);
    update();
    cleanup = () => {
      for (const key of Object.keys(sliders)) model.off(`change:${key}`, update);
      handlers.length = 0;
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
