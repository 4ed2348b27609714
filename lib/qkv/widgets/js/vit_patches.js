// Patch explorer, D2L 11.8 "Transformers for Vision": the patch size sets the length of the sequence a ViT reads,
// and the cost of its attention beside that of its projections.
//
// One module for JupyterLab (anywidget) and the book (book_host.js); see qkv/widgets/_live.py. State:
//   data        {image: [[grey levels in [0, 1]] per row] (Fashion-MNIST's test image 0, 28 x 28),
//               image_sizes: [the image sides on the slider], num_hiddens: N, num_heads: H}, made by
//               qkv.widgets.vision_transformer.patch_explorer_data;
//   img_size    the side S of the resized image (one of data.image_sizes);
//   patch_size  the side p of a patch (a divisor of S, at least 2).
// The page resizes the image in float64 as torch.nn.functional.interpolate(mode="bilinear", align_corners=False)
// does and counts what qkv.widgets.vision_transformer.patch_costs counts. Moving the image size moves the patch
// size to the divisor nearest S / 4, as the Python explorer did.

const NS = "http://www.w3.org/2000/svg";
const BLUE = "#1f77b4"; // the grid, as in the static figure (matplotlib's C0)
const RED = "#d62728"; // the patches' numbers (C3)
const MAX_NUMBERED = 64; // the static figure numbers the patches up to an 8 x 8 grid
const STYLE_ID = "qkv-explorer-style-vit-patches";
const STYLE = `
.qkv-vit-patches { font: inherit; margin: 0.5em 0 1em; }
.qkv-vit-patches .qkv-controls { display: flex; flex-wrap: wrap; gap: 0.4em 1.5em; align-items: center; }
.qkv-vit-patches .qkv-control { display: flex; flex-wrap: wrap; align-items: center; gap: 0.2em 0.5em; }
.qkv-vit-patches label, .qkv-vit-patches output { white-space: nowrap; }
.qkv-vit-patches input[type=range] { width: 11em; max-width: 55vw; accent-color: ${BLUE}; }
.qkv-vit-patches input:focus-visible { outline: 3px solid #e8710a; outline-offset: 2px; }
.qkv-vit-patches output { font-variant-numeric: tabular-nums; min-width: 3.5em; }
.qkv-vit-patches .qkv-panels { display: flex; flex-wrap: wrap; gap: 0.8em 1.5em; align-items: flex-start;
  margin-top: 0.5em; }
.qkv-vit-patches .qkv-picture { position: relative; flex: 0 1 300px; min-width: 0; max-width: 300px;
  width: 100%; aspect-ratio: 1 / 1; }
.qkv-vit-patches canvas, .qkv-vit-patches svg { position: absolute; inset: 0; width: 100%; height: 100%; }
.qkv-vit-patches canvas { image-rendering: pixelated; }
.qkv-vit-patches svg { overflow: visible; }
.qkv-vit-patches svg line { stroke: ${BLUE}; vector-effect: non-scaling-stroke; }
.qkv-vit-patches svg .qkv-frame { fill: none; stroke: currentColor; stroke-opacity: 0.55;
  vector-effect: non-scaling-stroke; }
.qkv-vit-patches svg text { fill: ${RED}; stroke: #fff; paint-order: stroke; font-family: inherit; }
.qkv-vit-patches table { flex: 1 1 240px; max-width: 26em; border-collapse: collapse;
  font-variant-numeric: tabular-nums; }
.qkv-vit-patches caption { text-align: left; font-weight: 600; padding-bottom: 0.3em; color: inherit; }
.qkv-vit-patches th, .qkv-vit-patches td { padding: 0.2em 0.4em 0.2em 0; vertical-align: top;
  border-bottom: 1px solid color-mix(in srgb, currentColor 15%, transparent); }
.qkv-vit-patches th { text-align: left; font-weight: normal; }
.qkv-vit-patches th small { display: block; opacity: 0.8; }
.qkv-vit-patches td { text-align: right; white-space: nowrap; }
.qkv-vit-patches .qkv-summary { margin: 0.5em 0 0; font-variant-numeric: tabular-nums; }
`;

// ---- compute (float64), tested against torch and qkv -----------------------------------------------------------

/** Source indices and weights along one axis of a bilinear resize from `inSize` to `outSize` samples, as torch's
 * upsample_bilinear2d computes them with align_corners=False: output i reads input (i + 1/2) in / out - 1/2,
 * clamped at 0, between its two neighbours (the last one repeated at the far edge). */
export function linearWeights(inSize, outSize) {
  const scale = inSize / outSize;
  return Array.from({ length: outSize }, (_, i) => {
    if (inSize === outSize) return [i, i, 1, 0];
    const src = Math.max(scale * (i + 0.5) - 0.5, 0);
    const i0 = Math.min(Math.floor(src), inSize - 1);
    const i1 = i0 + (i0 < inSize - 1 ? 1 : 0);
    const l1 = Math.min(Math.max(src - i0, 0), 1);
    return [i0, i1, 1 - l1, l1];
  });
}

/** The image (rows of grey levels, h x w) resized to size x size by bilinear interpolation (align_corners=False,
 * no antialiasing): an array of `size` rows, each a Float64Array. */
export function resize(image, size) {
  const rows = linearWeights(image.length, size);
  const cols = linearWeights(image[0].length, size);
  return rows.map(([r0, r1, a0, a1]) => {
    const top = image[r0];
    const bottom = image[r1];
    const row = new Float64Array(size);
    for (let j = 0; j < size; j++) {
      const [c0, c1, b0, b1] = cols[j];
      row[j] = a0 * (b0 * top[c0] + b1 * top[c1]) + a1 * (b0 * bottom[c0] + b1 * bottom[c1]);
    }
    return row;
  });
}

/** The patch sides that tile an n x n image: the divisors of n that are at least 2, in increasing order. */
export function divisors(n) {
  const found = [];
  for (let d = 2; d <= n; d++) if (n % d === 0) found.push(d);
  return found;
}

/** The divisor of `size` (at least 2) nearest to `target`; the smaller of two equally near. */
export function nearestDivisor(size, target) {
  return divisors(size).reduce((best, d) => (Math.abs(d - target) < Math.abs(best - target) ? d : best));
}

/** The patch size that follows a new image size: the divisor nearest a quarter of it (a 4 x 4 grid or close). */
export function followingPatch(size) {
  return nearestDivisor(size, size / 4);
}

/** What one encoder block pays for an S x S image in p x p patches, as qkv's patch_costs counts it: P = (S / p)^2
 * patches, T = P + 1 tokens (with <cls>), H T^2 scores, 2 T^2 N multiply-adds for attention's two products and
 * 4 T N^2 for its four projections. Every count is an integer well below 2^53, so exact in float64. */
export function patchCosts(imgSize, patchSize, numHiddens = 64, numHeads = 4) {
  if (imgSize % patchSize !== 0) throw new Error(`the patch size ${patchSize} must divide ${imgSize}`);
  const patches = (imgSize / patchSize) ** 2;
  const tokens = patches + 1;
  return {
    patches,
    tokens,
    scores: numHeads * tokens * tokens,
    attention_macs: 2 * tokens * tokens * numHiddens,
    projection_macs: 4 * tokens * numHiddens * numHiddens,
  };
}

function nearest(values, target) {
  return values.reduce((best, v) => (Math.abs(v - target) < Math.abs(best - target) ? v : best));
}

/** Everything the explorer shows at one setting (the image size snapped to the slider's, the patch size to a
 * divisor of it), without the resized image. */
export function explore(data, imgSize, patchSize) {
  const size = nearest(data.image_sizes, imgSize);
  const patch = divisors(size).includes(patchSize) ? patchSize : nearestDivisor(size, patchSize);
  const costs = patchCosts(size, patch, data.num_hiddens, data.num_heads);
  return {
    size,
    patch,
    grid: size / patch,
    ...costs,
    ratio: costs.attention_macs / costs.projection_macs,
    numbered: costs.patches <= MAX_NUMBERED,
  };
}

/** 1234567 -> "1,234,567". */
export function grouped(n) {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

export function summary(result) {
  const patches = result.patches === 1 ? "1 patch" : `${grouped(result.patches)} patches`;
  return (
    `${result.size} px image in ${result.patch} px patches: ${patches}, a sequence of ${grouped(result.tokens)} ` +
    `tokens; attention's products cost ${result.ratio.toFixed(2)} times the projections'.`
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

/** The resized image as opaque grey pixels, dark for high values (matplotlib's "Greys", as the static figure). */
function pixels(resized) {
  const size = resized.length;
  const rgba = new Uint8ClampedArray(size * size * 4);
  resized.forEach((row, i) => {
    row.forEach((v, j) => {
      const grey = Math.round(255 * (1 - Math.min(Math.max(v, 0), 1)));
      rgba.set([grey, grey, grey, 255], (i * size + j) * 4);
    });
  });
  return new ImageData(rgba, size, size);
}

function picturePanel(parent, data) {
  const box = html("div", { class: "qkv-picture" }, parent);
  const canvas = html("canvas", { "aria-hidden": "true" }, box);
  const svg = svgEl("svg", { role: "img", preserveAspectRatio: "none" }, box);
  // The image at every size of the slider, resized once per data (a few milliseconds), so that a move only draws.
  const cache = new Map(data.image_sizes.map((S) => [S, pixels(resize(data.image, S))]));
  const source = `${data.image.length} by ${data.image[0].length}`;
  return {
    draw(result) {
      const S = result.size;
      if (canvas.width !== S || canvas.height !== S) {
        canvas.width = S;
        canvas.height = S;
      }
      canvas.dataset.size = String(S);
      canvas.getContext("2d").putImageData(cache.get(S), 0, 0);
      svg.setAttribute("viewBox", `0 0 ${S} ${S}`);
      const g = result.grid;
      const p = result.patch;
      const dense = g > 56 ? 2 : g > 16 ? 1 : 0; // thinner, fainter lines as they crowd the image
      const lines = svgEl("g", { class: "qkv-grid", "stroke-width": [1.2, 0.7, 0.5][dense],
        "stroke-opacity": [0.9, 0.65, 0.5][dense] });
      for (let k = 1; k < g; k++) {
        svgEl("line", { class: "qkv-row", x1: 0, x2: S, y1: k * p, y2: k * p }, lines);
        svgEl("line", { class: "qkv-column", x1: k * p, x2: k * p, y1: 0, y2: S }, lines);
      }
      const children = [svgEl("rect", { class: "qkv-frame", x: 0, y: 0, width: S, height: S }), lines];
      if (result.numbered) {
        const size = Math.min(0.42 * p, 0.065 * S);
        const numbers = svgEl("g", { class: "qkv-numbers", "font-size": size.toFixed(2),
          "stroke-width": (size * 0.18).toFixed(2), "text-anchor": "middle", "dominant-baseline": "central" });
        for (let i = 0; i < g; i++) {
          for (let j = 0; j < g; j++) {
            svgEl("text", { x: (j + 0.5) * p, y: (i + 0.5) * p }, numbers, String(i * g + j + 1));
          }
        }
        children.push(numbers);
      }
      svg.replaceChildren(...children);
      const numbered = result.numbered ? ", numbered row by row" : "";
      svg.setAttribute(
        "aria-label",
        `The ${source} pixel image resized to ${S} by ${S} pixels and cut by a ${g} by ${g} ` +
          `grid into ${grouped(result.patches)} patch${result.patches === 1 ? "" : "es"} of ${p} by ${p} ` +
          `pixels${numbered}.`,
      );
    },
  };
}

function numbersTable(parent, data) {
  const table = html("table", {}, parent);
  const caption = html("caption", {}, table);
  const body = html("tbody", {}, table);
  const N = data.num_hiddens;
  const H = data.num_heads;
  const rows = [
    ["patches", "P = (S / p)²", (r) => grouped(r.patches)],
    ["tokens, with <cls>", "T = P + 1", (r) => grouped(r.tokens)],
    ["attention scores", `H T², H = ${H} heads`, (r) => grouped(r.scores)],
    ["multiply-adds of attention's two products", `2 T² N, N = ${N}`, (r) => grouped(r.attention_macs)],
    ["multiply-adds of the four projections", "4 T N²", (r) => grouped(r.projection_macs)],
    ["attention / projections", "T / (2N)", (r) => r.ratio.toFixed(2)],
  ].map(([name, formula, value]) => {
    const tr = html("tr", {}, body);
    const th = html("th", { scope: "row" }, tr, name);
    html("small", {}, th, formula);
    return [html("td", {}, tr), value];
  });
  return {
    draw(result) {
      caption.textContent = `One encoder block, ${result.size} px image, ${result.patch} px patches`;
      for (const [cell, value] of rows) cell.textContent = value(result);
    },
  };
}

let instances = 0;

function render({ model, el: root }) {
  if (!document.getElementById(STYLE_ID)) {
    html("style", { id: STYLE_ID }, document.head, STYLE);
  }
  const id = `qkv-vit-${++instances}-${Math.random().toString(36).slice(2, 8)}`; // unique if loaded twice
  const box = html("div", { class: "qkv-explorer qkv-vit-patches" }, root);
  let cleanup = () => {};

  function build() {
    cleanup();
    box.replaceChildren();
    const data = model.get("data");
    const controls = html("div", { class: "qkv-controls" }, box);
    const slider = (key, text) => {
      const control = html("div", { class: "qkv-control" }, controls);
      html("label", { for: `${id}-${key}` }, control, text);
      const input = html("input", { type: "range", id: `${id}-${key}`, min: 0, step: 1 }, control);
      // JupyterLab's shortcuts (arrows select cells) would take the keys the sliders need; Lumino leaves alone
      // the keys pressed on an element with this attribute.
      input.setAttribute("data-lm-suppress-shortcuts", "true");
      return [input, html("output", { for: `${id}-${key}` }, control)];
    };
    const [sizeSlider, sizeOut] = slider("size", "image size");
    const [patchSlider, patchOut] = slider("patch", "patch size");
    sizeSlider.max = String(data.image_sizes.length - 1);
    const panels = html("div", { class: "qkv-panels" }, box);
    const picture = picturePanel(panels, data);
    const table = numbersTable(panels, data);
    const text = html("p", { class: "qkv-summary", "aria-live": "polite" }, box);
    let moving = false; // while a slider sets both settings, draw once, after the second

    function update() {
      if (moving) return;
      const result = explore(data, model.get("img_size"), model.get("patch_size"));
      const options = divisors(result.size);
      sizeSlider.value = String(data.image_sizes.indexOf(result.size));
      sizeSlider.setAttribute("aria-valuetext", `${result.size} pixels`);
      sizeOut.textContent = `${result.size} px`;
      patchSlider.max = String(options.length - 1);
      patchSlider.value = String(options.indexOf(result.patch));
      patchSlider.setAttribute("aria-valuetext", `${result.patch} pixels, ${grouped(result.patches)} ` +
        `patch${result.patches === 1 ? "" : "es"}`);
      patchOut.textContent = `${result.patch} px`;
      picture.draw(result);
      table.draw(result);
      text.textContent = summary(result);
    }
    const onSize = () => {
      const size = data.image_sizes[Number(sizeSlider.value)];
      if (size === model.get("img_size")) return;
      moving = true;
      try {
        model.set("img_size", size);
        model.set("patch_size", followingPatch(size));
      } finally {
        moving = false;
      }
      model.save_changes();
      update();
    };
    const onPatch = () => {
      const size = explore(data, model.get("img_size"), model.get("patch_size")).size;
      model.set("patch_size", divisors(size)[Number(patchSlider.value)]);
      model.save_changes();
    };
    sizeSlider.addEventListener("input", onSize);
    patchSlider.addEventListener("input", onPatch);
    model.on("change:img_size", update);
    model.on("change:patch_size", update);
    update();
    cleanup = () => {
      model.off("change:img_size", update);
      model.off("change:patch_size", update);
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
