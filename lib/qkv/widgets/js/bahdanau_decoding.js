// Decoding explorer, D2L 11.4 "Bahdanau Attention": where each step of a greedy translation looked in the source.
//
// One module for JupyterLab (anywidget) and the book (book_host.js); see qkv/widgets/_live.py. State:
//   data     {sentences: [{source: the sentence, src_tokens: its valid tokens (up to <eos>), out_tokens: the tokens
//             emitted (up to <eos>), weights: [[one weight per source token] per step]}]}, made by
//             qkv.widgets.bahdanau_attention.bahdanau_decoding_data from a trained model's decode_sentence;
//   sentence the sentence shown (one of the sources; the first if it is none of them);
//   step     the decoding step, from 1 (clamped to the sentence's steps).
// No model runs in the page: the weights are the model's float32 values, written exactly; the page only picks the
// step's row, finds its largest weight and draws.

const NS = "http://www.w3.org/2000/svg";
const RED = "#d62728"; // the step's largest weight
const LIGHT_RED = "#e06666"; // its other weights (3:1 or more on white and on #121212)
const STYLE_ID = "qkv-explorer-style-bahdanau-decoding";
const STYLE = `
.qkv-bahdanau-decoding { font: inherit; margin: 0.5em 0 1em; }
.qkv-bahdanau-decoding .qkv-controls { display: flex; flex-wrap: wrap; gap: 0.4em 1.5em; align-items: center; }
.qkv-bahdanau-decoding .qkv-control { display: flex; flex-wrap: wrap; align-items: center; gap: 0.2em 0.5em; }
.qkv-bahdanau-decoding label, .qkv-bahdanau-decoding output { white-space: nowrap; }
.qkv-bahdanau-decoding input[type=range] { width: 12em; max-width: 60vw; accent-color: ${RED}; }
.qkv-bahdanau-decoding select { font: inherit; max-width: 100%; }
.qkv-bahdanau-decoding input:focus-visible, .qkv-bahdanau-decoding select:focus-visible {
  outline: 3px solid #e8710a; outline-offset: 2px; }
.qkv-bahdanau-decoding output { font-variant-numeric: tabular-nums; min-width: 6em; }
.qkv-bahdanau-decoding .qkv-translation { margin: 0.5em 0 0.2em; overflow-wrap: anywhere; }
.qkv-bahdanau-decoding .qkv-translation mark { background: none; color: inherit; font-weight: bold;
  border-bottom: 3px solid ${RED}; padding: 0 0.1em; }
.qkv-bahdanau-decoding .qkv-panels { display: flex; flex-wrap: wrap; gap: 0.5em 1em; align-items: flex-start; }
.qkv-bahdanau-decoding svg { flex: 1 1 280px; min-width: 0; max-width: 440px; height: auto; overflow: visible; }
.qkv-bahdanau-decoding svg text { fill: currentColor; font-family: inherit; }
.qkv-bahdanau-decoding svg text.qkv-in-cell { fill: #000; }
.qkv-bahdanau-decoding svg text.qkv-in-cell.qkv-dark { fill: #fff; }
.qkv-bahdanau-decoding .qkv-axis { stroke: currentColor; stroke-opacity: 0.55; fill: none; }
.qkv-bahdanau-decoding .qkv-grid { stroke: currentColor; stroke-opacity: 0.12; }
.qkv-bahdanau-decoding .qkv-summary { margin: 0.3em 0 0; font-variant-numeric: tabular-nums; }
`;

// ---- compute (float64 on the model's float32 values), tested against qkv ----------------------------------------

/** A token quoted as Python's repr quotes a str: 'suis', or "j'ai" when it holds a single quote. */
export function quote(token) {
  const text = String(token);
  if (text.includes("'") && !text.includes('"')) return `"${text}"`;
  return `'${text.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
}

/** The index of the largest entry of `row`, the first one on a tie (as torch.argmax). */
export function argmax(row) {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

/** The index of `sentence` among the data's sentences; 0 (the first) when it is none of them. */
export function sentenceIndex(data, sentence) {
  const index = data.sentences.findIndex((s) => s.source === sentence);
  return index < 0 ? 0 : index;
}

/** Everything the explorer shows for one sentence at one step (from 1; clamped to the sentence's steps). */
export function explore(data, sentence, step) {
  const index = sentenceIndex(data, sentence);
  const s = data.sentences[index];
  const n = s.out_tokens.length;
  const shown = Math.min(Math.max(Math.round(Number(step)) || 1, 1), n);
  const weights = s.weights[shown - 1];
  const top = argmax(weights);
  return {
    index,
    source: s.source,
    n,
    step: shown,
    token: s.out_tokens[shown - 1],
    weights,
    total: weights.reduce((a, b) => a + b, 0),
    top: { index: top, token: s.src_tokens[top], weight: weights[top] },
    soFar: s.out_tokens.slice(0, shown),
  };
}

/** The slider's value as a reader would say it: step 2 of 4: emits 'suis'. */
export function valueText(result) {
  return `step ${result.step} of ${result.n}: emits ${quote(result.token)}`;
}

/** The aria-live line: the step, its token, where its largest weight went and the translation so far. */
export function summary(result, data) {
  const which = data && data.sentences.length > 1 ? `${quote(result.source)}, ` : "";
  return (
    `${which}step ${result.step} of ${result.n} emits ${quote(result.token)}: the largest weight, ` +
    `${result.top.weight.toFixed(2)}, is on ${quote(result.top.token)}; so far: ${result.soFar.join(" ")}`
  );
}

/** The colour of a weight in the heatmap: matplotlib's "Reds" from 0 to 1, as in the static figure. */
const REDS = ["#fff5f0", "#fee0d2", "#fcbba1", "#fc9272", "#fb6a4a", "#ef3b2c", "#cb181d", "#a50f15", "#67000d"];
export function heatColor(w) {
  const t = Math.min(Math.max(w, 0), 1) * (REDS.length - 1);
  const i = Math.min(Math.floor(t), REDS.length - 2);
  const f = t - i;
  const rgb = (hex, k) => parseInt(hex.slice(1 + 2 * k, 3 + 2 * k), 16);
  const mix = [0, 1, 2].map((k) => Math.round(rgb(REDS[i], k) * (1 - f) + rgb(REDS[i + 1], k) * f));
  return `rgb(${mix.join(",")})`;
}

/** Whether a heatmap cell of weight w wants white text (black text reads better below). */
export function darkCell(w) {
  return w > 0.68;
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

/** A token's label under an axis: upright when there is room, slanted otherwise. */
function tokenLabel(svg, x, y, token, slanted, size = 11) {
  const attrs = slanted
    ? { transform: `translate(${x.toFixed(2)} ${y}) rotate(-40)`, "text-anchor": "end", "font-size": size }
    : { x: x.toFixed(2), y: y + 4, "text-anchor": "middle", "font-size": size };
  return el("text", attrs, svg, token);
}

const W = 360;

/** The bars of one step's weights over the source tokens, on a 0 to 1 scale; the largest is marked. */
function barsPanel(parent, sentence) {
  const m = sentence.src_tokens.length;
  const slot = (W - 46 - 10) / m;
  const slanted = slot < 46;
  const H = slanted ? 262 : 240;
  const PAD = { left: 46, right: 10, top: 48, bottom: slanted ? 54 : 40 };
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "qkv-bars" }, parent);
  const x0 = PAD.left;
  const x1 = W - PAD.right;
  const y = (v) => H - PAD.bottom - v * (H - PAD.top - PAD.bottom);
  for (const v of [0, 0.25, 0.5, 0.75, 1]) {
    el("line", { x1: x0, x2: x1, y1: y(v), y2: y(v), class: "qkv-grid", "data-value": v }, svg);
    el("text", { x: x0 - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11 }, svg, String(v));
  }
  el("path", { d: `M${x0},${PAD.top - 4}V${y(0)}H${x1}`, class: "qkv-axis" }, svg);
  const title = el("text", { x: (x0 + x1) / 2, y: 16, "text-anchor": "middle", "font-size": 13 }, svg);
  const yLabel = { transform: `translate(12 ${(PAD.top + y(0)) / 2}) rotate(-90)`, "text-anchor": "middle" };
  el("text", { ...yLabel, "font-size": 12 }, svg, "attention weight");
  const width = Math.min(slot * 0.7, 48);
  const bars = [];
  const values = [];
  sentence.src_tokens.forEach((token, j) => {
    const cx = x0 + (j + 0.5) * slot;
    bars.push(el("rect", { x: (cx - width / 2).toFixed(2), width: width.toFixed(2), y: y(0), height: 0 }, svg));
    values.push(el("text", { x: cx.toFixed(2), "text-anchor": "middle", "font-size": 11 }, svg));
    tokenLabel(svg, cx, y(0) + 14, token, slanted);
  });
  el("text", { x: (x0 + x1) / 2, y: H - 4, "text-anchor": "middle", "font-size": 12 }, svg, "source tokens");
  return {
    draw(result) {
      result.weights.forEach((w, j) => {
        const top = j === result.top.index;
        const bar = bars[j];
        bar.setAttribute("y", y(w).toFixed(3));
        bar.setAttribute("height", (y(0) - y(w)).toFixed(3));
        bar.setAttribute("fill", top ? RED : LIGHT_RED);
        bar.setAttribute("stroke", top ? "currentColor" : "none");
        bar.setAttribute("stroke-width", top ? 2 : 0);
        bar.classList.toggle("qkv-top", top);
        values[j].setAttribute("y", (y(w) - 5).toFixed(2));
        values[j].setAttribute("font-weight", top ? "bold" : "normal");
        values[j].textContent = top && !slanted ? `▼ ${w.toFixed(2)}` : w.toFixed(2); // no room for ▼ if narrow
      });
      title.textContent = `step ${result.step} of ${result.n}: emits ${quote(result.token)}`;
      svg.setAttribute(
        "aria-label",
        `Bar chart of the attention weights of step ${result.step}, which emits ${quote(result.token)}, over the ` +
          `source tokens: ${result.weights.map((w, j) => `${sentence.src_tokens[j]} ${w.toFixed(2)}`).join(", ")}` +
          `; the largest is on ${quote(result.top.token)}.`,
      );
    },
  };
}

/** Every step's weights as a heatmap (rows the steps, labelled with the tokens they emitted), the step outlined. */
function heatmapPanel(parent, sentence) {
  const m = sentence.src_tokens.length;
  const n = sentence.out_tokens.length;
  const left = 70;
  const top = 36;
  const cw = Math.min((W - left - 8) / m, 64);
  const ch = 22;
  const slanted = cw < 46;
  const gridW = cw * m;
  const bottom = slanted ? 56 : 40;
  const H = top + n * ch + bottom;
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "qkv-heatmap" }, parent);
  el("text", { x: left + gridW / 2, y: 14, "text-anchor": "middle", "font-size": 13 }, svg, "every step's weights");
  const rowLabels = [];
  sentence.weights.forEach((row, i) => {
    const yy = top + i * ch;
    rowLabels.push(
      el("text", { x: left - 6, y: yy + ch / 2 + 4, "text-anchor": "end", "font-size": 11 }, svg,
        sentence.out_tokens[i]),
    );
    row.forEach((w, j) => {
      const xx = left + j * cw;
      el("rect", { x: (xx + 0.5).toFixed(2), y: yy + 0.5, width: (cw - 1).toFixed(2), height: ch - 1,
        fill: heatColor(w), "data-row": i, "data-col": j }, svg);
      el("text", { x: (xx + cw / 2).toFixed(2), y: yy + ch / 2 + 4, "text-anchor": "middle", "font-size": 10,
        class: `qkv-in-cell${darkCell(w) ? " qkv-dark" : ""}` }, svg, w.toFixed(2));
    });
  });
  sentence.src_tokens.forEach((token, j) => tokenLabel(svg, left + (j + 0.5) * cw, top + n * ch + 12, token, slanted));
  el("text", { x: left + gridW / 2, y: H - 4, "text-anchor": "middle", "font-size": 12 }, svg, "source tokens");
  el("text", { x: left - 6, y: top - 6, "text-anchor": "end", "font-size": 11, "font-style": "italic" }, svg,
    "step emits");
  const outline = el("rect", { x: left - 2, width: gridW + 4, height: ch + 3, fill: "none", stroke: "currentColor",
    "stroke-width": 2.5, rx: 2, class: "qkv-current" }, svg);
  return {
    draw(result) {
      outline.setAttribute("y", top + (result.step - 1) * ch - 1.5);
      outline.setAttribute("data-step", result.step);
      rowLabels.forEach((label, i) => label.setAttribute("font-weight", i === result.step - 1 ? "bold" : "normal"));
      svg.setAttribute(
        "aria-label",
        `Heatmap of the weights of all ${n} steps, rows the emitted tokens ${sentence.out_tokens.join(" ")}, ` +
          `columns the source tokens ${sentence.src_tokens.join(" ")}; step ${result.step} is outlined.`,
      );
    },
  };
}

let instances = 0;

function render({ model, el: root }) {
  if (!document.getElementById(STYLE_ID)) {
    html("style", { id: STYLE_ID }, document.head, STYLE);
  }
  const id = `qkv-decoding-${++instances}-${Math.random().toString(36).slice(2, 8)}`; // unique if loaded twice
  const box = html("div", { class: "qkv-explorer qkv-bahdanau-decoding" }, root);
  let cleanup = () => {};

  function build() {
    cleanup();
    box.replaceChildren();
    const data = model.get("data");
    const controls = html("div", { class: "qkv-controls" }, box);
    let menu = null;
    if (data.sentences.length > 1) {
      const sControl = html("div", { class: "qkv-control" }, controls);
      html("label", { for: `${id}-sentence` }, sControl, "sentence");
      menu = html("select", { id: `${id}-sentence` }, sControl);
      data.sentences.forEach((s, i) => html("option", { value: String(i) }, menu, s.source));
    }
    const tControl = html("div", { class: "qkv-control" }, controls);
    html("label", { for: `${id}-step` }, tControl, "decoding step");
    const slider = html("input", { type: "range", id: `${id}-step`, min: 1, max: 1, step: 1 }, tControl);
    const readout = html("output", { for: `${id}-step` }, tControl);
    const translation = html("p", { class: "qkv-translation" }, box);
    const panels = html("div", { class: "qkv-panels" }, box);
    const text = html("p", { class: "qkv-summary", "aria-live": "polite" }, box);
    // JupyterLab's shortcuts (arrows select cells) would take the keys the controls need; Lumino leaves alone the
    // keys pressed on an element with this attribute.
    for (const control of controls.querySelectorAll("input, select")) {
      control.setAttribute("data-lm-suppress-shortcuts", "true");
    }

    let shownIndex = -1;
    let bars = null;
    let heatmap = null;
    function update() {
      const result = explore(data, model.get("sentence"), model.get("step"));
      if (result.index !== shownIndex) { // a new sentence: its own bars and heatmap (a few dozen elements)
        shownIndex = result.index;
        panels.replaceChildren();
        bars = barsPanel(panels, data.sentences[result.index]);
        heatmap = heatmapPanel(panels, data.sentences[result.index]);
        slider.max = String(result.n);
        if (menu) menu.value = String(result.index);
      }
      slider.value = String(result.step);
      slider.setAttribute("aria-valuetext", valueText(result));
      readout.textContent = `step ${result.step} of ${result.n}`;
      translation.replaceChildren();
      html("span", {}, translation, "translation so far: ");
      result.soFar.forEach((token, i) => {
        if (i) translation.append(" ");
        html(i === result.step - 1 ? "mark" : "span", {}, translation, token);
      });
      bars.draw(result);
      heatmap.draw(result);
      text.textContent = summary(result, data);
    }
    const onSlide = () => {
      model.set("step", Number(slider.value));
      model.save_changes();
    };
    const onChoose = () => {
      const chosen = data.sentences[Number(menu.value)];
      model.set("sentence", chosen.source);
      const step = Number(model.get("step"));
      if (!(step >= 1 && step <= chosen.out_tokens.length)) model.set("step", Math.min(Math.max(step || 1, 1),
        chosen.out_tokens.length));
      model.save_changes();
    };
    slider.addEventListener("input", onSlide);
    if (menu) menu.addEventListener("change", onChoose);
    model.on("change:sentence", update);
    model.on("change:step", update);
    update();
    cleanup = () => {
      model.off("change:sentence", update);
      model.off("change:step", update);
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
