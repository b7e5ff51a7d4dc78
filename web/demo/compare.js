// compare.html: the head-count family (heads-1, heads-2, heads-4, heads-8: 2 layers, n_embd 128)
// side by side on the same text: every head's attention, what more heads buy (role counts, best
// role scores, copy accuracy and loss from the cards: compare-roles.js), validation loss and perplexity and
// parameter count (from each model's card.json), measured speed (median of timed run() calls in
// each model's worker on the current text), and one sentence on the trade-off computed from those
// numbers. Built on the package's public API (worker models through the component's shared cache)
// and headscope/analysis (badges).
// ?models=a,b,...: other models (names or folder URLs), e.g. for tests with fixtures.
// "How many heads does this model need?" (compare-pruning.js) measures those models and the demo's
// default model; ?prune=a,b sets its models, ?orders=N its random orders (default 8).
import { getModel, GridView, readTheme, DEFAULT_TEXT, describeHead } from '../component/headscope-view.js';
import { allHeadScores, headBadges } from '../lib/analysis.js';
import { ROLE_SHORT, rolesSentence } from '../component/lab.js';
import { tradeoffSentence, fmtParams } from './tradeoff.js';
import { familyRoleTable } from './compare-roles.js';
import { PruningPanel } from './compare-pruning.js';
import { defaultModelName as DEFAULT_MODEL } from '../lib/headscope.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const SPEED_REPS = Number(params.get('reps')) || 7;

const state = { text: params.get('text') ?? DEFAULT_TEXT, entries: [] };
let theme = readTheme(document.documentElement);

function headsOf(name) {
  const m = /heads-(\d+)\/?$/.exec(name);
  return m ? Number(m[1]) : NaN;
}

async function modelNames() {
  const q = params.get('models');
  if (q) return q.split(',').map((s) => s.trim()).filter(Boolean);
  try {
    const res = await fetch('models/index.json');
    const j = res.ok ? await res.json() : { models: [] };
    const names = (j.models || []).map((m) => m.name).filter((n) => /^heads-\d+$/.test(n));
    if (names.length) return names.sort((a, b) => headsOf(a) - headsOf(b));
  } catch { /* fall through */ }
  return ['heads-1', 'heads-2', 'heads-4', 'heads-8'];
}

/** A shipped model's card.json, when the site's models/index.json says it has one; else null. */
let indexPromise = null;
async function loadCard(name) {
  if (!indexPromise) {
    indexPromise = fetch('models/index.json').then((r) => (r.ok ? r.json() : { models: [] })).catch(() => ({ models: [] }));
  }
  const entry = ((await indexPromise).models || []).find((m) => m.name === name);
  if (!entry?.card) return null; // folder URLs and models without a card: the table says so
  try {
    const res = await fetch(`models/${encodeURIComponent(name)}/card.json`);
    return res.ok ? await res.json() : null;
  } catch { return null; }
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN;
}

// ---- columns ---------------------------------------------------------------------------------
function buildColumn(entry) {
  const sec = el('section', 'panel compare-col');
  sec.setAttribute('aria-labelledby', `cmp-title-${entry.index}`);
  const h = el('h2', '', entry.label);
  h.id = `cmp-title-${entry.index}`;
  const status = el('p', 'stats compare-col-status', 'Loading…');
  status.setAttribute('role', 'status');
  const gridHost = el('div', 'compare-gridhost');
  const caption = el('p', 'caption compare-caption');
  sec.append(h, status, gridHost, caption);
  $('cmp-models').appendChild(sec);
  entry.els = { sec, status, gridHost, caption };
  entry.sel = { layer: 0, head: 0, token: null };
  entry.grid = new GridView(gridHost, {
    onSelect: (l, hh, { focus } = {}) => {
      entry.sel.layer = l;
      entry.sel.head = hh;
      entry.grid.select(l, hh, focus);
      renderColumn(entry);
      $('cmp-live').textContent = `${entry.label}: ${caption.textContent}`;
    },
  });
}

// the same cell size in every model's grid, so 1 and 8 heads compare at one scale
const CELL_PX = 64;
function renderColumn(entry) {
  const r = entry.result;
  if (!r) return;
  entry.els.gridHost.style.width = `${Math.round(r.nHead * (CELL_PX + 4) + 36)}px`; // CSSOM: allowed under the CSP
  entry.grid.update(r, { ...entry.sel, heads: [entry.sel.head], ablate: [] }, theme);
  let scores = null;
  try { scores = allHeadScores(r); } catch { /* too short */ }
  entry.grid.cells?.forEach((row, l) => row.forEach(({ cell, badge }, h) => {
    const s = scores?.[l]?.[h];
    const roles = s ? headBadges(s).filter((x) => x !== 'induction') : [];
    const badgeText = roles.map((x) => ROLE_SHORT[x]).join(' ');
    badge.textContent = badgeText;
    // the accessible name holds the visible badge text too (WCAG 2.5.3, label in name)
    cell.setAttribute('aria-label', `${entry.label}, layer ${l}, head ${h}${s ? `: ${rolesSentence(s, roles)}` : ''}${badgeText ? `; badge: ${badgeText}` : ''}`);
  }));
  entry.els.caption.textContent = describeHead(r, entry.sel.layer, entry.sel.head, r.T - 1);
  entry.els.status.textContent = `${r.nLayer} layers × ${r.nHead} head${r.nHead > 1 ? 's' : ''} of width ${entry.info.config.headSize} · ${r.T} tokens`;
}

// ---- runs and timing -------------------------------------------------------------------------
let runSeq = 0;
async function runAll() {
  const seq = ++runSeq;
  const text = state.text;
  if (!text) return;
  await Promise.all(state.entries.filter((e) => e.model).map(async (e) => {
    try {
      const r = await e.model.run(text, { topK: 5 });
      if (seq !== runSeq) return;
      e.result = r;
      renderColumn(e);
    } catch (err) {
      e.els.status.textContent = `Could not run: ${err.message}`;
    }
  }));
  if (seq !== runSeq) return;
  document.body.dataset.renders = String(Number(document.body.dataset.renders || 0) + 1);
  scheduleTiming();
}

let timingTimer = 0;
let timingSeq = 0;
function scheduleTiming() {
  clearTimeout(timingTimer);
  timingTimer = setTimeout(timeAll, 400);
}

/** Median wall time of SPEED_REPS run() calls per model. Round-robin over the models (one run in
 *  flight at a time), so a busy moment on the machine hits every model alike. */
async function timeAll() {
  const seq = ++timingSeq;
  // a head measurement keeps a core busy: time the runs once it is over
  await pruning?.idle();
  if (seq !== timingSeq) return;
  const text = state.text;
  const live = state.entries.filter((e) => e.model);
  for (const e of state.entries) { e.speedMs = undefined; e.times = []; }
  renderTable();
  try {
    for (const e of live) await e.model.run(text, { topK: 1 }); // warm up
    for (let i = 0; i < SPEED_REPS; i++) {
      for (const e of live) {
        await e.model.run('.', { topK: 1 }); // a different text, so the timed run cannot reuse its cache
        const t0 = performance.now();
        await e.model.run(text, { topK: 1 });
        e.times.push(performance.now() - t0);
        if (seq !== timingSeq) return;
      }
    }
  } catch { /* leave unmeasured */ }
  if (seq !== timingSeq) return;
  for (const e of live) e.speedMs = median(e.times);
  renderTable();
  document.body.dataset.timed = String(Number(document.body.dataset.timed || 0) + 1);
  renderSummary();
  // after the first timing, the heads each model needs, on the held-out passages
  if (pruning && !pruning.started) {
    pruning.started = true;
    pruning.measure('heldout');
  }
}

// ---- how many heads each model needs -------------------------------------------------------------
let pruning = null;
async function setUpPruning(names) {
  const q = params.get('prune');
  const models = q ? q.split(',').map((x) => x.trim()).filter(Boolean) : [...names];
  // the demo's default model after the family, when this site has it
  if (!q && !params.get('models')) {
    const index = await (indexPromise ?? fetch('models/index.json').then((r) => (r.ok ? r.json() : { models: [] })).catch(() => ({ models: [] })));
    if ((index.models || []).some((m) => m.name === DEFAULT_MODEL) && !models.includes(DEFAULT_MODEL)) models.push(DEFAULT_MODEL);
  }
  pruning = new PruningPanel({
    host: $('cmp-prune-models'),
    status: $('cmp-prune-status'),
    buttons: { heldout: $('cmp-prune-heldout'), text: $('cmp-prune-text'), cancel: $('cmp-prune-cancel') },
    getModel: (name) => state.entries.find((e) => e.name === name)?.model ?? getModel(name),
    getCard: loadCard,
    getText: () => state.text,
    theme: () => theme,
    options: { randomOrders: Number.isInteger(Number(params.get('orders'))) && params.get('orders') !== null ? Number(params.get('orders')) : 8, seed: 0 },
  });
  pruning.setModels(models.map((name) => {
    const entry = state.entries.find((e) => e.name === name);
    return { name, label: entry?.label ?? (name === DEFAULT_MODEL ? `${name} (the demo's model)` : name) };
  }));
  window.headscopePruning = pruning;
}

// ---- the table and the sentence ----------------------------------------------------------------
function renderTable() {
  const t = $('cmp-table');
  const rows = [
    ['Heads per layer', (e) => (e.info ? String(e.info.config.nHead) : '…')],
    ['Width of each head', (e) => (e.info ? String(e.info.config.headSize) : '…')],
    ['Validation loss (nats/token)', (e) => (Number.isFinite(e.valLoss) ? e.valLoss.toFixed(3) : 'no card')],
    ['Validation perplexity', (e) => (Number.isFinite(e.valPpl) ? e.valPpl.toFixed(1) : 'no card')],
    ['Parameters', (e) => (e.params ? fmtParams(e.params) : '…')],
    ['run() on this text, median', (e) => (Number.isFinite(e.speedMs) ? `${e.speedMs.toFixed(1)} ms` : e.model ? 'measuring…' : '…')],
  ];
  const thead = el('thead');
  const hr = el('tr');
  hr.appendChild(el('th', '', 'model'));
  for (const e of state.entries) {
    const th = el('th', '', e.label);
    th.scope = 'col';
    hr.appendChild(th);
  }
  thead.appendChild(hr);
  const tbody = el('tbody');
  for (const [name, f] of rows) {
    const tr = el('tr');
    const th = el('th', '', name);
    th.scope = 'row';
    tr.appendChild(th);
    for (const e of state.entries) tr.appendChild(el('td', '', f(e)));
    tbody.appendChild(tr);
  }
  t.replaceChildren(thead, tbody);
}

/** The roles table: role counts, best scores, copy accuracy and loss from each model's card. */
function renderRoles() {
  const entries = state.entries.map((e) => ({ label: e.label, card: e.card ?? null, nHead: e.info?.config.nHead ?? headsOf(e.name) }));
  const { rows, notes } = familyRoleTable(entries);
  const thead = el('thead');
  const hr = el('tr');
  hr.appendChild(el('th', '', 'model'));
  for (const e of entries) {
    const th = el('th', '', e.label);
    th.scope = 'col';
    hr.appendChild(th);
  }
  thead.appendChild(hr);
  const tbody = el('tbody');
  for (const row of rows) {
    const tr = el('tr');
    const th = el('th', '', row.label);
    th.scope = 'row';
    tr.appendChild(th);
    for (const c of row.cells) tr.appendChild(el('td', '', c));
    tbody.appendChild(tr);
  }
  $('cmp-roles').replaceChildren(thead, tbody);
  $('cmp-roles-notes').replaceChildren(...notes.map((n) => el('p', 'compare-note', n)));
}

function renderSummary() {
  $('cmp-summary').textContent = tradeoffSentence(state.entries);
}

// ---- start -----------------------------------------------------------------------------------
async function start() {
  const box = $('cmp-text');
  box.value = state.text;
  const names = await modelNames();
  state.entries = names.map((name, index) => {
    const n = headsOf(name);
    return { name, index, label: Number.isFinite(n) ? `${n} head${n > 1 ? 's' : ''} (${name})` : name };
  });
  for (const e of state.entries) buildColumn(e);
  renderTable();
  let timer = 0;
  box.addEventListener('input', () => {
    state.text = box.value;
    clearTimeout(timer);
    timer = setTimeout(runAll, 120);
  });
  // load one after another: two cores, and each load compiles the same wasm
  for (const e of state.entries) {
    try {
      e.model = await getModel(e.name);
      e.info = e.model.info;
      const card = await loadCard(e.name);
      e.card = card;
      e.valLoss = Number(card?.loss?.val);
      e.valPpl = Number(card?.loss?.val_perplexity ?? Math.exp(e.valLoss));
      e.params = card?.parameters ?? e.info.parameterCount;
      const label = `${e.info.config.nHead} head${e.info.config.nHead > 1 ? 's' : ''}`;
      e.label = e.name === `heads-${e.info.config.nHead}` ? label : `${label} (${e.name})`;
      e.els.sec.querySelector('h2').textContent = e.label;
      e.els.status.textContent = 'Running…';
    } catch (err) {
      e.els.status.textContent = `Could not load ${e.name}: ${err.message}`;
    }
  }
  renderTable();
  renderRoles();
  renderSummary();
  await setUpPruning(state.entries.map((e) => e.name));
  document.body.dataset.ready = 'true';
  await runAll();
}

window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
  theme = readTheme(document.documentElement);
  for (const e of state.entries) renderColumn(e);
  pruning?.redraw();
});
window.headscopeCompare = state;
start();
