// The page (docs/web.md): controls -> the command line the CLI would take -> the engine in
// WebAssembly (worker.js) -> its JSON -> tables and charts. The page computes nothing of its
// own: every figure shown is a field of the JSON that `ridgeline ... --json` prints.
'use strict';
/* global RL, createRidgeline */

// ---------------------------------------------------------------------------------------
// The engine: two workers, one for the quick commands (infer, train: each control change runs
// at once, the latest request wins) and one for searches and simulations (a new request
// replaces a running one: the worker is ended and started again). Opened from a file, where
// browsers load neither workers nor WebAssembly files, the module runs on the page's thread
// from ridgeline-inline.js (the same module with the .wasm inside).

class Engine {
  constructor(name) {
    this.name = name;
    this.seq = 0;
    this.queue = [];  // jobs waiting, in order; a newer job of the same tag replaces one waiting
    this.busy = null;
    this.start();
  }
  start() {
    this.ready = new Promise((resolve, reject) => {
      if (location.protocol === 'file:') {
        this.worker = mainThreadWorker();
      } else {
        this.worker = new Worker('worker.js');
      }
      this.worker.onmessage = (e) => this.message(e.data, resolve, reject);
    });
  }
  message(m, resolve, reject) {
    if (m.type === 'ready') return resolve();
    if (m.type === 'failed') return reject(new Error(m.error));
    if (!this.busy || m.id !== this.busy.id) return;
    if (m.type === 'progress') return this.busy.onProgress?.(m.fraction);
    const job = this.busy;
    this.busy = null;
    job.resolve({ ...m.result, ms: m.ms });
    this.next();
  }
  // Runs `args`; a job of the same `tag` still waiting is dropped ({superseded: true});
  // `replace`: one of that tag running is ended too (the worker is started again).
  run(args, { files = {}, onProgress = null, replace = false, tag = null } = {}) {
    return new Promise((resolve, reject) => {
      const job = { id: ++this.seq, args, files, onProgress, resolve, reject, tag };
      if (this.busy && replace && this.busy.tag === tag) {
        this.busy.resolve({ superseded: true });
        this.busy = null;
        this.worker.terminate();
        this.start();
      }
      if (tag !== null) {
        for (const old of this.queue.filter((j) => j.tag === tag)) old.resolve({ superseded: true });
        this.queue = this.queue.filter((j) => j.tag !== tag);
      }
      this.queue.push(job);
      if (!this.busy) this.next();
    });
  }
  async next() {
    if (this.queue.length === 0) return;
    const job = this.queue.shift();
    this.busy = job;
    try {
      await this.ready;
    } catch (e) {
      this.busy = null;
      return job.resolve({ status: 1, stdout: '', stderr: `the WebAssembly module did not load: ${e.message}` });
    }
    if (this.busy !== job) return;
    this.worker.postMessage({ id: job.id, args: job.args, files: job.files });
  }
}

// worker.js's protocol on the page's own thread (pages opened from file://).
function mainThreadWorker() {
  const w = { onmessage: null, terminate() {} };
  const post = (data) => setTimeout(() => w.onmessage?.({ data }), 0);
  let current = 0;
  const mod = createRidgeline({
    wasmBinary: Uint8Array.from(atob(window.RIDGELINE_WASM_BASE64 || ''), (c) => c.charCodeAt(0)),
    onProgress: (fraction) => post({ type: 'progress', id: current, fraction }),
    print: () => {},
    printErr: () => {},
  });
  mod.then(() => post({ type: 'ready' }), (e) => post({ type: 'failed', error: String(e) }));
  w.postMessage = async ({ id, args, files }) => {
    const M = await mod;
    current = id;
    for (const [path, text] of Object.entries(files || {})) {
      M.FS.mkdirTree(path.slice(0, path.lastIndexOf('/')));
      M.FS.writeFile(path, text);
    }
    const t0 = performance.now();
    const result = JSON.parse(M.ccall('ridgeline_web_run', 'string', ['string'], [JSON.stringify(args)]));
    post({ type: 'result', id, result, ms: performance.now() - t0 });
  };
  return w;
}

const quick = new Engine('quick');
let long = null; // started on first use

// ---------------------------------------------------------------------------------------
// Controls: each tab's fields, their flags and defaults. A field equal to its default is left
// out of the command line (the CLI's default then applies, and is the same value).

const DTYPES = ['fp32', 'bf16', 'fp16', 'fp8', 'int8', 'int4', 'fp4'];
// The engines' presets, each release range as `serve --engine` takes it (its help lists them).
const ENGINES = ['vllm', 'vllm@0.13', 'vllm@0.10', 'vllm@0.8', 'vllm@0.6', 'sglang', 'sglang@0.3', 'trtllm', 'trtllm@1.1', 'trtllm@0.15', 'static'];
const ENGINE_NAMES = {
  vllm: 'vLLM 0.14+', 'vllm@0.13': 'vLLM 0.11-0.13', 'vllm@0.10': 'vLLM 0.9-0.10', 'vllm@0.8': 'vLLM 0.8', 'vllm@0.6': 'vLLM 0.6 (V0)',
  sglang: 'SGLang 0.4+', 'sglang@0.3': 'SGLang 0.3', trtllm: 'TensorRT-LLM 1.2+ (PyTorch)', 'trtllm@1.1': 'TensorRT-LLM 0.19-1.1 (PyTorch, no PDL)',
  'trtllm@0.15': 'TensorRT-LLM 0.9-0.15 (engines)',
  static: 'static batches',
};
const POW2 = (max) => Array.from({ length: Math.log2(max) + 1 }, (_, i) => String(2 ** i));

const TABS = {
  infer: {
    title: 'Inference',
    fields: [
      { key: 'model', flag: '--model', label: 'Model', type: 'model', def: 'llama-3.1-8b' },
      { key: 'hw', flag: '--hw', label: 'Chips (up to 3, side by side)', type: 'chips', def: 'h100-sxm', max: 3 },
      // The CLI's TP is --chips / --ep when not given: given whenever EP is.
      { key: 'tp', flag: '--tp', label: 'Tensor parallel (TP)', type: 'select', options: POW2(64), def: '1', always: (s) => s.ep !== '1' },
      { key: 'ep', flag: '--ep', label: 'Expert parallel (EP)', type: 'select', options: POW2(64), def: '1' },
      { key: 'weight_dtype', flag: '--weight-dtype', label: 'Weights dtype', type: 'select', options: ['', ...DTYPES], names: { '': 'checkpoint' }, def: '' },
      { key: 'kv_dtype', flag: '--kv-dtype', label: 'KV cache dtype', type: 'select', options: ['', ...DTYPES], names: { '': 'as activations' }, def: '' },
      { key: 'act_dtype', flag: '--act-dtype', label: 'Activations dtype', type: 'select', options: ['bf16', 'fp16', 'fp32'], def: 'bf16' },
      { key: 'batch', flag: '--batch', label: 'Batch (sequences)', type: 'number', min: 1, def: '1' },
      { key: 'prompt', flag: '--prompt', label: 'Prompt tokens', type: 'number', min: 1, def: '128' },
      { key: 'gen', flag: '--gen', label: 'Output tokens', type: 'number', min: 1, def: '128' },
    ],
    args: (s) => ['infer', ...flags('infer', s), '--json'],
    engine: 'quick',
  },
  serve: {
    title: 'Serving',
    fields: [
      { key: 'model', flag: '--model', label: 'Model', type: 'model', def: 'llama-3.1-8b' },
      { key: 'hw', flag: '--hw', label: 'Chip', type: 'chip', def: 'h100-sxm' },
      { key: 'tp', flag: '--tp', label: 'Tensor parallel (TP)', type: 'select', options: POW2(64), def: '1', always: true },
      { key: 'engine', flag: '--engine', label: 'Engine', type: 'select', options: ENGINES, names: ENGINE_NAMES, def: 'vllm' },
      { key: 'load', label: 'Load', type: 'select', options: ['qps', 'concurrency'], names: { qps: 'rate (requests/s)', concurrency: 'users (closed loop)' }, def: 'qps', noflag: true },
      { key: 'rate', label: 'Requests/s or users', type: 'number', min: 0, step: 'any', def: '5', noflag: true },
      { key: 'prompt', flag: '--prompt', label: 'Prompt tokens (N or uniform:A,B …)', type: 'text', def: '1024' },
      { key: 'gen', flag: '--gen', label: 'Output tokens (N or a distribution)', type: 'text', def: '256' },
      { key: 'requests', flag: '--requests', label: 'Requests', type: 'number', min: 1, def: '1000' },
      { key: 'max_num_seqs', flag: '--max-num-seqs', label: 'Max running requests', type: 'number', min: 1, def: '', placeholder: 'engine default' },
      { key: 'max_batched_tokens', flag: '--max-batched-tokens', label: 'Max tokens per step', type: 'number', min: 1, def: '', placeholder: 'engine default' },
      { key: 'ttft', label: 'SLO: TTFT p99', type: 'text', def: '', placeholder: 'e.g. 1s', noflag: true },
      { key: 'tpot', label: 'SLO: TPOT p99', type: 'text', def: '', placeholder: 'e.g. 50ms', noflag: true },
    ],
    args: (s) => ['serve', ...flags('serve', s), s.load === 'concurrency' ? '--concurrency' : '--qps', s.rate, ...slo(s), '--json'],
    engine: 'long',
  },
  capacity: {
    title: 'Capacity',
    fields: [
      { key: 'model', flag: '--model', label: 'Model', type: 'model', def: 'llama-3.1-8b' },
      { key: 'hw', flag: '--hw', label: 'Chips to consider (up to 3)', type: 'chips', def: 'h100-sxm,a100-80gb', max: 3, always: true },
      { key: 'qps', flag: '--qps', label: 'Rate (requests/s)', type: 'number', min: 0, step: 'any', def: '5', always: true },
      { key: 'prompt', flag: '--prompt', label: 'Prompt tokens', type: 'text', def: '1024' },
      { key: 'gen', flag: '--gen', label: 'Output tokens', type: 'text', def: '256' },
      { key: 'requests', flag: '--requests', label: 'Requests per simulation', type: 'number', min: 1, def: '200', always: true },
      { key: 'ttft', label: 'SLO: TTFT p99', type: 'text', def: '1s', noflag: true },
      { key: 'tpot', label: 'SLO: TPOT p99', type: 'text', def: '50ms', noflag: true },
      { key: 'margin', flag: '--margin', label: 'Headroom', type: 'select', options: ['', 'band', '10%', '20%'],
        names: { '': 'none', band: "each class's (or its pool's) measured error" }, def: '' },
      { key: 'max_gpus', flag: '--max-gpus', label: 'Largest fleet (GPUs)', type: 'number', min: 1, def: '64', always: true },
      { key: 'top', flag: '--top', label: 'Deployments listed', type: 'number', min: 1, def: '50', always: true },
    ],
    args: (s) => ['search', 'serve', ...flags('capacity', s), ...slo(s), '--json'],
    engine: 'long',
  },
  train: {
    title: 'Training',
    fields: [
      { key: 'model', flag: '--model', label: 'Model', type: 'model', def: 'llama-3.1-8b' },
      { key: 'hw', flag: '--hw', label: 'Chip', type: 'chip', def: 'h100-sxm' },
      { key: 'gpus', flag: '--gpus', label: 'GPUs', type: 'number', min: 1, def: '8', always: true },
      { key: 'tp', flag: '--tp', label: 'Tensor parallel (TP)', type: 'select', options: POW2(64), def: '1' },
      { key: 'pp', flag: '--pp', label: 'Pipeline stages (PP)', type: 'select', options: POW2(64), def: '1' },
      { key: 'micro_batch', flag: '--micro-batch', label: 'Micro-batch (sequences)', type: 'number', min: 1, def: '1' },
      { key: 'global_batch', flag: '--global-batch', label: 'Global batch (sequences)', type: 'number', min: 1, def: '64', always: true },
      { key: 'seq', flag: '--seq', label: 'Sequence length', type: 'number', min: 1, def: '2048' },
      { key: 'zero', flag: '--zero', label: 'ZeRO stage', type: 'select', options: ['0', '1', '2', '3'], def: '0' },
      { key: 'recompute', flag: '--recompute', label: 'Recomputation', type: 'select', options: ['none', 'selective', 'full', 'auto'], def: 'none' },
      { key: 'dtype', flag: '--dtype', label: 'GEMM dtype', type: 'select', options: ['bf16', 'fp8'], def: 'bf16' },
    ],
    args: (s) => ['train', ...flags('train', s), '--json'],
    search: (s) => ['search', 'train', ...pick('train', s, ['model', 'hw', 'gpus', 'global_batch', 'seq', 'dtype']), '--json'],
    engine: 'quick',
  },
};

const CUSTOM_PATH = '/work/config.json';
function modelArg(v) { return v === 'custom' ? CUSTOM_PATH : v; }
// `always`: the page's default is not the CLI's (or, a function of the state, not always).
function fieldArgs(f, v, s) {
  if (f.noflag) return [];
  if (v === '' || v === undefined) return [];
  const always = typeof f.always === 'function' ? f.always(s) : f.always;
  if (v === f.def && !always) return [];
  return [f.flag, f.type === 'model' ? modelArg(v) : v];
}
function flags(tab, s) { return TABS[tab].fields.flatMap((f) => fieldArgs(f, s[f.key], s)); }
function pick(tab, s, keys) { return TABS[tab].fields.filter((f) => keys.includes(f.key)).flatMap((f) => fieldArgs({ ...f, always: true }, s[f.key], s)); }
function slo(s) {
  const t = [];
  if (s.ttft) t.push(`ttft_p99=${s.ttft}`);
  if (s.tpot) t.push(`tpot_p99=${s.tpot}`);
  return t.length ? ['--slo', t.join(',')] : [];
}
function files(s) { return s.model === 'custom' && s.config ? { [CUSTOM_PATH]: s.config } : {}; }
function shellQuote(a) { return /^[A-Za-z0-9_.,:=@%+/-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`; }
function commandLine(args, s) {
  const text = 'ridgeline ' + args.map((a) => (a === CUSTOM_PATH ? 'config.json' : shellQuote(a))).join(' ');
  return s.model === 'custom' ? `${text}    # config.json: the pasted config` : text;
}

// ---------------------------------------------------------------------------------------
// State: the tab and its fields, kept in the URL's hash (#infer&model=...&batch=8): a link
// opens the same view. Only values other than the defaults are written.

const state = { tab: 'infer' };
for (const [t, d] of Object.entries(TABS)) state[t] = Object.fromEntries(d.fields.map((f) => [f.key, f.def]));

function readHash() {
  const h = location.hash.replace(/^#/, '');
  if (!h) return;
  const [tab, ...rest] = h.split('&');
  if (TABS[tab]) state.tab = tab;
  const p = new URLSearchParams(rest.join('&'));
  for (const [k, v] of p) {
    if (k === 'config') state[state.tab].config = v;
    else if (k in state[state.tab]) state[state.tab][k] = v;
  }
}
function writeHash() {
  const s = state[state.tab];
  const p = new URLSearchParams();
  for (const f of TABS[state.tab].fields) if (s[f.key] !== f.def) p.set(f.key, s[f.key]);
  if (s.model === 'custom' && s.config) p.set('config', s.config);
  const h = '#' + state.tab + (p.toString() ? '&' + p.toString() : '');
  if (location.hash !== h) history.replaceState(null, '', h);
}

// ---------------------------------------------------------------------------------------
// Catalog: the bundled models and chips, asked of the engine once.

const catalog = { models: [], chips: [], chipSpec: {} };
async function loadCatalog() {
  const m = await quick.run(['models', '--json']);
  catalog.models = JSON.parse(m.stdout).map((x) => x.name);
  const hl = await quick.run(['hw', 'list', '--json']);
  catalog.chips = JSON.parse(hl.stdout).map((x) => ({ name: x.name, display: x.display_name }));
}
async function chipSpec(name) {
  if (!catalog.chipSpec[name]) {
    const r = await quick.run(['hw', 'show', name, '--json']);
    catalog.chipSpec[name] = r.status === 0 ? JSON.parse(r.stdout) : null;
  }
  return catalog.chipSpec[name];
}

// ---------------------------------------------------------------------------------------
// Form building.

const $ = (sel, root = document) => root.querySelector(sel);
function h(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k.nodeType ? k : String(k));
  return e;
}

function buildForm(tab) {
  const form = $(`#form-${tab}`);
  form.textContent = '';
  const s = state[tab];
  const changed = (key, value, immediate) => {
    s[key] = value;
    writeHash();
    schedule(tab, immediate);
  };
  for (const f of TABS[tab].fields) {
    const id = `${tab}-${f.key}`;
    let input;
    if (f.type === 'model') {
      input = h('select', { id, name: f.key, onchange: (e) => { changed(f.key, e.target.value, true); buildForm(tab); } },
        catalog.models.map((m) => h('option', { value: m, selected: s.model === m }, m)),
        h('option', { value: 'custom', selected: s.model === 'custom' }, 'custom: paste or drop a config.json'));
      form.append(h('label', { for: id }, f.label), input);
      if (s.model === 'custom') {
        const ta = h('textarea', { id: `${tab}-config`, rows: 6, placeholder: 'Paste a Hugging Face config.json here, or drop the file', spellcheck: 'false',
          oninput: (e) => changed('config', e.target.value, false) });
        ta.value = s.config || '';
        ta.addEventListener('dragover', (e) => e.preventDefault());
        ta.addEventListener('drop', async (e) => {
          e.preventDefault();
          const file = e.dataTransfer.files[0];
          if (file) { ta.value = await file.text(); changed('config', ta.value, true); }
        });
        form.append(ta);
      }
      continue;
    }
    if (f.type === 'chips' || f.type === 'chip') {
      const chosen = (s[f.key] || '').split(',').filter(Boolean);
      const n = f.type === 'chip' ? 1 : f.max;
      const wrap = h('div', { class: 'chip-pickers', id });
      for (let i = 0; i < n; ++i) {
        const sel = h('select', { 'aria-label': `${f.label} ${i + 1}`, 'data-index': i, onchange: () => {
          const v = [...wrap.querySelectorAll('select')].map((x) => x.value).filter(Boolean);
          changed(f.key, [...new Set(v)].join(',') || f.def, true);
        } },
        i > 0 ? h('option', { value: '', selected: !chosen[i] }, '—') : null,
        catalog.chips.map((c) => h('option', { value: c.name, selected: chosen[i] === c.name }, c.name)));
        wrap.append(sel);
      }
      form.append(h('label', { for: id }, f.label), wrap);
      continue;
    }
    if (f.type === 'select') {
      input = h('select', { id, name: f.key, onchange: (e) => changed(f.key, e.target.value, true) },
        f.options.map((o) => h('option', { value: o, selected: s[f.key] === o }, f.names?.[o] ?? o)));
    } else {
      input = h('input', { id, name: f.key, type: f.type === 'number' ? 'number' : 'text', min: f.min, step: f.step, placeholder: f.placeholder || '', inputmode: f.type === 'number' ? 'decimal' : null,
        oninput: (e) => changed(f.key, e.target.value.trim(), false) });
      input.value = s[f.key];
    }
    form.append(h('label', { for: id }, f.label), input);
  }
  if (TABS[tab].search) {
    form.append(h('button', { type: 'button', id: `${tab}-search`, class: 'secondary', onclick: () => runSearchTrain() }, 'Search every plan (search train)'));
  }
}

// ---------------------------------------------------------------------------------------
// Running: quick tabs on every change; long ones after a short pause in typing.

// since[tab]: when the change that the next result answers was made (the page's update time,
// control to drawn result, is kept in document.body.dataset.updateMs for the browser test).
const timers = {}, since = {};
function schedule(tab, immediate) {
  clearTimeout(timers[tab]);
  since[tab] ??= performance.now();
  const delay = TABS[tab].engine === 'long' ? (immediate ? 50 : 400) : 0;
  timers[tab] = setTimeout(() => run(tab), delay);
}

let firstRender = null;
async function run(tab) {
  const s = state[tab];
  const args = TABS[tab].args(s);
  const panel = $(`#out-${tab}`);
  const changedAt = since[tab];
  since[tab] = undefined;
  const cmd = commandLine(args, s);
  if (s.model === 'custom' && !s.config) {
    showError(tab, 'Paste a config.json (or drop one on the box) to use a model of your own.');
    return;
  }
  const eng = TABS[tab].engine === 'long' ? (long ||= new Engine('long')) : quick;
  const bar = $(`#progress-${tab}`);
  let shown = false;
  const showBar = setTimeout(() => { shown = true; bar.hidden = false; bar.value = 0; bar.removeAttribute('value'); }, 120);
  panel.classList.add('stale');
  const progress = (f) => {
    bar.hidden = false;
    bar.value = f;
    document.body.dataset.progressReports = String(Number(document.body.dataset.progressReports || 0) + 1);
  };
  const r = await eng.run(args, { files: files(s), tag: tab, replace: TABS[tab].engine === 'long', onProgress: progress });
  clearTimeout(showBar);
  if (r.superseded) return;
  bar.hidden = true;
  void shown;
  panel.classList.remove('stale');
  if (r.status !== 0) {
    showError(tab, (r.stderr || `exit status ${r.status}`).trim(), cmd);
    return;
  }
  let doc;
  try {
    doc = JSON.parse(r.stdout);
  } catch (e) {
    showError(tab, `the engine's output is not JSON: ${e.message}`, cmd);
    return;
  }
  hideError(tab);
  await RENDER[tab](doc, s);
  showSource(tab, 'main', cmd, r.stdout, r.ms);
  if (changedAt !== undefined) document.body.dataset.updateMs = (performance.now() - changedAt).toFixed(1);
  document.body.dataset.engineMs = r.ms.toFixed(1);
  if (firstRender === null) {
    firstRender = performance.now();
    document.body.dataset.firstRenderMs = firstRender.toFixed(0);
  }
  document.body.dataset[`ran${tab[0].toUpperCase()}${tab.slice(1)}`] = String(Number(document.body.dataset[`ran${tab[0].toUpperCase()}${tab.slice(1)}`] || 0) + 1);
}

async function runSearchTrain() {
  const s = state.train;
  const args = TABS.train.search(s);
  const cmd = commandLine(args, s);
  long ||= new Engine('long');
  const bar = $('#progress-train');
  bar.hidden = false;
  bar.removeAttribute('value');
  const r = await long.run(args, { files: files(s), tag: 'train-search', replace: true, onProgress: (f) => { bar.value = f; } });
  if (r.superseded) return;
  bar.hidden = true;
  const box = $('#train-search-out');
  box.hidden = false;
  if (r.status !== 0) {
    $('#train-search-table').textContent = (r.stderr || '').trim();
    return;
  }
  const d = JSON.parse(r.stdout);
  renderTrainSearch(d);
  showSource('train', 'search', cmd, r.stdout, r.ms);
  document.body.dataset.ranTrainSearch = '1';
}

function showError(tab, msg, cmd) {
  const e = $(`#error-${tab}`);
  e.hidden = false;
  e.textContent = msg;
  if (cmd) showSource(tab, 'main', cmd, null, null);
}
function hideError(tab) { $(`#error-${tab}`).hidden = true; }

// The command line and the JSON of a view; `which`: 'main' or 'search'.
function showSource(tab, which, cmd, json, ms) {
  const box = $(`#source-${tab}-${which}`);
  $('.cmd', box).textContent = cmd + ' ';
  if (json !== null) {
    $('pre.json', box).textContent = json;
    $('.json-size', box).textContent = `(${RL.si(json.length, 'B')})`;
    const a = $('a.download', box);
    URL.revokeObjectURL(a.href);
    a.href = URL.createObjectURL(new Blob([json], { type: 'application/json' }));
    a.download = `ridgeline-${tab}${which === 'search' ? '-search' : ''}.json`;
  }
  if (ms !== null && ms !== undefined) $(`#timing-${tab}`).textContent = `computed in ${ms < 10 ? ms.toFixed(1) : ms.toFixed(0)} ms in WebAssembly`;
}

// ---------------------------------------------------------------------------------------
// Rendering helpers.

function cards(box, items) {
  box.textContent = '';
  for (const [label, value, cls] of items) box.append(h('div', { class: `card ${cls || ''}` }, h('div', { class: 'card-label' }, label), h('div', { class: 'card-value' }, value)));
}
function table(box, head, rows, opts = {}) {
  box.textContent = '';
  const t = h('table', { class: opts.cls || '' }, h('thead', {}, h('tr', {}, head.map((c, i) => h('th', { class: opts.num?.[i] ? 'num' : '' }, c)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c, i) => h('td', { class: opts.num?.[i] ? 'num' : '' }, c))))));
  box.append(h('div', { class: 'table-wrap' }, t));
}
const fixed = (x, d = 2) => (x === null || x === undefined ? '–' : Number(x).toFixed(d));
const count = (x) => (x === null || x === undefined ? '–' : Number(x).toLocaleString('en-US'));
const COLORS = ['#2563eb', '#ea580c', '#16a34a', '#9333ea', '#dc2626', '#0891b2'];

// ---------------------------------------------------------------------------------------
// Inference.

const inferView = { chip: 0, phase: 'all' };
async function renderInfer(doc) {
  const docs = Array.isArray(doc) ? doc : [doc];
  const rows = [
    ['TTFT', (d) => RL.time(d.ttft_s)],
    ['TPOT', (d) => RL.time(d.tpot_s)],
    ['Output tokens/s', (d) => RL.si(d.output_tokens_per_s, 'tok/s')],
    ['Output tokens/s per chip', (d) => RL.si(d.output_tokens_per_s_per_chip, 'tok/s')],
    ['Tokens/s (prompt + output)', (d) => RL.si(d.throughput_tokens_per_s, 'tok/s')],
    ['End-to-end latency', (d) => RL.time(d.e2e_latency_s)],
    ['Memory per chip', (d) => `${RL.bytes(d.memory.total_bytes)} of ${RL.bytes(d.memory.capacity_bytes)}`],
    ['Fits', (d) => (d.memory.fits ? 'yes' : 'no')],
    ['Weights / KV cache', (d) => `${RL.bytes(d.memory.weights_bytes)} / ${RL.bytes(d.memory.kv_cache_bytes)}`],
    ['Prefill / decode bound', (d) => `${d.prefill.bound} / ${d.decode.bound}`],
    ['Chips (TP × EP)', (d) => `${d.chips} (${d.tp} × ${d.ep})`],
    ['Largest batch that fits', (d) => count(d.max_batch)],
  ];
  const box = $('#infer-headline');
  if (docs.length === 1) {
    const d = docs[0];
    cards(box, [
      ['TTFT', RL.time(d.ttft_s)], ['TPOT', RL.time(d.tpot_s)], ['Output tokens/s', RL.si(d.output_tokens_per_s, 'tok/s')],
      ['Memory per chip', `${RL.bytes(d.memory.total_bytes)} / ${RL.bytes(d.memory.capacity_bytes)}`],
      ['Fits in memory', d.memory.fits ? 'yes' : 'no', d.memory.fits ? 'good' : 'bad'],
      ['Bound (prefill / decode)', `${d.prefill.bound} / ${d.decode.bound}`],
    ]);
    $('#infer-compare').textContent = '';
  } else {
    box.textContent = '';
    table($('#infer-compare'), ['', ...docs.map((d) => d.hw)], rows.map(([label, f]) => [label, ...docs.map(f)]), { num: [false, ...docs.map(() => true)] });
  }
  // Roofline and op table of one chip.
  if (inferView.chip >= docs.length) inferView.chip = 0;
  const pick = $('#infer-chip');
  pick.textContent = '';
  docs.forEach((d, i) => pick.append(h('option', { value: i, selected: i === inferView.chip }, d.hw)));
  pick.parentElement.hidden = docs.length < 2;
  const d = docs[inferView.chip];
  const spec = await chipSpec(d.hw);
  drawRoofline(d, spec);
  drawOpTable(d);
  $('#infer-memory-chip').textContent = docs.length > 1 ? `(${d.hw})` : '';
  const mem = d.memory;
  RL.bars($('#infer-memory'), [
    { label: 'weights', value: mem.weights_bytes },
    { label: 'KV cache', value: mem.kv_cache_bytes },
    { label: 'activations', value: mem.activations_bytes },
    { label: 'total', value: mem.total_bytes, cls: mem.fits ? '' : 'over' },
    { label: 'capacity', value: mem.capacity_bytes, cls: 'cap' },
  ], RL.bytes);
  inferView.last = docs;
}

function opTip(o) {
  return `<b>${o.name}</b> <span class="muted">${o.phase} · ${o.group}${o.repeat > 1 ? ` · ×${o.repeat}` : ''}</span><br>` +
    `FLOPs: ${RL.si(o.flops, 'FLOP')}<br>bytes: ${RL.bytes(o.bytes)}<br>intensity: ${RL.num(o.intensity_flops_per_byte)} FLOP/B<br>` +
    `attained: ${RL.si(o.attained_flops_per_s, 'FLOP/s')}<br>bound: <b>${o.bound}</b><br>time: ${RL.time(o.t_lower_s)} each` +
    `<br>share of ${o.phase}: ${RL.pct(o.share)}`;
}

function drawRoofline(d, spec) {
  const box = $('#infer-roofline');
  const ops = d.ops.filter((o) => o.flops > 0 && o.bytes > 0 && o.attained_flops_per_s > 0);
  const phases = [...new Set(d.ops.map((o) => o.phase))];
  const series = phases.map((p, i) => ({
    name: `${p} ops`, color: COLORS[i], kind: 'points',
    points: ops.filter((o) => o.phase === p).map((o) => ({ x: o.intensity_flops_per_byte, y: o.attained_flops_per_s, tip: opTip(o) })),
  }));
  const marks = [];
  if (spec) {
    const dt = spec.peak_flops_per_s[d.compute_dtype] ? d.compute_dtype : Object.keys(spec.peak_flops_per_s)[0];
    const peak = spec.peak_flops_per_s[dt], ridge = spec.ridge_flops_per_byte[dt];
    const xs = ops.map((o) => o.intensity_flops_per_byte);
    const lo = Math.min(ridge, ...xs) / 3, hi = Math.max(ridge, ...xs) * 3;
    series.unshift({ name: `roof: ${RL.si(peak, 'FLOP/s')} ${dt}, ${RL.si(spec.memory[0].bandwidth_Bps, 'B/s')} ${spec.memory[0].name}`, color: '#111827', kind: 'line', tips: false,
      points: [{ x: lo, y: (peak * lo) / ridge }, { x: ridge, y: peak }, { x: hi, y: peak }] });
    marks.push({ x: ridge, label: `ridge ${RL.num(ridge)} FLOP/B` });
  }
  RL.chart(box, {
    title: `Roofline of ${d.model} on ${d.hw}`,
    x: { label: 'arithmetic intensity (FLOP/byte)', log: true, fmt: RL.num },
    y: { label: 'attained rate (FLOP/s)', log: true, fmt: (v) => RL.si(v) },
    series, marks,
  });
  const off = d.ops.length - ops.length;
  $('#infer-roofline-note').textContent = `${ops.length} ops drawn, each a point (hover for its figures)` + (off ? `; ${off} without FLOPs (copies, KV writes, lookups) are in the table only` : '');
}

function drawOpTable(d) {
  const ops = d.ops.filter((o) => inferView.phase === 'all' || o.phase === inferView.phase);
  table($('#infer-ops'), ['phase', 'group', 'op', 'kind', '×', 'FLOPs', 'bytes', 'FLOP/B', 'bound', 'lower each', 'share', 'realistic each', 'kernel class'],
    ops.map((o) => [o.phase, o.group, o.name, o.kind, o.repeat, RL.si(o.flops), RL.bytes(o.bytes), RL.num(o.intensity_flops_per_byte), o.bound, RL.time(o.t_lower_s), RL.pct(o.share), RL.time(o.t_realistic_s), o.kernel_class]),
    { num: [false, false, false, false, true, true, true, true, false, true, true, true, false], cls: 'ops' });
}

// ---------------------------------------------------------------------------------------
// Serving.

const serveView = { cdf: 'ttft_s' };
function renderServe(d) {
  serveView.last = d;
  cards($('#serve-headline'), [
    ['Requests/s', RL.si(d.requests_per_s, 'req/s')],
    ['Output tokens/s', RL.si(d.output_tokens_per_s, 'tok/s')],
    ['Output tokens/s per GPU', RL.si(d.output_tokens_per_s_per_gpu, 'tok/s')],
    ['TTFT p99', RL.time(d.ttft_s.p99)],
    ['TPOT p99', RL.time(d.tpot_s.p99)],
    ['Sustainable', d.sustainable ? 'yes' : 'no', d.sustainable ? 'good' : 'bad'],
    ...(d.goodput_requests_per_s !== undefined ? [['Goodput', RL.si(d.goodput_requests_per_s, 'req/s')]] : []),
    ['KV cache used (fleet mean / fullest cache peak)', `${RL.pct(d.kv_utilisation.mean)} / ${RL.pct(d.kv_utilisation.max)}`],
  ]);
  const metrics = [['TTFT', 'ttft_s'], ['TPOT', 'tpot_s'], ['ITL', 'itl_s'], ['end to end', 'e2e_s'], ['queueing', 'queue_s']];
  table($('#serve-percentiles'), ['', 'mean', 'p50', 'p90', 'p95', 'p99', 'max'],
    metrics.filter(([, k]) => d[k]).map(([n, k]) => [n, ...['mean', 'p50', 'p90', 'p95', 'p99', 'max'].map((q) => RL.time(d[k][q]))]),
    { num: [false, true, true, true, true, true, true] });
  const c = d.cdf || {};
  const names = { ttft_s: 'TTFT', tpot_s: 'TPOT', itl_s: 'ITL', e2e_s: 'end-to-end latency' };
  const sel = $('#serve-cdf-metric');
  sel.textContent = '';
  for (const k of Object.keys(names)) if (c[k]) sel.append(h('option', { value: k, selected: k === serveView.cdf }, names[k]));
  const k = c[serveView.cdf] ? serveView.cdf : 'ttft_s';
  RL.chart($('#serve-cdf'), {
    x: { label: `${names[k]} (s)`, fmt: RL.time, zero: false },
    y: { label: 'fraction of requests', min: 0, max: 1, fmt: (v) => RL.pct(v, 0) },
    series: [{ name: `${names[k]} CDF`, color: COLORS[0], kind: 'line', points: (c[k] || []).map((x, i) => ({ x, y: c.q[i], tip: `${RL.pct(c.q[i], 0)} of requests within ${RL.time(x)}` })) }],
  });
  const tl = d.timeline || [];
  RL.chart($('#serve-kv'), {
    x: { label: 'simulated time (s)', fmt: RL.time },
    y: { label: 'KV cache used (fraction)', min: 0, max: Math.max(0.05, ...tl.map((p) => p.kv_used)) * 1.05, fmt: (v) => RL.pct(v, 0) },
    series: [{ name: 'KV cache used', color: COLORS[2], kind: 'step', points: tl.map((p) => ({ x: p.t_s, y: p.kv_used, tip: `t = ${RL.time(p.t_s)}<br>KV used: ${RL.pct(p.kv_used)}<br>running: ${p.running}, waiting: ${p.waiting}<br>output: ${RL.si(p.output_tokens_per_s, 'tok/s')}` })) }],
  });
  RL.chart($('#serve-running'), {
    x: { label: 'simulated time (s)', fmt: RL.time },
    y: { label: 'requests', fmt: (v) => String(Math.round(v)) },
    series: [
      { name: 'running', color: COLORS[0], kind: 'step', points: tl.map((p) => ({ x: p.t_s, y: p.running })) },
      { name: 'waiting', color: COLORS[1], kind: 'step', points: tl.map((p) => ({ x: p.t_s, y: p.waiting })) },
    ],
  });
}

// ---------------------------------------------------------------------------------------
// Capacity (search serve).

function deploymentTip(p) {
  return `<b>${p.hw}</b> TP ${p.tp}${p.ep > 1 ? ` EP ${p.ep}` : ''} × ${p.replicas} replica${p.replicas > 1 ? 's' : ''}<br>` +
    `${p.gpus} GPUs${p.usd_per_hour ? `, ${RL.si(p.usd_per_hour, 'USD/h')}` : ''}<br>engine ${p.engine}, max ${p.max_num_seqs} running<br>` +
    `per GPU: ${RL.si(p.output_tokens_per_s_per_gpu, 'tok/s')}<br>per user: ${RL.si(p.output_tokens_per_s_per_user, 'tok/s')}<br>` +
    `TTFT p99 ${RL.time(p.ttft_s?.p99)}, TPOT p99 ${RL.time(p.tpot_s?.p99)}`;
}
function renderCapacity(d) {
  const b = d.best;
  if (b) {
    cards($('#capacity-headline'), [
      ['Best deployment', `${b.hw}, TP ${b.tp}${b.ep > 1 ? `, EP ${b.ep}` : ''}, ${b.replicas} replica${b.replicas > 1 ? 's' : ''}`, 'wide'],
      ['GPUs', String(b.gpus)],
      ...(b.usd_per_hour ? [['Cost', RL.si(b.usd_per_hour, 'USD/h')]] : []),
      ['TTFT p99', RL.time(b.ttft_s?.p99)], ['TPOT p99', RL.time(b.tpot_s?.p99)],
      ['Output tokens/s per GPU', RL.si(b.output_tokens_per_s_per_gpu, 'tok/s')],
      ...(d.best_targets ? [['Held to (its class\'s error)', Object.entries(d.best_targets).map(([k, v]) => `${k} ${RL.time(v)}`).join(', '), 'wide']] : []),
    ]);
    $('#capacity-best-cmd').textContent = b.command || '';
  } else {
    cards($('#capacity-headline'), [['Best deployment', 'none meets the SLOs', 'bad wide'], ['Evaluated', count(d.evaluated)]]);
    $('#capacity-best-cmd').textContent = '';
  }
  const feas = d.feasible || [];
  const chips = [...new Set([...feas, ...(d.pareto || [])].map((p) => p.hw))];
  const series = chips.map((c, i) => ({ name: `${c} (listed deployments)`, color: COLORS[i % COLORS.length], kind: 'points',
    points: feas.filter((p) => p.hw === c).map((p) => ({ x: p.output_tokens_per_s_per_user, y: p.output_tokens_per_s_per_gpu, tip: deploymentTip(p) })) }));
  const par = (d.pareto || []).slice().sort((a, b2) => a.output_tokens_per_s_per_user - b2.output_tokens_per_s_per_user);
  series.push({ name: 'Pareto front', color: '#111827', kind: 'line', dash: '5 4', points: par.map((p) => ({ x: p.output_tokens_per_s_per_user, y: p.output_tokens_per_s_per_gpu, tip: deploymentTip(p) })) });
  series.push({ name: 'on the front', color: '#111827', kind: 'points', r: 5, legend: false, points: par.map((p) => ({ x: p.output_tokens_per_s_per_user, y: p.output_tokens_per_s_per_gpu, tip: deploymentTip(p) })) });
  RL.chart($('#capacity-pareto'), {
    x: { label: 'output tokens/s per user', fmt: (v) => RL.si(v), zero: false },
    y: { label: 'output tokens/s per GPU', fmt: (v) => RL.si(v) },
    series,
  });
  // Best per chip: the engine's own list when it gives one, else the first of each chip in
  // its ranked list of feasible deployments.
  const asked = state.capacity.hw.split(',');
  const best = d.best_per_chip || asked.map((c) => feas.find((p) => p.hw === c) || { hw: c, missing: true });
  table($('#capacity-per-chip'), ['chip', 'TP', 'EP', 'replicas', 'GPUs', 'engine', 'max running', 'TTFT p99', 'TPOT p99', 'tok/s per GPU', 'tok/s per user'],
    best.map((p) => (p.missing ? [p.hw, h('span', { class: 'muted' }, `none among the ${feas.length} listed: more under "Deployments listed", or none meets the SLOs`), '', '', '', '', '', '', '', '', ''] : [p.hw, p.tp, p.ep, p.replicas, p.gpus, p.engine, p.max_num_seqs, RL.time(p.ttft_s?.p99), RL.time(p.tpot_s?.p99), RL.si(p.output_tokens_per_s_per_gpu), RL.si(p.output_tokens_per_s_per_user)])),
    { num: [false, true, true, true, true, false, true, true, true, true, true] });
  const rej = Object.entries(d.rejected || {});
  $('#capacity-stats').textContent = `${count(d.evaluated)} deployments evaluated, ${count(d.feasible_count)} meet the SLOs, ${count(d.simulations)} simulations` +
    (rej.length ? `; rejected: ${rej.map(([k, v]) => `${k} ${v}`).join(', ')}` : '');
}

// ---------------------------------------------------------------------------------------
// Training.

function renderTrain(d) {
  const m = d.memory_per_gpu;
  cards($('#train-headline'), [
    ['Step time', RL.time(d.step_time_s)], ['MFU', RL.pct(d.mfu)], ['Tokens/s', RL.si(d.tokens_per_s, 'tok/s')],
    ['Memory per GPU', `${RL.bytes(m.total_bytes)} / ${RL.bytes(m.capacity_bytes)}`],
    ['Fits in memory', m.fits ? 'yes' : 'no', m.fits ? 'good' : 'bad'],
    ['Layout (TP × PP × DP)', `${d.tp} × ${d.pp} × ${d.dp}`],
  ]);
  RL.bars($('#train-memory'), [
    { label: 'parameters', value: m.params_bytes }, { label: 'gradients', value: m.grads_bytes }, { label: 'optimizer', value: m.optimizer_bytes },
    { label: 'activations', value: m.activations_bytes }, { label: 'margin', value: m.margin_bytes },
    { label: 'total', value: m.total_bytes, cls: m.fits ? '' : 'over' }, { label: 'capacity', value: m.capacity_bytes, cls: 'cap' },
  ], RL.bytes);
  RL.bars($('#train-time'), (d.breakdown || []).map((b) => ({ label: `${b.name.replaceAll('_', ' ')} (per ${b.per.replace('_', '-')})`, value: b.times.t_realistic_s })), RL.time);
}

function renderTrainSearch(d) {
  table($('#train-search-table'), ['#', 'TP', 'PP', 'DP', 'CP', 'EP', 'VPP', 'micro-batch', 'ZeRO', 'recompute', 'step time', 'MFU', 'tokens/s', 'memory/GPU'],
    (d.best || []).map((p, i) => [i + 1, p.tp, p.pp, p.dp, p.cp, p.ep, p.vpp, p.micro_batch, p.zero, p.recompute, RL.time(p.step_time_s), RL.pct(p.mfu), RL.si(p.tokens_per_s), RL.bytes(p.memory_per_gpu?.total_bytes)]),
    { num: [true, true, true, true, true, true, true, true, true, false, true, true, true, true] });
  $('#train-search-stats').textContent = `${count(d.evaluated)} plans evaluated, ${count(d.feasible)} feasible`;
}

const RENDER = { infer: renderInfer, serve: renderServe, capacity: renderCapacity, train: renderTrain };

// ---------------------------------------------------------------------------------------
// Tabs and start-up.

function showTab(tab, runIt) {
  state.tab = tab;
  RL.hideTip();
  for (const t of Object.keys(TABS)) {
    $(`#tab-${t}`).setAttribute('aria-selected', String(t === tab));
    $(`#panel-${t}`).hidden = t !== tab;
  }
  writeHash();
  if (runIt) schedule(tab, true);
}

async function main() {
  readHash();
  for (const t of Object.keys(TABS)) $(`#tab-${t}`).addEventListener('click', () => showTab(t, !document.body.dataset[`ran${t[0].toUpperCase()}${t.slice(1)}`]));
  $('#infer-chip').addEventListener('change', (e) => { inferView.chip = Number(e.target.value); renderInfer(inferView.last); });
  $('#infer-phase').addEventListener('change', (e) => { inferView.phase = e.target.value; drawOpTable(inferView.last[inferView.chip]); });
  $('#serve-cdf-metric').addEventListener('change', (e) => { serveView.cdf = e.target.value; if (serveView.last) renderServe(serveView.last); });
  for (const b of document.querySelectorAll('button.copy')) {
    b.addEventListener('click', async () => {
      const text = b.closest('.source').querySelector('.cmd').textContent.trim();
      try { await navigator.clipboard.writeText(text); b.textContent = 'copied'; } catch { b.textContent = 'select and copy'; }
      setTimeout(() => { b.textContent = 'copy'; }, 1500);
    });
  }
  window.addEventListener('hashchange', () => { readHash(); for (const t of Object.keys(TABS)) buildForm(t); showTab(state.tab, true); });
  try {
    await loadCatalog();
  } catch (e) {
    $('#status').textContent = `The engine did not start: ${e.message}`;
    return;
  }
  $('#status').textContent = '';
  for (const t of Object.keys(TABS)) buildForm(t);
  showTab(state.tab, true);
}

main();
