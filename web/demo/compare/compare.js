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
// "Sharing keys and values": the key/value-head family (the site's models of family "kv", most
// key/value heads first; ?kv=a,b,... other names or folder URLs) on the same text: grids with the
// brackets of the query heads that share a key/value head, the table and sentence of compare-kv.js
// from their cards and engines, and the time of a typed token (timeTyped()). The head measurement
// above stays the head-count family's: these models are not in its list.
import {
  getModel,
  GridView,
  readTheme,
  DEFAULT_TEXT,
  describeHead,
  headSharing,
  sceneToSvg,
} from '../../component/headscope-view.js';
import { barsScene, barTitle } from '../../component/charts/bars.js';
import { allHeadScores, headBadges } from '../../lib/analysis.js';
import { ROLE_SHORT, rolesSentence } from '../../component/lab/lab.js';
import { sharingName } from '../../component/model/kv-groups.js';
import { tradeoffSentence, fmtParams } from './tradeoff.js';
import { familyRoleTable, familyRoleChart } from './compare-roles.js';
import { kvFamilyNames, kvFamilyTable, kvFamilyChart, kvTradeoffSentence } from './compare-kv.js';
import { timeRuns, timeTypedTokens } from './compare-timing.js';
import { PruningPanel } from './compare-pruning.js';
import { modelIndex, loadCard } from '../common/models.js';
import { defaultModelName as DEFAULT_MODEL, shippedModels } from '../../lib/headscope.js';
import { shortenExplanations } from '../common/more.js';

// the long explanations: their first sentence, and "more"
shortenExplanations(document);

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const SPEED_REPS = Number(params.get('reps')) || 7;
// A typed token costs about a millisecond with these models, and a page that is not cross-origin
// isolated reads its clock in steps of 0.1 ms: each repetition types a burst of tokens, one run per
// token (TYPED_BURST, compare-kv.js), and takes the mean; the median is over the repetitions.
const TYPED_REPS = 3 * SPEED_REPS;

const state = { text: params.get('text') ?? DEFAULT_TEXT, entries: [], kv: { entries: [], suffix: null } };
let theme = readTheme(document.documentElement);

function headsOf(name) {
  const m = /heads-(\d+)\/?$/.exec(name);
  return m ? Number(m[1]) : NaN;
}

const listParam = (q) =>
  q
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

async function modelNames() {
  const q = params.get('models');
  if (q) return listParam(q);
  const names = (await modelIndex()).map((m) => m.name).filter((n) => /^heads-\d+$/.test(n));
  if (names.length) return names.sort((a, b) => headsOf(a) - headsOf(b));
  return ['heads-1', 'heads-2', 'heads-4', 'heads-8'];
}

/** The key/value-head family's models: ?kv= (empty: none), else the site's of family "kv". */
async function kvModelNames() {
  if (params.has('kv')) return listParam(params.get('kv'));
  return kvFamilyNames(await modelIndex());
}

/** What getModel() loads for a name: the package's own models by name; the site's other models and
 *  folder URLs as folders (relative to this page). */
function sourceOf(name) {
  return shippedModels.includes(name) || name.includes('/') ? name : `models/${encodeURIComponent(name)}/`;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// ---- columns ---------------------------------------------------------------------------------
// A model's column: heading, status line, the grid of every head (badges from the live scores) and
// a caption on the selected head. The head-count models' columns are panels of their own (h2); the
// key/value-head models' sit inside their section's panel (h3).
function buildColumn(entry, { host = $('cmp-models'), id = `cmp-title-${entry.index}`, nested = false } = {}) {
  const sec = el('section', nested ? 'compare-col compare-col-nested' : 'panel compare-col');
  sec.setAttribute('aria-labelledby', id);
  const h = el(nested ? 'h3' : 'h2', 'compare-col-title', entry.label);
  h.id = id;
  const status = el('p', 'stats compare-col-status', 'Loading…');
  status.setAttribute('role', 'status');
  const gridHost = el('div', 'compare-gridhost');
  const caption = el('p', 'caption compare-caption');
  sec.append(h, status, gridHost, caption);
  host.appendChild(sec);
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

// the same cell size in every model's grid of a section, so 1 and 8 heads compare at one scale
// (the key/value-head family's grids are smaller: three grids of 8 heads side by side)
const CELL_PX = 64;
const KV_CELL_PX = 40;
function renderColumn(entry) {
  const r = entry.result;
  if (!r) return;
  const cellPx = entry.kv ? KV_CELL_PX : CELL_PX;
  entry.els.gridHost.style.width = `${Math.round(r.nHead * (cellPx + 4) + 36)}px`; // CSSOM: allowed under the CSP
  entry.grid.update(r, { ...entry.sel, heads: [entry.sel.head], ablate: [] }, theme);
  let scores = null;
  try {
    scores = allHeadScores(r);
  } catch {
    /* too short */
  }
  entry.grid.cells?.forEach((row, l) =>
    row.forEach(({ cell, badge }, h) => {
      const s = scores?.[l]?.[h];
      const roles = s ? headBadges(s).filter((x) => x !== 'induction') : [];
      const badgeText = roles.map((x) => ROLE_SHORT[x]).join(' ');
      badge.textContent = badgeText;
      // the accessible name holds the visible badge text too (WCAG 2.5.3, label in name), and the
      // head's key/value group as the grid's own name does
      const shared = headSharing(r.nHead, r.nKvHead ?? r.nHead, h);
      cell.setAttribute(
        'aria-label',
        `${entry.label}, layer ${l}, head ${h}${shared ? ` (${shared})` : ''}${s ? `: ${rolesSentence(s, roles)}` : ''}${badgeText ? `; badge: ${badgeText}` : ''}`,
      );
    }),
  );
  entry.els.caption.textContent = describeHead(r, entry.sel.layer, entry.sel.head, r.T - 1);
  const nKv = r.nKvHead ?? r.nHead;
  const kvPart = entry.kv ? `, ${nKv} key/value head${nKv > 1 ? 's' : ''}` : '';
  entry.els.status.textContent = `${r.nLayer} layers × ${r.nHead} head${r.nHead > 1 ? 's' : ''} of width ${entry.info.config.headSize}${kvPart} · ${r.T} tokens`;
}

// ---- runs and timing -------------------------------------------------------------------------
let runSeq = 0;
async function runAll() {
  const seq = ++runSeq;
  const text = state.text;
  if (!text) return;
  await Promise.all(
    [...state.entries, ...state.kv.entries]
      .filter((e) => e.model)
      .map(async (e) => {
        try {
          const r = await e.model.run(text, { topK: 5 });
          if (seq !== runSeq) return;
          e.result = r;
          renderColumn(e);
        } catch (err) {
          e.els.status.textContent = `Could not run: ${err.message}`;
        }
      }),
  );
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

/** The median time of SPEED_REPS whole runs per model (compare-timing.js), then of a typed token. */
async function timeAll() {
  const seq = ++timingSeq;
  // a head measurement keeps a core busy: time the runs once it is over
  await pruning?.idle();
  if (seq !== timingSeq) return;
  const text = state.text;
  const live = state.entries.filter((e) => e.model);
  for (const e of state.entries) {
    e.speedMs = undefined;
    e.times = [];
  }
  renderTable();
  if (!(await timeRuns(live, text, SPEED_REPS, () => seq !== timingSeq))) return;
  renderTable();
  document.body.dataset.timed = String(Number(document.body.dataset.timed || 0) + 1);
  renderSummary();
  await timeTyped(seq);
  if (seq !== timingSeq) return;
  // after the first timing, the heads each model needs, on the held-out passages
  if (pruning && !pruning.started) {
    pruning.started = true;
    pruning.measure('heldout');
  }
}

/** What typing one token costs in each key/value-head model (compare-timing.js), TYPED_REPS bursts. */
async function timeTyped(seq) {
  const kv = state.kv;
  const live = kv.entries.filter((e) => e.model);
  for (const e of kv.entries) {
    e.typedMs = undefined;
    e.typedTimes = [];
    e.typedComputed = undefined;
  }
  renderKv();
  const text = state.text;
  if (!live.length || !text) return;
  if (!(await timeTypedTokens(kv, live, text, TYPED_REPS, () => seq !== timingSeq))) return;
  renderKv();
  document.body.dataset.kvTimed = String(Number(document.body.dataset.kvTimed || 0) + 1);
}

// ---- how many heads each model needs -------------------------------------------------------------
let pruning = null;
async function setUpPruning(names) {
  const q = params.get('prune');
  const models = q
    ? q
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean)
    : [...names];
  // the demo's default model after the family, when this site has it
  if (!q && !params.get('models')) {
    if ((await modelIndex()).some((m) => m.name === DEFAULT_MODEL) && !models.includes(DEFAULT_MODEL))
      models.push(DEFAULT_MODEL);
  }
  pruning = new PruningPanel({
    host: $('cmp-prune-models'),
    status: $('cmp-prune-status'),
    buttons: { heldout: $('cmp-prune-heldout'), text: $('cmp-prune-text'), cancel: $('cmp-prune-cancel') },
    getModel: (name) => state.entries.find((e) => e.name === name)?.model ?? getModel(name),
    getCard: loadCard,
    getText: () => state.text,
    theme: () => theme,
    options: {
      randomOrders:
        Number.isInteger(Number(params.get('orders'))) && params.get('orders') !== null
          ? Number(params.get('orders'))
          : 8,
      seed: 0,
    },
  });
  pruning.setModels(
    models.map((name) => {
      const entry = state.entries.find((e) => e.name === name);
      return { name, label: entry?.label ?? (name === DEFAULT_MODEL ? `${name} (the demo's model)` : name) };
    }),
  );
  window.headscopePruning = pruning;
}

// ---- the table and the sentence ----------------------------------------------------------------
/** A table from { columns, rows: [{ label, cells }] }: a header row of columns, a row header per row. */
function fillTable(table, columns, rows) {
  const thead = el('thead');
  const hr = el('tr');
  const corner = el('th', '', 'model');
  corner.scope = 'col';
  hr.appendChild(corner);
  for (const c of columns) {
    const th = el('th', '', c);
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
  table.replaceChildren(thead, tbody);
}

function renderTable() {
  const rows = [
    ['Heads per layer', (e) => (e.info ? String(e.info.config.nHead) : '…')],
    ['Width of each head', (e) => (e.info ? String(e.info.config.headSize) : '…')],
    ['Validation loss (nats/token)', (e) => (Number.isFinite(e.valLoss) ? e.valLoss.toFixed(3) : 'no card')],
    ['Validation perplexity', (e) => (Number.isFinite(e.valPpl) ? e.valPpl.toFixed(1) : 'no card')],
    ['Parameters', (e) => (e.params ? fmtParams(e.params) : '…')],
    [
      'run() on this text, median',
      (e) => (Number.isFinite(e.speedMs) ? `${e.speedMs.toFixed(1)} ms` : e.model ? 'measuring…' : '…'),
    ],
  ];
  fillTable(
    $('cmp-table'),
    state.entries.map((e) => e.label),
    rows.map(([label, f]) => ({ label, cells: state.entries.map(f) })),
  );
}

/**
 * A bar chart (charts/bars.js) in `host`, at its width: each bar's number on hover (its <title>), the
 * whole chart's numbers in its accessible name; the table under it has them all.
 */
function showBars(host, data, name) {
  if (!data) {
    host.replaceChildren();
    return;
  }
  const width = Math.max(300, Math.min(600, host.clientWidth || 600));
  const svg = sceneToSvg(barsScene(data, readTheme(host), { width }), { doc: document });
  svg.removeAttribute('width');
  svg.removeAttribute('height');
  svg.setAttribute('role', 'img');
  const all = [];
  for (const bar of svg.querySelectorAll('rect[data-row]')) {
    const title = document.createElementNS('http://www.w3.org/2000/svg', 'title');
    title.textContent = barTitle(data, Number(bar.dataset.row), Number(bar.dataset.column));
    bar.appendChild(title);
    all.push(title.textContent);
  }
  svg.setAttribute('aria-label', `${name}: ${all.join('; ')}`);
  host.replaceChildren(svg);
}

/** The roles chart and table: role counts, best scores, copy accuracy and loss from each model's card. */
function renderRoles() {
  const entries = state.entries.map((e) => ({
    label: e.label,
    card: e.card ?? null,
    nHead: e.info?.config.nHead ?? headsOf(e.name),
  }));
  const { rows, notes } = familyRoleTable(entries);
  fillTable(
    $('cmp-roles'),
    entries.map((e) => e.label),
    rows,
  );
  $('cmp-roles-notes').replaceChildren(...notes.map((n) => el('p', 'compare-note', n)));
  showBars($('cmp-roles-chart'), familyRoleChart(entries), 'Heads of each role and validation loss, per model');
}

function renderSummary() {
  $('cmp-summary').textContent = tradeoffSentence(state.entries);
}

// ---- sharing keys and values ---------------------------------------------------------------------
/** A model's name for the table: a folder URL's last part. */
const shortName = (name) => name.replace(/\/+$/, '').split('/').pop() || name;

/** A column's heading: "kv-2: 2 key/value heads (grouped-query)". */
function kvHeading(label, config) {
  const n = config.nKvHead ?? config.nHead;
  return `${label}: ${n} key/value head${n > 1 ? 's' : ''} (${sharingName(config.nHead, n)})`;
}

/** The table, its notes and the sentence, from the cards and what the page measured. */
function renderKv() {
  const kv = state.kv;
  if (!kv.entries.length) return;
  const { columns, rows, notes } = kvFamilyTable(kv.entries);
  fillTable($('kv-table'), columns, rows);
  showBars($('kv-chart'), kvFamilyChart(kv.entries), 'Key/value cache per token and validation loss, per model');
  $('kv-notes').replaceChildren(...notes.map((n) => el('p', 'compare-note', n)));
  $('kv-summary').textContent = kvTradeoffSentence(kv.entries);
}

/** The section's models: their cards first (the table fills in from them), then one load after another. */
async function startKv() {
  const kv = state.kv;
  const names = await kvModelNames();
  kv.entries = names.map((name, index) => ({
    name,
    index,
    label: shortName(name),
    kv: true,
    card: undefined,
    config: null,
    status: 'loading',
  }));
  if (!kv.entries.length) {
    $('kv-table-wrap').hidden = true;
    $('kv-summary').textContent =
      'This site holds no key/value-head models (family "kv" in models/index.json). ?kv=a,b compares others: names or folder URLs.';
    document.body.dataset.kvState = 'none';
    return;
  }
  document.body.dataset.kvState = 'loading';
  for (const e of kv.entries) buildColumn(e, { host: $('kv-models'), id: `kv-title-${e.index}`, nested: true });
  await Promise.all(
    kv.entries.map(async (e) => {
      e.card = await loadCard(e.name);
    }),
  );
  renderKv();
  for (const e of kv.entries) {
    try {
      e.model = await getModel(sourceOf(e.name));
      e.info = e.model.info;
      e.config = e.info.config;
      e.parameterCount = e.info.parameterCount;
      e.status = 'ready';
      e.els.sec.querySelector('h3').textContent = kvHeading(e.label, e.config);
      e.els.status.textContent = 'Running…';
    } catch (err) {
      e.status = 'error';
      e.els.status.textContent = `Could not load ${e.name}: ${err.message}`;
    }
    renderKv();
  }
  document.body.dataset.kvState = 'ready';
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
  await startKv();
  await setUpPruning(state.entries.map((e) => e.name));
  document.body.dataset.ready = 'true';
  await runAll();
}

window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
  theme = readTheme(document.documentElement);
  for (const e of [...state.entries, ...state.kv.entries]) renderColumn(e);
  pruning?.redraw();
});
window.headscopeCompare = state;
start();
