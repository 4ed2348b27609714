// Key/value cache explorer, D2L 11.5 "Multi-Head Attention" (beyond D2L): what sharing key/value heads saves.
//
// One module for JupyterLab (anywidget) and the book (book_host.js); see qkv/widgets/_live.py. State:
//   data         {model: {num_hiddens, num_heads, num_layers}, kv_heads: the divisors of num_heads, contexts: the
//                context lengths of the axis, batch_sizes, bytes_per_number}, made by
//                qkv.widgets.multihead_attention.kv_cache_data;
//   num_kv_heads G, one of data.kv_heads; batch_size, one of data.batch_sizes; context, one of data.contexts (the
//                context length read off the chart).
// The page computes, in float64, what qkv.multihead.attention_costs and qkv.widgets.multihead_attention.cache_curve
// compute: the cache in GiB at each context length and the attention weights' memory in GiB.

const NS = "http://www.w3.org/2000/svg";
const RED = "#d62728"; // the cache of the chosen G, as in the static figure
const BLUE = "#1f77b4"; // the attention weights
const GIB = 2 ** 30;
const STYLE_ID = "qkv-explorer-style-kv-cache";
const STYLE = `
.qkv-kv-cache { font: inherit; margin: 0.5em 0 1em; }
.qkv-kv-cache .qkv-controls { display: flex; flex-wrap: wrap; gap: 0.4em 1.5em; align-items: center; }
.qkv-kv-cache .qkv-control { display: flex; flex-wrap: wrap; align-items: center; gap: 0.2em 0.5em; }
.qkv-kv-cache label, .qkv-kv-cache output { white-space: nowrap; }
.qkv-kv-cache input[type=range] { width: 10em; max-width: 50vw; accent-color: ${BLUE}; }
.qkv-kv-cache input:focus-visible { outline: 3px solid #e8710a; outline-offset: 2px; }
.qkv-kv-cache output { font-variant-numeric: tabular-nums; min-width: 4.5em; }
.qkv-kv-cache svg { display: block; width: 100%; max-width: 560px; height: auto; margin-top: 0.4em; }
.qkv-kv-cache svg text { fill: currentColor; font-family: inherit; }
.qkv-kv-cache .qkv-axis { stroke: currentColor; stroke-opacity: 0.55; fill: none; }
.qkv-kv-cache .qkv-grid { stroke: currentColor; stroke-opacity: 0.12; }
.qkv-kv-cache .qkv-other { stroke: currentColor; stroke-opacity: 0.55; fill: none; stroke-width: 1.5; }
.qkv-kv-cache .qkv-summary { margin: 0.3em 0 0; font-variant-numeric: tabular-nums; }
`;

// ---- compute (float64), tested against qkv ----------------------------------------------------------------------

/** qkv.multihead.attention_costs: [parameters of the attention layers, bytes of their key/value cache]. Each of L
 * layers has W_q and W_o (N x N) and W_k and W_v (G h x N, h = N / H); the cache keeps the keys and the values of
 * the G key/value heads for every layer, token and sequence. Whole numbers, exact below 2^53. */
export function attentionCosts(N, H, G, T, B = 1, L = 1, bytes = 2) {
  if (N % H || H % G) {
    throw new Error(`num_hiddens = ${N} must split into num_heads = ${H} heads, and those into num_kv_heads = ${G} groups`);
  }
  const kvWidth = G * (N / H); // G h features of keys, and as many of values
  const parameters = L * (2 * N * N + 2 * N * kvWidth);
  const cacheBytes = L * B * T * 2 * kvWidth * bytes;
  return [parameters, cacheBytes];
}

/** qkv.widgets.multihead_attention.cache_curve: [the cache in GiB at each context length, the attention weights'
 * memory in GiB], for `model` with G key/value heads, B sequences and `bytes` bytes a number. */
export function cacheCurve(G, contexts, B = 1, bytes = 2, model) {
  const { num_hiddens: N, num_heads: H, num_layers: L } = model;
  const caches = contexts.map((T) => attentionCosts(N, H, G, T, B, L, bytes)[1] / GIB);
  const parameters = attentionCosts(N, H, G, 1, 1, L, bytes)[0];
  return [caches, (parameters * bytes) / GIB];
}

/** The fewest whole tokens at which the cache of B sequences takes at least the attention weights' memory (the
 * bytes a number cancel out). */
export function reachTokens(model, G, B) {
  const { num_hiddens: N, num_heads: H, num_layers: L } = model;
  const [parameters, perToken] = attentionCosts(N, H, G, 1, B, L, 1);
  return Math.ceil(parameters / perToken);
}

function nearestIndex(values, v) {
  let best = 0;
  for (let i = 1; i < values.length; i++) {
    if (Math.abs(Math.log(values[i] / v)) < Math.abs(Math.log(values[best] / v))) best = i;
  }
  return best;
}

/** Everything the explorer shows at one setting; a G, batch or context that the data lack is read as the nearest
 * one they have (on a log scale). */
export function explore(data, G, B, context) {
  const { model, contexts, bytes_per_number: bytes } = data;
  const H = model.num_heads;
  const g = data.kv_heads[nearestIndex(data.kv_heads, G)];
  const b = data.batch_sizes[nearestIndex(data.batch_sizes, B)];
  const index = nearestIndex(contexts, context);
  const [caches, weights] = cacheCurve(g, contexts, b, bytes, model);
  return {
    G: g,
    H,
    batch: b,
    bytes,
    index,
    context: contexts[index],
    caches,
    weights,
    cache: caches[index],
    mha: cacheCurve(H, contexts, b, bytes, model)[0],
    mqa: cacheCurve(1, contexts, b, bytes, model)[0],
    times: H / g,
    reach: reachTokens(model, g, b),
  };
}

/** The lowest and highest memory (GiB) the chart ever shows for these data: its fixed y range. */
export function chartRange(data) {
  const { model, contexts, batch_sizes: batches, bytes_per_number: bytes } = data;
  const G = data.kv_heads;
  const [low, lowWeights] = cacheCurve(Math.min(...G), contexts, Math.min(...batches), bytes, model);
  const [high, highWeights] = cacheCurve(Math.max(...G), contexts, Math.max(...batches), bytes, model);
  return [Math.min(...low, lowWeights), Math.max(...high, highWeights)];
}

/** A whole number with a comma between thousands: 32768 -> "32,768". */
export function grouped(n) {
  const s = String(Math.round(Math.abs(n)));
  return (n < 0 ? "-" : "") + s.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** GiB to three significant digits (10.0, 22.5, 0.0391), whole and grouped from 1,000 on. */
export function formatGiB(v) {
  return v >= 999.5 ? grouped(v) : v.toPrecision(3);
}

/** The kind of attention G key/value heads of H make. */
export function kind(G, H) {
  return G === H ? "multi-head" : G === 1 ? "multi-query" : "grouped-query";
}

export function summary(result, data) {
  const { G, H } = result;
  const against = G === H ? " (multi-head attention)" : `, ${grouped(result.times)} times less than multi-head`;
  const first = data.contexts[0];
  const last = data.contexts.at(-1);
  const where = result.reach > last ? ", beyond the chart" : result.reach < first ? ", before the chart begins" : "";
  return (
    `G = ${G}, batch ${result.batch}, ${grouped(result.context)} tokens: cache ${formatGiB(result.cache)} GiB` +
    `${against}${G === 1 && H > 1 ? " (multi-query)" : ""}; the attention weights take ${formatGiB(result.weights)} GiB; ` +
    `the cache reaches them at ${grouped(result.reach)} tokens${where}.`
  );
}

/** What a screen reader says for each slider's value. */
export function spoken(key, value, H) {
  if (key === "num_kv_heads") return `G = ${value} key/value head${value === 1 ? "" : "s"} (${kind(value, H)})`;
  if (key === "batch_size") return `batch of ${value} sequence${value === 1 ? "" : "s"}`;
  return `${grouped(value)} tokens`;
}

/** A context length as an axis label: 1,024 tokens are 1K. */
export function shortTokens(t) {
  return t >= 1024 && t % 1024 === 0 ? `${t / 1024}K` : grouped(t);
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
const HT = 290;
const PAD = { left: 58, right: 16, top: 64, bottom: 46 };

/** Powers of ten inside [lo, hi] (GiB), with 2 and 5 times them where the range spans less than two decades. */
function memoryTicks(lo, hi) {
  const ticks = [];
  const steps = Math.log10(hi / lo) < 2 ? [1, 2, 5] : [1];
  for (let k = Math.floor(Math.log10(lo)); k <= Math.ceil(Math.log10(hi)); k++) {
    for (const m of steps) {
      const v = m * 10 ** k;
      if (v >= lo * 0.999 && v <= hi * 1.001) ticks.push(Number(v.toPrecision(12)));
    }
  }
  return ticks;
}

function tickText(v) {
  return v >= 1000 ? grouped(v) : String(v);
}

function chart(parent, data) {
  const svg = el("svg", { viewBox: `0 0 ${W} ${HT}`, role: "img", class: "qkv-kv-chart" }, parent);
  const { contexts, model } = data;
  const H = model.num_heads;
  const [lo, hi] = chartRange(data);
  const yLo = Math.log10(lo) - 0.08;
  const yHi = Math.log10(hi) + 0.08;
  const x0 = PAD.left;
  const x1 = W - PAD.right;
  const yBottom = HT - PAD.bottom;
  const xLo = Math.log2(contexts[0]);
  const xHi = Math.log2(contexts.at(-1));
  const x = (t) => (xHi > xLo ? x0 + 6 + ((Math.log2(t) - xLo) / (xHi - xLo)) * (x1 - x0 - 12) : (x0 + x1) / 2);
  const y = (v) => yBottom - ((Math.log10(v) - yLo) / (yHi - yLo)) * (yBottom - PAD.top);
  const fx = (t) => x(t).toFixed(2);
  const fy = (v) => y(v).toFixed(2);
  for (const v of memoryTicks(lo, hi)) {
    el("line", { x1: x0, x2: x1, y1: fy(v), y2: fy(v), class: "qkv-grid" }, svg);
    el("text", { x: x0 - 5, y: (y(v) + 4).toFixed(2), "text-anchor": "end", "font-size": 12, class: "qkv-ytick",
      "data-value": v }, svg, tickText(v));
  }
  const every = Math.max(1, Math.ceil(38 / ((x1 - x0 - 12) / Math.max(1, contexts.length - 1))));
  contexts.forEach((t, i) => {
    el("line", { x1: fx(t), x2: fx(t), y1: PAD.top, y2: yBottom, class: "qkv-grid" }, svg);
    if (i % every === 0 || i === contexts.length - 1) {
      el("text", { x: fx(t), y: yBottom + 16, "text-anchor": "middle", "font-size": 12, class: "qkv-xtick",
        "data-value": t }, svg, shortTokens(t));
    }
  });
  el("path", { d: `M${x0},${PAD.top - 4}V${yBottom}H${x1}`, class: "qkv-axis" }, svg);
  const kilo = contexts.some((t) => t >= 1024 && t % 1024 === 0) ? ", K = 1,024" : "";
  el("text", { x: (x0 + x1) / 2, y: HT - 8, "text-anchor": "middle", "font-size": 12.5 }, svg,
    `context length (tokens${kilo})`);
  const bits = 8 * data.bytes_per_number;
  el("text", { transform: `translate(12 ${(PAD.top + yBottom) / 2}) rotate(-90)`, "text-anchor": "middle",
    "font-size": 12.5 }, svg, `GiB (${bits}-bit numbers)`);
  const title = el("text", { x: W / 2, y: 15, "text-anchor": "middle", "font-size": 13.5, class: "qkv-title" }, svg);

  // the curves: the weights' line, grey multi-head and multi-query, the chosen G on top
  const weightsLine = el("line", { x1: x0, x2: x1, stroke: BLUE, "stroke-width": 2, class: "qkv-weights" }, svg);
  const mha = el("polyline", { class: "qkv-other qkv-mha", "stroke-dasharray": "2 3" }, svg);
  const mqa = el("polyline", { class: "qkv-other qkv-mqa", "stroke-dasharray": "6 4" }, svg);
  const guide = el("line", { y1: PAD.top, y2: yBottom, stroke: "currentColor", "stroke-opacity": 0.45,
    "stroke-dasharray": "1 3" }, svg);
  const curve = el("polyline", { fill: "none", stroke: RED, "stroke-width": 2, class: "qkv-cache" }, svg);
  const dots = contexts.map((t) => el("circle", { cx: fx(t), r: 2.8, fill: RED, class: "qkv-dot" }, svg));
  const marker = el("circle", { r: 6.5, fill: "none", stroke: "currentColor", "stroke-width": 2,
    class: "qkv-marker" }, svg);

  // the legend, two rows of two: the chosen G and the weights, then the grey curves drawn
  const legend = el("g", { "font-size": 11.5 }, svg);
  const COLUMNS = [6, 180];
  const entry = (at, row, attrs) => {
    const g = el("g", { transform: `translate(${at} ${31 + 16 * row})` }, legend);
    el("line", { x1: 0, x2: 18, y1: 0, y2: 0, "stroke-width": 2, ...attrs }, g);
    return { g, text: el("text", { x: 23, y: 4 }, g) };
  };
  const mine = entry(COLUMNS[0], 0, { stroke: RED });
  const flat = entry(COLUMNS[1], 0, { stroke: BLUE });
  const mhaKey = entry(COLUMNS[0], 1, { class: "qkv-other", "stroke-dasharray": "2 3" });
  const mqaKey = entry(COLUMNS[1], 1, { class: "qkv-other", "stroke-dasharray": "6 4" });
  mhaKey.text.textContent = `G = ${H} (multi-head)`;
  mqaKey.text.textContent = "G = 1 (multi-query)";
  const points = (values) => contexts.map((t, i) => `${fx(t)},${fy(values[i])}`).join(" ");

  return {
    draw(result) {
      const { G } = result;
      title.textContent = `G = ${G} of ${H} heads, batch ${result.batch}`;
      mine.text.textContent = `G = ${G}: key/value cache`;
      flat.text.textContent = `attention weights: ${formatGiB(result.weights)} GiB`;
      weightsLine.setAttribute("y1", fy(result.weights));
      weightsLine.setAttribute("y2", fy(result.weights));
      mha.setAttribute("points", points(result.mha));
      mqa.setAttribute("points", points(result.mqa));
      let column = 0;
      for (const [line, key, shown] of [[mha, mhaKey, G !== H], [mqa, mqaKey, G !== 1 && H !== 1]]) {
        line.style.display = key.g.style.display = shown ? "" : "none";
        if (shown) key.g.setAttribute("transform", `translate(${COLUMNS[column++]} 47)`);
      }
      curve.setAttribute("points", points(result.caches));
      result.caches.forEach((v, i) => dots[i].setAttribute("cy", fy(v)));
      guide.setAttribute("x1", fx(result.context));
      guide.setAttribute("x2", fx(result.context));
      marker.setAttribute("cx", fx(result.context));
      marker.setAttribute("cy", fy(result.cache));
      const reach = result.reach > contexts.at(-1)
        ? "beyond the chart"
        : result.reach < contexts[0] ? "before the chart begins" : "inside the chart";
      svg.setAttribute(
        "aria-label",
        `Log-log chart of the key/value cache against the context length, ${grouped(contexts[0])} to ` +
          `${grouped(contexts.at(-1))} tokens, for G = ${G} of ${H} heads (${kind(G, H)}) and a batch of ` +
          `${result.batch}: from ${formatGiB(result.caches[0])} to ${formatGiB(result.caches.at(-1))} GiB, a ` +
          `straight line; multi-head and multi-query attention in grey; the attention weights' ` +
          `${formatGiB(result.weights)} GiB as a horizontal line, which the cache reaches at ` +
          `${grouped(result.reach)} tokens, ${reach}; a ring marks ${grouped(result.context)} tokens, ` +
          `${formatGiB(result.cache)} GiB.`,
      );
    },
  };
}

function slider(parent, id, label, count) {
  const control = html("div", { class: "qkv-control" }, parent);
  html("label", { for: id }, control, label);
  const input = html("input", { type: "range", id, min: 0, max: count - 1, step: 1 }, control);
  const readout = html("output", { for: id }, control);
  return { input, readout };
}

let instances = 0;

function render({ model, el: root }) {
  if (!document.getElementById(STYLE_ID)) {
    html("style", { id: STYLE_ID }, document.head, STYLE);
  }
  const id = `qkv-kv-${++instances}-${Math.random().toString(36).slice(2, 8)}`; // unique if loaded twice
  const box = html("div", { class: "qkv-explorer qkv-kv-cache" }, root);
  let cleanup = () => {};

  function build() {
    cleanup();
    box.replaceChildren();
    const data = model.get("data");
    const H = data.model.num_heads;
    const options = { num_kv_heads: data.kv_heads, batch_size: data.batch_sizes, context: data.contexts };
    const controls = html("div", { class: "qkv-controls" }, box);
    const sliders = {
      num_kv_heads: slider(controls, `${id}-g`, "key/value heads", data.kv_heads.length),
      batch_size: slider(controls, `${id}-batch`, "batch size", data.batch_sizes.length),
      context: slider(controls, `${id}-context`, "context length", data.contexts.length),
    };
    const drawing = chart(box, data);
    const text = html("p", { class: "qkv-summary", "aria-live": "polite" }, box);
    // JupyterLab's shortcuts (arrows select cells) would take the keys the controls need; Lumino leaves alone the
    // keys pressed on an element with this attribute.
    for (const control of controls.querySelectorAll("input, select")) {
      control.setAttribute("data-lm-suppress-shortcuts", "true");
    }

    function update() {
      const result = explore(data, model.get("num_kv_heads"), model.get("batch_size"), model.get("context"));
      const shown = { num_kv_heads: result.G, batch_size: result.batch, context: result.context };
      for (const [key, value] of Object.entries(shown)) {
        const { input, readout } = sliders[key];
        input.value = String(options[key].indexOf(value));
        input.setAttribute("aria-valuetext", spoken(key, value, H));
        readout.textContent = { num_kv_heads: `G = ${value}`, batch_size: String(value), context: `${grouped(value)} tokens` }[key];
      }
      drawing.draw(result);
      text.textContent = summary(result, data);
    }
    const handlers = Object.entries(sliders).map(([key, { input }]) => {
      const handler = () => {
        model.set(key, options[key][Number(input.value)]);
        model.save_changes();
      };
      input.addEventListener("input", handler);
      return [input, handler];
    });
    for (const key of Object.keys(sliders)) model.on(`change:${key}`, update);
    update();
    cleanup = () => {
      for (const key of Object.keys(sliders)) model.off(`change:${key}`, update);
      for (const [input, handler] of handlers) input.removeEventListener("input", handler);
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
