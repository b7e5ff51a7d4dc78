// compare.html's "How many heads does this model need?": for each model (the head-count family and
// the demo's default model), measureHeads() on its shipped held-out passage (models/NAME/heldout.txt)
// or, on request, on the text at the top of the page; one model at a time (two cores, and each
// measurement is hundreds of model runs), each in its model's Web Worker, with progress and Cancel.
// Each model gets the chart (web/component/charts/pruning-curve.js, a scene shown as live SVG), the numbers in a
// sentence, the heads that survive longest with their role badges, a link that opens the demo with
// the heads that can go before +5% switched off (?off=), and the curve as a table.
// Everything reaches the DOM through textContent and attributes (no markup), styles through classes.
import { SceneView } from '../../component/views/scene-view.js';
import {
  pruningScene,
  pruningSummary,
  pruningLabel,
  headRoles,
  ROLE_BADGE,
  RISES,
} from '../../component/charts/pruning-curve.js';
import { allHeadScores } from '../../lib/analysis.js';
import { formatAblate } from '../../lib/result.js';

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

const fmt = (x) => (Number.isFinite(x) ? x.toFixed(3) : '–');
const pct = (r) => `${Math.round(r * 100)}%`;
const headName = ([l, h]) => `L${l}H${h}`;
// the card's heading names the model; the chart's own title is for exported pictures too
const CHART_TITLE = 'Loss as heads are switched off';

/** The URL of the demo with `off` switched off on `text`, for model `name` (a shipped name or a folder URL). */
export function demoLink(name, off, text) {
  const q = new URLSearchParams();
  q.set('model', name);
  if (text) q.set('text', text);
  if (off.length) q.set('off', formatAblate(off));
  return `index.html?${q.toString()}`;
}

/** A model's held-out passage: models/NAME/heldout.txt, or heldout.txt in a folder URL; null when there is none. */
async function heldOutText(name) {
  const url = /^[\w.-]+$/.test(name)
    ? `models/${encodeURIComponent(name)}/heldout.txt`
    : new URL('heldout.txt', new URL(name.endsWith('/') ? name : `${name}/`, location.href)).href;
  try {
    const res = await fetch(url);
    return res.ok ? await res.text() : null;
  } catch {
    return null;
  }
}

export class PruningPanel {
  /**
   * host: the section's element for the models; status: its status line; buttons: { heldout, text,
   * cancel }. getModel(name) -> a worker model, getCard(name) -> card.json or null, getText() -> the
   * text above, theme() -> the page's theme, options: measureHeads() options (randomOrders, seed).
   */
  constructor({ host, status, buttons, getModel, getCard, getText, theme, options = {} }) {
    Object.assign(this, { host, status, buttons, getModel, getCard, getText, theme, options });
    this.entries = [];
    this.reports = {}; // name -> the latest report (for tests and curious readers)
    this.texts = {}; // name -> the text it was measured on
    this.controller = null;
    this.running = null;
    this.started = false; // compare.js starts the first measurement once, after the first timing
    buttons.heldout.addEventListener('click', () => this.measure('heldout'));
    buttons.text.addEventListener('click', () => this.measure('text'));
    buttons.cancel.addEventListener('click', () => this.cancel());
  }

  /** The models, in order: [{ name, label }]. */
  setModels(models) {
    this.host.replaceChildren();
    this.entries = models.map((m, index) => this.#card({ ...m, index }));
  }

  #card(entry) {
    const box = el('article', 'prune-card');
    box.dataset.model = entry.name;
    const title = el('h3', 'prune-title', entry.label);
    title.id = `prune-title-${entry.index}`;
    box.setAttribute('aria-labelledby', title.id);
    const state = el('p', 'prune-state stats', 'Waiting…');
    const bar = el('progress', 'prune-progress');
    bar.max = 1;
    bar.value = 0;
    bar.setAttribute('aria-label', `${entry.label}: measurement progress`);
    bar.hidden = true;
    const chart = el('div', 'prune-chart');
    const summary = el('p', 'prune-summary');
    const survivors = el('p', 'prune-survivors');
    const link = el('a', 'btn prune-demo-link', 'Switch these heads off in the demo');
    link.hidden = true;
    const method = el('p', 'prune-method stats');
    const details = el('details', 'prune-details');
    details.append(el('summary', '', 'The curve in numbers'));
    const table = el('table', 'compare-table prune-table');
    // the table may be wider than a phone: a scrolling region keyboards can reach
    const scroll = el('div', 'prune-table-scroll');
    scroll.tabIndex = 0;
    scroll.setAttribute('role', 'region');
    scroll.setAttribute('aria-label', `${entry.label}: the curve in numbers`);
    scroll.append(table);
    details.append(scroll);
    details.hidden = true;
    box.append(title, state, bar, chart, summary, survivors, link, method, details);
    this.host.appendChild(box);
    return {
      ...entry,
      box,
      els: { title, state, bar, chart, summary, survivors, link, method, details, table },
      view: new SceneView(chart),
    };
  }

  /** Resolves once no measurement runs. */
  idle() {
    return this.running ?? Promise.resolve();
  }

  /** Stops the measurement in progress and those still waiting. */
  cancel() {
    this.controller?.abort();
  }

  /** Measures every model, one after another, on its held-out passage ('heldout') or on the text above ('text'). */
  measure(source = 'heldout') {
    this.cancel();
    const controller = new AbortController();
    this.controller = controller;
    const previous = this.running ?? Promise.resolve();
    const run = previous.then(() => this.#measureAll(source, controller.signal));
    this.running = run;
    run.finally(() => {
      if (this.running === run) this.running = null;
    });
    return run;
  }

  async #measureAll(source, signal) {
    const { buttons } = this;
    buttons.cancel.disabled = false;
    document.body.dataset.pruneState = 'running';
    const aboveText = this.getText();
    for (const e of this.entries) {
      e.els.state.textContent = this.reports[e.name]
        ? 'Waiting… (the chart shows the previous measurement)'
        : 'Waiting…';
      e.els.bar.hidden = true;
      e.box.dataset.state = 'waiting';
    }
    let done = 0;
    for (const [i, e] of this.entries.entries()) {
      if (signal.aborted) break;
      this.status.textContent = `Measuring ${e.label} (${i + 1} of ${this.entries.length})…`;
      try {
        await this.#measureOne(e, source, aboveText, signal);
        done++;
      } catch (err) {
        if (err?.name === 'AbortError') break;
        e.els.state.textContent = `Could not measure: ${err.message}`;
        e.els.bar.hidden = true;
      }
    }
    buttons.cancel.disabled = true;
    const cancelled = signal.aborted;
    for (const e of this.entries) {
      e.els.bar.hidden = true;
      if (cancelled && e.box.dataset.state !== 'done') e.els.state.textContent = 'Cancelled.';
    }
    this.status.textContent = cancelled
      ? `Cancelled: ${done} of ${this.entries.length} models measured.`
      : `Measured ${done} of ${this.entries.length} models, ${source === 'text' ? 'on the text above' : 'each on its own held-out passage'}.`;
    document.body.dataset.pruneState = cancelled ? 'cancelled' : 'done';
  }

  async #measureOne(e, source, aboveText, signal) {
    e.box.dataset.state = 'running';
    const { state, bar } = e.els;
    let text = aboveText;
    let note = 'the text above';
    if (source === 'heldout') {
      const held = await heldOutText(e.name);
      if (held) {
        text = held;
        note = 'its held-out passage';
      } else note = 'the text above (no held-out passage for this model)';
    }
    state.textContent = `Loading ${e.label}…`;
    const model = await this.getModel(e.name);
    if (signal.aborted) throw Object.assign(new Error('cancelled'), { name: 'AbortError' });
    const card = await this.getCard(e.name);
    bar.hidden = false;
    bar.value = 0;
    state.textContent = `Measuring on ${note}: 0%`;
    const t0 = performance.now();
    const report = await model.measureHeads(text, {
      ...this.options,
      signal,
      onProgress: ({ fraction }) => {
        bar.value = fraction;
        state.textContent = `Measuring on ${note}: ${Math.round(100 * fraction)}%`;
      },
    });
    const seconds = (performance.now() - t0) / 1000;
    // live role scores of every head on the measured text, for the badges beside the card's probe scores
    let live = null;
    try {
      live = allHeadScores(await model.run(text, { topK: 1 }));
    } catch {
      /* a text too short for scores */
    }
    this.reports[e.name] = report;
    this.texts[e.name] = text;
    bar.hidden = true;
    state.textContent = `${report.tokens} tokens of ${note}${report.droppedTokens ? ` (the first ${report.droppedTokens} cut to fit the context)` : ''} · ${seconds.toFixed(1)} s in this browser`;
    this.#show(e, report, text, { live, cardHeads: card?.heads ?? null });
    e.box.dataset.state = 'done';
  }

  #show(e, report, text, roles) {
    const s = pruningSummary(report, { survivors: 3 });
    const theme = this.theme();
    e.view.show(pruningScene(report, theme, { title: CHART_TITLE }), pruningLabel(report, e.label));
    const { summary, survivors, link, method, details, table } = e.els;
    const k5 = s.offBefore[RISES[0]];
    const k10 = s.offBefore[RISES[1]];
    const random = report.randomLossMean.length > 0;
    summary.replaceChildren(
      el('strong', '', `${k5} of ${s.n} heads`),
      ` can be switched off before the loss rises ${pct(RISES[0])} (${k10} before ${pct(RISES[1])}). ` +
        `With half of them off (${s.half}): ${fmt(s.halfLoss)} nats in this order` +
        (random
          ? `, ${fmt(s.halfRandomMean)} on average in ${report.randomOrders} random orders (${fmt(s.halfRandomLow)}–${fmt(s.halfRandomHigh)})`
          : '') +
        `; ${fmt(s.loss)} with every head, ${fmt(s.allOffLoss)} with none.`,
    );
    summary.dataset.k5 = String(k5);
    summary.dataset.k10 = String(k10);
    // the heads switched off last, with their roles
    survivors.replaceChildren(el('span', 'prune-label', 'Last to go: '));
    s.survivors.forEach((head, i) => {
      const item = el('span', 'prune-survivor');
      item.dataset.head = `${head[0]}:${head[1]}`;
      item.append(el('span', 'prune-head', headName(head)));
      for (const r of headRoles(head[0], head[1], roles)) item.append(el('span', 'prune-badge', ROLE_BADGE[r] ?? r));
      survivors.append(item);
      if (i < s.survivors.length - 1) survivors.append(', ');
    });
    // the demo with the heads that can go before +5% switched off, on the measured text
    const off = report.order.slice(0, k5);
    link.hidden = false;
    if (off.length) {
      link.href = demoLink(e.name, off, text);
      link.textContent =
        off.length === 1 ? 'Switch this head off in the demo' : `Switch these ${off.length} heads off in the demo`;
      link.removeAttribute('aria-disabled');
    } else {
      link.href = demoLink(e.name, [], text);
      link.textContent = 'Open this text in the demo (no head can go before +5%)';
    }
    link.dataset.off = formatAblate(off);
    method.textContent = `Order: ${report.method}; ${report.randomOrders} random orders from seed ${report.seed}. Loss: mean next-token cross-entropy.`;
    // the curve in numbers
    const thead = el('thead');
    const hr = el('tr');
    for (const c of [
      'heads off',
      'last head off',
      'greedy loss',
      ...(random ? ['random mean', 'random lowest–highest'] : []),
    ]) {
      const th = el('th', '', c);
      th.scope = 'col';
      hr.append(th);
    }
    thead.append(hr);
    const tbody = el('tbody');
    for (let k = 0; k <= s.n; k++) {
      const tr = el('tr');
      const th = el('th', '', String(k));
      th.scope = 'row';
      tr.append(th, el('td', '', k ? headName(report.order[k - 1]) : '–'), el('td', '', fmt(report.prunedLoss[k])));
      if (random)
        tr.append(
          el('td', '', fmt(report.randomLossMean[k])),
          el('td', '', `${fmt(report.randomLossLow[k])}–${fmt(report.randomLossHigh[k])}`),
        );
      tbody.append(tr);
    }
    table.replaceChildren(thead, tbody);
    details.hidden = false;
  }

  /** Draws the charts again (a theme change). */
  redraw() {
    for (const e of this.entries) {
      const r = this.reports[e.name];
      if (r && e.box.dataset.state === 'done')
        e.view.show(pruningScene(r, this.theme(), { title: CHART_TITLE }), pruningLabel(r, e.label));
    }
  }
}
