// Encoder-decoder attention explorer, D2L 11.7 "The Transformer Architecture": where each French token that the
// trained translator emitted looked in the English source, for one block and one head.
//
// One module for JupyterLab (anywidget) and the book (book_host.js); see qkv/widgets/_live.py. State:
//   data     {blocks, heads, num_steps, sentences: [{sentence, src: [valid source tokens], out: [emitted tokens],
//            weights: [block][head][emitted][source] (float32 values, exact), checksum: their sum (math.fsum),
//            unknown: [words read as <unk>], cut: whether the sentence was cut to num_steps tokens}],
//            error (JupyterLab only, after a sentence the kernel could not translate): {sentence, message, count}}
//            made by qkv.widgets.transformer.cross_attention_data;
//   sentence the sentence shown (one of data.sentences, or one being translated);
//   block, head, step   counted from 1: the block, the head and the emitted token whose row is picked out;
//   typing   (JupyterLab only) true: a text box sends new sentences to the kernel, which adds them to data.
// The page computes nothing new: it shows qkv's weights exactly, and finds each row's largest weight.

const NS = "http://www.w3.org/2000/svg";
const RED = "#b2182b"; // the heatmap's colour, at opacity = weight: 6:1 on white, 3:1 on #121212 at weight 1
const STYLE_ID = "qkv-explorer-style-cross-attention";
const STYLE = `
.qkv-cross-attention { font: inherit; margin: 0.5em 0 1em; }
.qkv-cross-attention .qkv-controls { display: flex; flex-wrap: wrap; gap: 0.4em 1.5em; align-items: center; }
.qkv-cross-attention .qkv-control { display: flex; flex-wrap: wrap; align-items: center; gap: 0.2em 0.5em; }
.qkv-cross-attention label, .qkv-cross-attention output { white-space: nowrap; }
.qkv-cross-attention input[type=range] { width: 9em; max-width: 50vw; accent-color: ${RED}; }
.qkv-cross-attention select, .qkv-cross-attention input[type=text], .qkv-cross-attention button {
  font: inherit; max-width: 100%; }
.qkv-cross-attention input[type=text] { width: 14em; max-width: 70vw; }
.qkv-cross-attention input:focus-visible, .qkv-cross-attention select:focus-visible,
.qkv-cross-attention button:focus-visible { outline: 3px solid #e8710a; outline-offset: 2px; }
.qkv-cross-attention output { font-variant-numeric: tabular-nums; min-width: 3.5em; }
.qkv-cross-attention .qkv-typing { display: flex; flex-wrap: wrap; gap: 0.3em 0.6em; align-items: center;
  margin: 0 0 0.5em; }
.qkv-cross-attention .qkv-message:empty { display: none; }
.qkv-cross-attention .qkv-message, .qkv-cross-attention .qkv-caption { margin: 0.3em 0; }
.qkv-cross-attention .qkv-caption { font-size: 0.9em; opacity: 0.85; }
.qkv-cross-attention svg { display: block; width: 100%; height: auto; margin: 0.3em 0; overflow: visible; }
.qkv-cross-attention svg text { fill: currentColor; font-family: inherit; }
.qkv-cross-attention svg .qkv-cell { stroke: currentColor; stroke-opacity: 0.15; }
.qkv-cross-attention svg .qkv-value { font-variant-numeric: tabular-nums; pointer-events: none; }
.qkv-cross-attention svg .qkv-value.qkv-on-dark { fill: #fff; }
.qkv-cross-attention svg .qkv-row { cursor: pointer; }
.qkv-cross-attention svg .qkv-selected { fill: none; stroke: currentColor; stroke-width: 2.5; }
.qkv-cross-attention .qkv-summary { margin: 0.3em 0 0; font-variant-numeric: tabular-nums; }
`;

// ---- compute (float64), tested against qkv -------------------------------------------------------------------

/** The index of `sentence` in data.sentences, or -1. */
export function findSentence(data, sentence) {
  return data.sentences.findIndex((entry) => entry.sentence === sentence);
}

/** The index of a row's largest weight (the first of equal ones, as torch.argmax gives it on distinct values). */
export function argmax(row) {
  let best = 0;
  for (let k = 1; k < row.length; k++) if (row[k] > row[best]) best = k;
  return best;
}

/** The sum of every weight of one sentence (Neumaier's compensated sum), to check against its checksum. */
export function checksum(entry) {
  let sum = 0;
  let carry = 0;
  for (const block of entry.weights) {
    for (const head of block) {
      for (const row of head) {
        for (const w of row) {
          const t = sum + w;
          carry += Math.abs(sum) >= Math.abs(w) ? sum - t + w : w - t + sum;
          sum = t;
        }
      }
    }
  }
  return sum + carry;
}

/** What is wrong with the data (an empty list if nothing): shapes, values in [0, 1], the checksums. */
export function validate(data) {
  if (!data || !Array.isArray(data.sentences) || data.sentences.length === 0) return ["there are no sentences"];
  const { blocks, heads } = data;
  if (!(Number.isInteger(blocks) && blocks >= 1 && Number.isInteger(heads) && heads >= 1)) {
    return [`blocks and heads must be whole numbers from 1, got ${blocks} and ${heads}`];
  }
  const problems = [];
  data.sentences.forEach((entry, i) => {
    const name = `sentence ${i + 1} (${JSON.stringify(entry.sentence)})`;
    const n = entry.out?.length;
    const T = entry.src?.length;
    if (!n || !T) {
      problems.push(`${name} has no emitted or no source tokens`);
      return;
    }
    const w = entry.weights;
    const shaped = Array.isArray(w) && w.length === blocks && w.every((b) => Array.isArray(b) && b.length === heads
      && b.every((h) => Array.isArray(h) && h.length === n && h.every((r) => Array.isArray(r) && r.length === T)));
    if (!shaped) {
      problems.push(`${name}: the weights are not (${blocks} blocks, ${heads} heads, ${n} emitted, ${T} source)`);
      return;
    }
    if (!w.flat(3).every((x) => Number.isFinite(x) && x >= 0 && x <= 1)) {
      problems.push(`${name}: a weight is not a number from 0 to 1`);
      return;
    }
    const sum = checksum(entry);
    if (!(Math.abs(sum - entry.checksum) <= 1e-9 * Math.max(1, Math.abs(entry.checksum)))) {
      problems.push(`${name}: the weights sum to ${sum}, not to their checksum ${entry.checksum}`);
    }
  });
  return problems;
}

const clamp = (value, low, high) => Math.min(high, Math.max(low, Math.round(Number(value)) || low));

/** Everything the explorer shows for one setting; a sentence not in the data shows sentence `fallback`. */
export function explore(data, sentence, block, head, step, fallback = 0) {
  const found = findSentence(data, sentence);
  const index = found >= 0 ? found : fallback;
  const entry = data.sentences[index];
  const b = clamp(block, 1, data.blocks);
  const h = clamp(head, 1, data.heads);
  const s = clamp(step, 1, entry.out.length);
  const matrix = entry.weights[b - 1][h - 1]; // (emitted, source)
  const tops = matrix.map(argmax);
  const row = matrix[s - 1];
  const order = row.map((_, k) => k).sort((p, q) => row[q] - row[p] || p - q);
  const at = (k) => ({ source: k, token: entry.src[k], weight: row[k] });
  return {
    index,
    found: found >= 0,
    sentence: entry.sentence,
    src: entry.src,
    out: entry.out,
    blocks: data.blocks,
    heads: data.heads,
    block: b,
    head: h,
    step: s,
    token: entry.out[s - 1],
    matrix,
    tops,
    row,
    top: at(order[0]),
    second: order.length > 1 ? at(order[1]) : null,
  };
}

/** A token in quotes, with its place among the source tokens when the same token appears more than once. */
function sourceName(result, pick) {
  const repeated = result.src.filter((t) => t === pick.token).length > 1;
  return repeated ? `"${pick.token}" (source token ${pick.source + 1})` : `"${pick.token}"`;
}

/** The aria-live line: where the picked token looked. */
export function summary(result) {
  const n = result.out.length;
  let text =
    `block ${result.block}, head ${result.head}: "${result.token}" (French token ${result.step} of ${n}) puts ` +
    `${result.top.weight.toFixed(2)} of its weight on ${sourceName(result, result.top)}`;
  if (result.second) text += `, then ${result.second.weight.toFixed(2)} on ${sourceName(result, result.second)}`;
  return `${text}.`;
}

/** The heatmap's description for screen readers: where each row's largest weight is. */
export function description(result) {
  const rows = result.out.map(
    (token, i) => `"${token}" on "${result.src[result.tops[i]]}" ${result.matrix[i][result.tops[i]].toFixed(2)}`,
  );
  return (
    `Heatmap of the encoder-decoder attention of block ${result.block}, head ${result.head} for ` +
    `"${result.sentence}": ${result.out.length} rows, the French tokens emitted, by ${result.src.length} columns, ` +
    `the English source tokens; darker is more weight. Each row's largest weight: ${rows.join("; ")}.`
  );
}

// ---- drawing --------------------------------------------------------------------------------------------------

function svgEl(tag, attrs = {}, parent = null, text = null) {
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

const CELL = 44; // a cell's side, in the drawing's units (about pixels at full size)
const FONT = 13;
const CHAR = 8.6; // at least the width of a character at FONT, bold (DejaVu Sans: "<" and ">" are the widest here)
const DARK_TEXT_FROM = 0.7; // a value on a cell at least this dark is written in white

/** The heatmap: built per sentence (labels, cells), coloured per setting. */
function heatmap(parent, gradientId, onPick) {
  const svg = svgEl("svg", { role: "img", class: "qkv-heatmap" }, parent);
  let cells = [];
  let values = [];
  let labels = [];
  let outline = null;
  let geometry = null;
  svg.addEventListener("click", (event) => {
    const row = event.target.closest?.("[data-row]");
    if (row) onPick(Number(row.dataset.row) + 1);
  });

  function build(entry) {
    svg.replaceChildren();
    const n = entry.out.length;
    const T = entry.src.length;
    const longest = Math.max(...entry.src.map((t) => t.length));
    const rotated = longest * CHAR > CELL - 6;
    const left = Math.max(56, Math.max(...entry.out.map((t) => t.length)) * CHAR + 12);
    const top = rotated ? longest * CHAR * 0.72 + 16 : 24;
    const right = rotated ? Math.max(10, longest * CHAR * 0.72 - CELL / 2 + 8) : 10;
    const barWidth = Math.min(170, Math.max(T * CELL, 110));
    const width = Math.max(left + T * CELL + right, left + barWidth + 16);
    const height = top + n * CELL + 52;
    geometry = { left, top, n, T };
    svg.setAttribute("viewBox", `0 0 ${width.toFixed(1)} ${height.toFixed(1)}`);
    svg.style.maxWidth = `${Math.round(width * 1.2)}px`;
    const defs = svgEl("defs", {}, svg);
    const gradient = svgEl("linearGradient", { id: gradientId, x1: 0, x2: 1, y1: 0, y2: 0 }, defs);
    svgEl("stop", { offset: 0, "stop-color": RED, "stop-opacity": 0 }, gradient);
    svgEl("stop", { offset: 1, "stop-color": RED, "stop-opacity": 1 }, gradient);
    entry.src.forEach((token, k) => {
      const x = left + (k + 0.5) * CELL;
      const attrs = rotated
        ? { x, y: top - 6, transform: `rotate(-45 ${x} ${top - 6})`, "text-anchor": "start" }
        : { x, y: top - 8, "text-anchor": "middle" };
      svgEl("text", { ...attrs, "font-size": FONT, class: "qkv-src" }, svg, token);
    });
    cells = [];
    values = [];
    labels = [];
    entry.out.forEach((token, i) => {
      const g = svgEl("g", { class: "qkv-row", "data-row": i }, svg);
      const y = top + i * CELL;
      // the whole row, label and gaps included, answers a click or a tap (under the label and the cells)
      svgEl("rect", { x: 0, y, width: left + T * CELL, height: CELL, fill: "transparent" }, g);
      labels.push(svgEl("text", { x: left - 8, y: y + CELL / 2 + 4.5, "text-anchor": "end", "font-size": FONT,
        class: "qkv-out" }, g, token));
      const rowCells = [];
      const rowValues = [];
      for (let k = 0; k < T; k++) {
        rowCells.push(svgEl("rect", { x: left + k * CELL, y, width: CELL, height: CELL, fill: RED,
          class: "qkv-cell", "data-row": i, "data-col": k }, g));
        rowValues.push(svgEl("text", { x: left + (k + 0.5) * CELL, y: y + CELL / 2 + 4, "text-anchor": "middle",
          "font-size": 11.5, class: "qkv-value" }, g));
      }
      cells.push(rowCells);
      values.push(rowValues);
    });
    outline = svgEl("rect", { x: left - 1, width: T * CELL + 2, height: CELL + 2, class: "qkv-selected",
      rx: 2 }, svg);
    const barY = top + n * CELL + 18;
    svgEl("text", { x: left - 8, y: barY + 9, "text-anchor": "end", "font-size": 12 }, svg, "weight");
    svgEl("rect", { x: left, y: barY, width: barWidth, height: 12, fill: `url(#${gradientId})`, class: "qkv-cell",
      "stroke-opacity": 0.4 }, svg);
    for (const v of [0, 0.5, 1]) {
      const x = left + v * barWidth;
      svgEl("line", { x1: x, x2: x, y1: barY + 12, y2: barY + 16, stroke: "currentColor" }, svg);
      svgEl("text", { x, y: barY + 29, "text-anchor": "middle", "font-size": 11.5 }, svg, String(v));
    }
  }

  return {
    svg,
    build,
    draw(result) {
      const { top } = geometry;
      result.matrix.forEach((row, i) => {
        const picked = i === result.step - 1;
        row.forEach((w, k) => {
          const cell = cells[i][k];
          cell.setAttribute("fill-opacity", String(w));
          cell.setAttribute("data-weight", String(w));
          const value = values[i][k];
          value.textContent = picked ? w.toFixed(2) : "";
          value.classList.toggle("qkv-on-dark", w >= DARK_TEXT_FROM);
        });
        labels[i].setAttribute("font-weight", picked ? "bold" : "normal");
      });
      outline.setAttribute("y", String(top + (result.step - 1) * CELL - 1));
      svg.setAttribute("aria-label", description(result));
    },
  };
}

let instances = 0;

function render({ model, el: root }) {
  if (!document.getElementById(STYLE_ID)) {
    html("style", { id: STYLE_ID }, document.head, STYLE);
  }
  const id = `qkv-cross-${++instances}-${Math.random().toString(36).slice(2, 8)}`; // unique if loaded twice
  const box = html("div", { class: "qkv-explorer qkv-cross-attention" }, root);
  let message = null;
  let pending = null; // a typed sentence sent to the kernel, not yet in the data
  let seenError = model.get("data")?.error?.count ?? 0;
  const say = (text) => {
    if (message) message.textContent = text;
  };

  if (model.get("typing")) {
    // In JupyterLab the kernel translates what the reader types: the sentence goes to Python, which adds it to data.
    const form = html("form", { class: "qkv-typing" }, box);
    html("label", { for: `${id}-type` }, form, "translate a sentence of your own");
    const input = html("input", { type: "text", id: `${id}-type`, placeholder: "he's home .", autocomplete: "off",
      spellcheck: "false", "data-lm-suppress-shortcuts": "true" }, form);
    html("button", { type: "submit", "data-lm-suppress-shortcuts": "true" }, form, "translate");
    message = html("p", { class: "qkv-message", role: "status" }, box);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const sentence = input.value.trim().split(/\s+/).join(" ");
      if (!sentence) {
        say('Type an English sentence first, such as "he\'s home ."');
        return;
      }
      if (findSentence(model.get("data"), sentence) < 0) {
        pending = sentence;
        say(`Translating "${sentence}" ...`);
      } else {
        say("");
      }
      model.set("sentence", sentence);
      model.save_changes();
    });
  }

  const body = html("div", {}, box);
  let cleanup = () => {};
  let shown = 0; // the sentence drawn, kept while a typed one is being translated

  function build() {
    cleanup();
    body.replaceChildren();
    const data = model.get("data");
    const problems = validate(data);
    if (problems.length) {
      html("p", { class: "qkv-summary", "aria-live": "polite" }, body,
        `This explorer's data did not pass its check: ${problems.join("; ")}.`);
      cleanup = () => {};
      return false;
    }
    shown = Math.min(shown, data.sentences.length - 1);
    const controls = html("div", { class: "qkv-controls" }, body);
    const sControl = html("div", { class: "qkv-control" }, controls);
    html("label", { for: `${id}-sentence` }, sControl, "sentence");
    const menu = html("select", { id: `${id}-sentence` }, sControl);
    data.sentences.forEach((entry, i) => html("option", { value: String(i) }, menu, entry.sentence));
    const slider = (key, text, max) => {
      const control = html("div", { class: "qkv-control" }, controls);
      html("label", { for: `${id}-${key}` }, control, text);
      const input = html("input", { type: "range", id: `${id}-${key}`, min: 1, max, step: 1 }, control);
      const readout = html("output", { for: `${id}-${key}` }, control);
      return { input, readout };
    };
    const block = slider("block", "block", data.blocks);
    const head = slider("head", "head", data.heads);
    const step = slider("step", "French token", 1);
    const caption = html("p", { class: "qkv-caption" }, body);
    const map = heatmap(body, `${id}-scale`, (row) => set("step", row));
    const text = html("p", { class: "qkv-summary", "aria-live": "polite" }, body);
    // JupyterLab's shortcuts (arrows select cells) would take the keys the controls need; Lumino leaves alone the
    // keys pressed on an element with this attribute.
    for (const control of controls.querySelectorAll("input, select")) {
      control.setAttribute("data-lm-suppress-shortcuts", "true");
    }
    let built = -1;

    function set(key, value) {
      say("");
      model.set(key, value);
      model.save_changes();
    }

    function update() {
      const result = explore(data, model.get("sentence"), model.get("block"), model.get("head"),
        model.get("step"), shown);
      shown = result.index;
      if (built !== result.index) {
        map.build(data.sentences[result.index]);
        step.input.max = String(result.out.length);
        const entry = data.sentences[result.index];
        const notes = [];
        if (entry.unknown.length) {
          notes.push(`not in the model's English vocabulary, so read as <unk>: ${entry.unknown.join(", ")}`);
        }
        if (entry.cut) notes.push(`cut to the model's ${data.num_steps} source positions`);
        caption.textContent =
          `"${entry.sentence}" → "${entry.out.join(" ")}". Rows: the French tokens emitted, in order; ` +
          `columns: the English source tokens. Pick a row with the slider or a click.` +
          (notes.length ? ` Note: ${notes.join("; ")}.` : "");
        built = result.index;
      }
      menu.value = String(result.index);
      for (const [control, value, max, what] of [[block, result.block, result.blocks, "block"],
        [head, result.head, result.heads, "head"]]) {
        control.input.value = String(value);
        control.input.setAttribute("aria-valuetext", `${what} ${value} of ${max}`);
        control.readout.textContent = `${value} of ${max}`;
      }
      step.input.value = String(result.step);
      step.input.setAttribute("aria-valuetext", `token ${result.step} of ${result.out.length}, "${result.token}"`);
      step.readout.textContent = `${result.step}: ${result.token}`;
      map.draw(result);
      text.textContent = summary(result);
    }

    menu.addEventListener("change", () => set("sentence", data.sentences[Number(menu.value)].sentence));
    block.input.addEventListener("input", () => set("block", Number(block.input.value)));
    head.input.addEventListener("input", () => set("head", Number(head.input.value)));
    step.input.addEventListener("input", () => set("step", Number(step.input.value)));
    const events = ["change:sentence", "change:block", "change:head", "change:step"];
    for (const event of events) model.on(event, update);
    update();
    cleanup = () => {
      for (const event of events) model.off(event, update);
    };
    return true;
  }

  function rebuild() {
    build();
    const data = model.get("data");
    const error = data?.error;
    if (error && error.count !== seenError) {
      seenError = error.count;
      pending = null;
      say(error.message);
    } else if (pending !== null && findSentence(data, pending) >= 0) {
      say(`Added "${pending}" to the menu of sentences.`);
      pending = null;
    }
  }

  if (!build()) throw new Error(`cross_attention explorer: ${validate(model.get("data")).join("; ")}`);
  model.on("change:data", rebuild);
  return () => {
    cleanup();
    model.off("change:data", rebuild);
  };
}

export default { render };
