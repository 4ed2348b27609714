// Runs the live explorers of a page of the built book (qkv.widgets._live). Inlined after each explorer's
// container as the body of a <script type="module">, so the page needs no server and no other file: it works
// from a folder (file://), where Chromium refuses to import modules from files, as well as from a static host.
//
// Each container (div.qkv-live[data-qkv-pending]) holds two JSON scripts: the explorer's state (its data and the
// first values of its settings) and the text of its module (lib/qkv/widgets/js/<name>.js). The module is imported
// from a blob: URL and rendered exactly as anywidget renders it in JupyterLab, with a model that keeps the state in
// the page. Once it has drawn, the container is shown and the cell's static figure hidden on screen (print keeps
// the figure and drops the explorer). If anything fails, the static figure stays and the error goes to the console;
// so it does when the state's text does not match the CRC-32 the build wrote beside it (a page cut or edited since).

const STYLE_ID = "qkv-live-style";
const STYLE = `
@media screen { img.qkv-static-replaced { display: none !important; } }
@media print { .qkv-live { display: none !important; } }
`;

// The slice of anywidget's model (a Backbone model in JupyterLab) that the explorers use.
function pageModel(state) {
  const values = { ...state };
  const listeners = new Map();
  const emit = (event, value) => {
    for (const callback of [...(listeners.get(event) || [])]) callback(value);
  };
  return {
    get: (key) => values[key],
    set(key, value) {
      if (Object.is(values[key], value)) return;
      values[key] = value;
      emit(`change:${key}`, value);
      emit("change", key);
    },
    save_changes() {},
    send() {},
    on(event, callback) {
      for (const name of event.split(/\s+/)) {
        if (!listeners.has(name)) listeners.set(name, new Set());
        listeners.get(name).add(callback);
      }
    },
    off(event, callback) {
      for (const name of event ? event.split(/\s+/) : [...listeners.keys()]) {
        if (callback) listeners.get(name)?.delete(callback);
        else listeners.delete(name);
      }
    },
  };
}

// The images that the container's cell drew before it: the static figure it replaces.
function staticFigures(container) {
  const cell = container.closest(".cell") || container.parentElement;
  return [...cell.querySelectorAll("img")].filter(
    (img) => !container.contains(img) && img.compareDocumentPosition(container) & Node.DOCUMENT_POSITION_FOLLOWING,
  );
}

// CRC-32 (IEEE 802.3, as Python's zlib.crc32) of a string of ASCII characters, as 8 hex digits.
let crcTable = null;
export function crc32(text) {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (let i = 0; i < text.length; i++) crc = crcTable[(crc ^ text.charCodeAt(i)) & 0xff] ^ (crc >>> 8);
  return ((crc ^ 0xffffffff) >>> 0).toString(16).padStart(8, "0");
}

// The explorer's state, once its text matches the checksum the build wrote beside it.
function readState(container) {
  const script = container.querySelector('script[data-qkv="state"]');
  const text = script.textContent;
  const expected = script.dataset.qkvCrc32;
  const found = crc32(text);
  if (expected !== found) {
    throw new Error(`its data do not match their checksum (CRC-32 ${found}, the build wrote ${expected}): ` +
      "the page was changed or cut after it was built; build the book again");
  }
  return JSON.parse(text);
}

async function mount(container) {
  container.removeAttribute("data-qkv-pending");
  let url = null;
  try {
    const state = readState(container);
    const source = JSON.parse(container.querySelector('script[data-qkv="module"]').textContent);
    url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
    const module = await import(url);
    const el = document.createElement("div");
    container.append(el);
    container.hidden = false;
    await module.default.render({ model: pageModel(state), el });
    for (const img of staticFigures(container)) img.classList.add("qkv-static-replaced");
    container.dataset.qkvReady = "";
  } catch (error) {
    container.hidden = true;
    console.error(`qkv explorer ${container.dataset.qkvLive} did not start; the static figure stays:`, error);
  } finally {
    if (url) URL.revokeObjectURL(url);
  }
}

if (typeof document !== "undefined") { // (not in Node, where the tests import crc32)
  if (!document.getElementById(STYLE_ID)) {
    const style = document.createElement("style");
    style.id = STYLE_ID;
    style.textContent = STYLE;
    document.head.append(style);
  }
  for (const container of document.querySelectorAll(".qkv-live[data-qkv-pending]")) mount(container);
}
