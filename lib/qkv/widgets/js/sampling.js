// Sampling explorer, D2L 11.9 "Large-Scale Pretraining with Transformers": the distribution a trained character
// GPT draws its next character from, after a prompt, as the temperature and top-k change.
//
// One module for JupyterLab (anywidget) and the book (book_host.js); see qkv/widgets/_live.py. State:
//   data        {prompts: [the prompts], labels: [V characters, a space as ␣], logits: [[V logits] per prompt]
//                (the model's float32 logits, written exactly), sums: [each row's float64 sum, added left to right:
//                a checksum], temperatures: [the slider's stops], shown: how many bars}
//               made by qkv.widgets.large_pretraining_transformers.sampling_data;
//   prompt      one of data.prompts;
//   temperature the temperature (> 0);
//   top_k       how many of the likeliest characters are kept (V or more: all).
// The model ran when the page was built; the page computes qkv.lm.next_token_distribution in float64: the softmax
// of logits / temperature over the top_k largest (every character tied with the k-th largest kept).

const NS = "http://www.w3.org/2000/svg";
const RED = "#d62728"; // the bars, as in the static figure
const STYLE_ID = "qkv-explorer-style-sampling";
const STYLE = `
.qkv-sampling { font: inherit; margin: 0.5em 0 1em; }
.qkv-sampling .qkv-controls { display: flex; flex-wrap: wrap; gap: 0.4em 1.5em; align-items: center; }
.qkv-sampling .qkv-control { display: flex; flex-wrap: wrap; align-items: center; gap: 0.2em 0.5em; }
.qkv-sampling label, .qkv-sampling output { white-space: nowrap; }
.qkv-sampling input[type=range] { width: 12em; max-width: 55vw; accent-color: ${RED}; }
.qkv-sampling select { font: inherit; max-width: 100%; }
.qkv-sampling input:focus-visible, .qkv-sampling select:focus-visible { outline: 3px solid #e8710a; outline-offset: 2px; }
.qkv-sampling output { font-variant-numeric: tabular-nums; min-width: 3.5em; }
.qkv-sampling svg { display: block; width: 100%; max-width: 560px; height: auto; overflow: visible; }
.qkv-sampling svg text { fill: currentColor; font-family: inherit; }
.qkv-sampling .qkv-axis { stroke: currentColor; stroke-opacity: 0.55; fill: none; }
.qkv-sampling .qkv-grid { stroke: currentColor; stroke-opacity: 0.12; }
.qkv-sampling .qkv-ghost { fill: none; stroke: currentColor; stroke-opacity: 0.5; stroke-dasharray: 3 2; }
.qkv-sampling text.qkv-cut { fill-opacity: 0.45; }
.qkv-sampling .qkv-summary { margin: 0.3em 0 0; font-variant-numeric: tabular-nums; }
`;

// ---- compute (float64), tested against qkv.lm.next_token_distribution -------------------------------------------

/** qkv.lm.next_token_distribution: softmax(logits / temperature) over the `topK` largest (all if null or >= V),
 * 0 elsewhere. Every logit equal to the k-th largest is kept, so a tie at the cut keeps more than k. */
export function distribution(logits, temperature, topK = null) {
  if (!(temperature > 0)) throw new Error(`temperature must be > 0, got ${temperature}`);
  const scaled = logits.map((x) => x / temperature);
  let kth = -Infinity;
  if (topK !== null && topK < scaled.length) {
    if (!(topK >= 1)) throw new Error(`top-k must be at least 1, got ${topK}`);
    kth = [...scaled].sort((a, b) => b - a)[topK - 1];
  }
  const top = Math.max(...scaled);
  const exps = scaled.map((s) => (s < kth ? 0 : Math.exp(s - top)));
  const total = exps.reduce((a, b) => a + b, 0);
  return exps.map((e) => e / total);
}

/** Entropy in bits, -sum p log2 p with 0 log 0 = 0. */
export function entropyBits(probs) {
  return -probs.reduce((acc, p) => acc + (p > 0 ? p * Math.log2(p) : 0), 0);
}

/** The characters' indices from the largest logit down (ties in index order); the same order at every
 * temperature, since dividing by a positive temperature keeps the order. */
export function ranking(logits) {
  return logits.map((_, i) => i).sort((a, b) => logits[b] - logits[a] || a - b);
}

/** The float64 sum of a row, added left to right: the checksum the Python side writes. */
export function checksum(row) {
  return row.reduce((a, b) => a + b, 0);
}

/** Throws unless the data are whole: one row of V logits per prompt, each matching its checksum. */
export function checkData(data) {
  const V = data.labels.length;
  if (data.logits.length !== data.prompts.length || data.sums.length !== data.prompts.length) {
    throw new Error("sampling explorer: one row of logits and one checksum per prompt expected");
  }
  data.logits.forEach((row, i) => {
    if (row.length !== V) throw new Error(`sampling explorer: prompt ${i} has ${row.length} logits, not ${V}`);
    if (checksum(row) !== data.sums[i]) throw new Error(`sampling explorer: the logits of prompt ${i} are damaged`);
  });
}

/** top_k as qkv takes it: null (all) for V or more. */
export function topKOf(topK, V) {
  const k = Math.round(Number(topK));
  return Number.isFinite(k) && k < V ? Math.max(1, k) : null;
}

/** Everything the explorer shows at one setting. */
export function explore(data, prompt, temperature, topK) {
  const V = data.labels.length;
  const index = Math.max(0, data.prompts.indexOf(prompt));
  const logits = data.logits[index];
  const k = topKOf(topK, V);
  const probs = distribution(logits, temperature, k);
  const uncut = k === null ? probs : distribution(logits, temperature, null);
  const order = ranking(logits);
  const shown = order.slice(0, Math.min(data.shown, V));
  const best = order[0];
  const entropy = entropyBits(probs);
  return {
    index,
    prompt: data.prompts[index],
    temperature,
    topK: k,
    probs,
    uncut,
    shown,
    kept: probs.filter((p) => p > 0).length,
    top: { index: best, label: data.labels[best], p: probs[best] },
    above1: probs.filter((p) => p > 0.01).length,
    entropy,
    choices: 2 ** entropy,
  };
}

export function formatTemperature(t) {
  return Number(t).toFixed(2);
}

/** A character as the summary says it: 'l', or "the space". */
export function spoken(label) {
  return label === "␣" ? "the space" : `'${label}'`;
}

export function topKText(result, V) {
  if (result.topK === null) return "all";
  return result.kept > result.topK ? `${result.topK} (${result.kept} kept: a tie at the cut)` : String(result.topK);
}

export function summary(result, data) {
  const V = data.labels.length;
  const n = result.above1;
  return (
    `after '${result.prompt}', temperature ${formatTemperature(result.temperature)}, ` +
    `top-k ${topKText(result, V)}: ${spoken(result.top.label)} has probability ${result.top.p.toFixed(2)}; ` +
    `${n} character${n === 1 ? "" : "s"} above 1%; entropy ${result.entropy.toFixed(2)} bits, ` +
    `like a fair choice among ${result.choices.toFixed(1)} characters.`
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

const W = 360;
const H = 250;
const PAD = { left: 40, right: 8, top: 46, bottom: 42 };

function barsPanel(parent, data) {
  const count = Math.min(data.shown, data.labels.length);
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "qkv-bars" }, parent);
  const x0 = PAD.left;
  const x1 = W - PAD.right;
  const y = (v) => H - PAD.bottom - v * (H - PAD.top - PAD.bottom);
  for (const v of [0, 0.25, 0.5, 0.75, 1]) {
    el("line", { x1: x0, x2: x1, y1: y(v), y2: y(v), class: "qkv-grid", "data-value": v }, svg);
    el("text", { x: x0 - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11 }, svg, String(v));
  }
  el("path", { d: `M${x0},${PAD.top - 4}V${y(0)}H${x1}`, class: "qkv-axis" }, svg);
  const title = el("text", { x: (x0 + x1) / 2, y: 15, "text-anchor": "middle", "font-size": 13 }, svg);
  const note = el("text", { x: (x0 + x1) / 2, y: 31, "text-anchor": "middle", "font-size": 11 }, svg);
  el("text", { x: (x0 + x1) / 2, y: H - 6, "text-anchor": "middle", "font-size": 12 }, svg,
    `the ${count} likeliest next characters`);
  const yLabel = { transform: `translate(11 ${(PAD.top + y(0)) / 2}) rotate(-90)`, "text-anchor": "middle" };
  el("text", { ...yLabel, "font-size": 12 }, svg, "probability");
  const slot = (x1 - x0) / count;
  const slots = [];
  for (let r = 0; r < count; r++) {
    const left = x0 + r * slot;
    const ghost = el("rect", { x: (left + slot * 0.14).toFixed(2), width: (slot * 0.72).toFixed(2), class: "qkv-ghost",
      y: y(0), height: 0, visibility: "hidden" }, svg);
    const bar = el("rect", { x: (left + slot * 0.14).toFixed(2), width: (slot * 0.72).toFixed(2), y: y(0), height: 0,
      fill: RED, class: "qkv-bar" }, svg);
    const value = el("text", { x: (left + slot / 2).toFixed(2), "text-anchor": "middle", "font-size": 10 }, svg);
    const label = el("text", { x: (left + slot / 2).toFixed(2), y: y(0) + 17, "text-anchor": "middle",
      "font-size": 15, class: "qkv-char" }, svg);
    slots.push({ ghost, bar, value, label });
  }
  return {
    draw(result) {
      let cut = 0;
      result.shown.forEach((i, r) => {
        const p = result.probs[i];
        const { ghost, bar, value, label } = slots[r];
        const isCut = p === 0 && result.uncut[i] > 0;
        cut += isCut;
        bar.setAttribute("y", y(p).toFixed(3));
        bar.setAttribute("height", (y(0) - y(p)).toFixed(3));
        bar.dataset.char = data.labels[i];
        ghost.setAttribute("visibility", isCut ? "visible" : "hidden");
        ghost.setAttribute("y", y(result.uncut[i]).toFixed(3));
        ghost.setAttribute("height", (y(0) - y(result.uncut[i])).toFixed(3));
        label.textContent = data.labels[i];
        label.setAttribute("class", isCut ? "qkv-char qkv-cut" : "qkv-char");
        value.textContent = p.toFixed(2) === "0.00" ? "" : p.toFixed(2);
        value.setAttribute("y", (y(p) - 3).toFixed(2));
      });
      title.textContent = `entropy ${result.entropy.toFixed(2)} bits (all ${data.labels.length} equal: ` +
        `${Math.log2(data.labels.length).toFixed(2)})`;
      note.textContent = cut ? "dashed: cut by top-k (its probability without the cut)" : "";
      const kept = result.topK === null ? "all characters kept" : `the top ${result.kept} kept`;
      svg.setAttribute(
        "aria-label",
        `Bar chart of the probabilities of the ${count} likeliest next characters after '${result.prompt}', at ` +
          `temperature ${formatTemperature(result.temperature)} with ${kept}: the highest is ` +
          `${result.top.p.toFixed(2)}, on ${spoken(result.top.label)}` +
          (cut ? `; ${cut} of the ${count} are cut to 0.` : "."),
      );
    },
  };
}

function nearestStop(stops, t) {
  let best = 0;
  for (let i = 1; i < stops.length; i++) if (Math.abs(stops[i] - t) < Math.abs(stops[best] - t)) best = i;
  return best;
}

let instances = 0;

function render({ model, el: root }) {
  if (!document.getElementById(STYLE_ID)) {
    html("style", { id: STYLE_ID }, document.head, STYLE);
  }
  const id = `qkv-sampling-${++instances}-${Math.random().toString(36).slice(2, 8)}`; // unique if loaded twice
  const box = html("div", { class: "qkv-explorer qkv-sampling" }, root);
  let cleanup = () => {};

  function build() {
    cleanup();
    box.replaceChildren();
    const data = model.get("data");
    checkData(data);
    const V = data.labels.length;
    const stops = data.temperatures;
    const controls = html("div", { class: "qkv-controls" }, box);
    const pControl = html("div", { class: "qkv-control" }, controls);
    html("label", { for: `${id}-prompt` }, pControl, "prompt");
    const menu = html("select", { id: `${id}-prompt` }, pControl);
    data.prompts.forEach((p, i) => html("option", { value: String(i) }, menu, `'${p}'`));
    const tControl = html("div", { class: "qkv-control" }, controls);
    html("label", { for: `${id}-temperature` }, tControl, "temperature");
    const tSlider = html("input", { type: "range", id: `${id}-temperature`, min: 0, max: stops.length - 1, step: 1 },
      tControl);
    const tReadout = html("output", { for: `${id}-temperature` }, tControl);
    const kControl = html("div", { class: "qkv-control" }, controls);
    html("label", { for: `${id}-top-k` }, kControl, "top-k");
    const kSlider = html("input", { type: "range", id: `${id}-top-k`, min: 1, max: V, step: 1 }, kControl);
    const kReadout = html("output", { for: `${id}-top-k` }, kControl);
    const bars = barsPanel(box, data);
    const text = html("p", { class: "qkv-summary", "aria-live": "polite" }, box);
    // JupyterLab's shortcuts (arrows select cells) would take the keys the controls need; Lumino leaves alone the
    // keys pressed on an element with this attribute.
    for (const control of controls.querySelectorAll("input, select")) {
      control.setAttribute("data-lm-suppress-shortcuts", "true");
    }

    function update() {
      const temperature = Number(model.get("temperature"));
      const result = explore(data, model.get("prompt"), temperature, model.get("top_k"));
      menu.value = String(result.index);
      tSlider.value = String(nearestStop(stops, temperature));
      tSlider.setAttribute("aria-valuetext", `temperature ${formatTemperature(temperature)}`);
      tReadout.textContent = formatTemperature(temperature);
      kSlider.value = String(result.topK ?? V);
      kSlider.setAttribute("aria-valuetext", result.topK === null ? `all ${V} characters` : `top-k ${result.topK}`);
      kReadout.textContent = result.topK === null ? `all ${V}` : String(result.topK);
      bars.draw(result);
      text.textContent = summary(result, data);
    }
    const onPrompt = () => {
      model.set("prompt", data.prompts[Number(menu.value)]);
      model.save_changes();
    };
    const onTemperature = () => {
      model.set("temperature", stops[Number(tSlider.value)]);
      model.save_changes();
    };
    const onTopK = () => {
      model.set("top_k", Number(kSlider.value));
      model.save_changes();
    };
    menu.addEventListener("change", onPrompt);
    tSlider.addEventListener("input", onTemperature);
    kSlider.addEventListener("input", onTopK);
    const events = ["change:prompt", "change:temperature", "change:top_k"];
    for (const event of events) model.on(event, update);
    update();
    cleanup = () => {
      for (const event of events) model.off(event, update);
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
