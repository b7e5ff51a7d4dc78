// The "lab" (issue 6), shared by the demo page (web/demo/lab.js) and the <headscope-lab> element:
//   - switch heads off: click / keyboard on the grid's cells; the views re-run with `ablate`;
//     the change in the next-token probabilities and in the mean loss on the text is shown
//   - "knock out each head in turn": knockoutRanking() from the package's analysis module
//   - head roles computed live: badges on the grid cells (allHeadScores + headBadges), with the
//     induction score taken from a repeated random sequence (inductionProbeText), and a legend
//     documenting every score's formula and threshold
//   - predict, then reveal: hide a head's pattern, ask which token a token attends to, reveal
// Built on the package's public API only: the worker model (loadModelInWorker via getModel) and
// `headscope/analysis` (./analysis.js next to the bundle, like ./headscope-worker.js).
// Tokens reach the DOM only through textContent.
import { ROLE_THRESHOLDS, ROLE_DESCRIPTIONS, allHeadScores, headBadges, inductionProbeText, knockoutRanking } from './analysis.js';
import { tokenLabel, tokenWords, quoteToken } from './headscope-view.js';

/** Short badge text per role (shown on the grid cells). */
export const ROLE_SHORT = Object.freeze({
  previous: 'prev', first: 'sink', self: 'self', duplicate: 'dup', induction: 'ind', broad: 'broad',
});
/** The formula of each score, in words and symbols (A = the head's attention, row t = query). */
export const ROLE_FORMULAS = Object.freeze({
  previous: 'mean over tokens t ≥ 1 of A[t][t−1]',
  first: 'mean over tokens t ≥ 1 of A[t][0]',
  self: 'mean over tokens t ≥ 1 of A[t][t]',
  duplicate: 'mean over tokens with an earlier copy of Σ A[t][j] over earlier copies j',
  induction: 'on a random word sequence repeated twice: mean over the second copy of A[t][j+1], j = the token\'s first occurrence',
  broad: 'mean over tokens t ≥ 1 of the entropy of A[t] divided by ln(t+1)',
});
export const ROLE_NAMES = Object.freeze({
  previous: 'previous token', first: 'first token (sink)', self: 'self', duplicate: 'duplicate token',
  induction: 'induction', broad: 'broad',
});

/**
 * Calls `fn` once, in a task after the next frame has been painted (so that work which can wait,
 * such as the role scores, never delays the frame showing a new result). Pages that get no frames
 * (hidden tabs) run it after 200 ms. Returns a function that cancels the call.
 */
function afterNextPaint(fn) {
  let done = false;
  const run = () => { if (!done) { done = true; fn(); } };
  requestAnimationFrame(() => setTimeout(run, 0));
  const timer = setTimeout(run, 200);
  return () => { done = true; clearTimeout(timer); };
}

/** Heads below this loss change (nats per token) count as "barely matters" in the knock-out. */
export const REDUNDANT_DELTA = 0.02;

const key = (l, h) => `${l}:${h}`;

function el(doc, tag, cls, text) {
  const e = doc.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function softmax(logits) {
  let m = -Infinity;
  for (const v of logits) if (v > m) m = v;
  let s = 0;
  const p = new Float64Array(logits.length);
  for (let i = 0; i < logits.length; i++) { p[i] = Math.exp(logits[i] - m); s += p[i]; }
  for (let i = 0; i < p.length; i++) p[i] /= s;
  return p;
}

const pct = (p) => (p >= 0.1 ? `${(100 * p).toFixed(0)}%` : p >= 0.01 ? `${(100 * p).toFixed(1)}%` : `${(100 * p).toFixed(2)}%`);
const signed = (x, d = 3) => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(d)}`;

/** Parses "0:1,2:3" into [[0,1],[2,3]]. */
export function parseAblate(s) {
  if (!s) return [];
  const out = [];
  for (const part of String(s).split(',')) {
    const m = /^\s*(\d+)\s*[:.]\s*(\d+)\s*$/.exec(part);
    if (m && !out.some(([l, h]) => l === +m[1] && h === +m[2])) out.push([+m[1], +m[2]]);
  }
  return out;
}
export function formatAblate(pairs) {
  return pairs.map(([l, h]) => `${l}:${h}`).join(',');
}

/** Role scores of every head of `result`, with the induction score from the probe run. */
// (the induction score always comes from the probe: on ordinary text few tokens repeat, and a
// handful of rows would decide it; NaN, so no badge, until the probe has run)
export function liveScores(result, probeScores) {
  const scores = allHeadScores(result);
  for (let l = 0; l < scores.length; l++) {
    for (let h = 0; h < scores[l].length; h++) scores[l][h].induction = probeScores?.[l]?.[h]?.induction ?? NaN;
  }
  return scores;
}

/** The sentence for a head's badges, e.g. "found after training: attends to the previous token (0.83)". */
export function rolesSentence(scores, roles) {
  if (!roles.length) return 'no strong pattern found on this text';
  return `found after training: ${roles.map((r) => `${ROLE_DESCRIPTIONS[r]} (${scores[r].toFixed(2)})`).join('; ')}`;
}

/**
 * The lab's controller. `host`: an element to build the lab panel in. Options:
 *   doc, getModel: () => Promise<WorkerModel>, grid: the GridView whose cells get badges and
 *   switch-off clicks, gridHost: the element holding that grid, getResult(), getText(),
 *   getState() -> { layer, head }, onAblate(pairs): re-run the views with these heads off,
 *   onHidePattern(layer, head | null): hide/unhide one head's pattern elsewhere on the page,
 *   onSelect(layer, head): focus a head (for the knock-out list).
 */
export class Lab {
  constructor(host, opts) {
    this.host = host;
    this.doc = host.ownerDocument;
    this.o = opts;
    this.ablated = new Map(); // key -> [l, h]
    for (const [l, h] of opts.initialAblate || []) this.ablated.set(key(l, h), [l, h]);
    this.switchMode = false;
    this.probeScores = null;
    this.probePromise = null;
    this.scores = null;
    this.lossSeq = 0;
    this.quiz = null;
    this.#build();
    this.#wireGrid();
  }

  /** The switched-off heads, sorted: [[layer, head], ...]. */
  get ablate() {
    return [...this.ablated.values()].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  }

  // ---- DOM --------------------------------------------------------------------------------
  #build() {
    const d = this.doc;
    const root = el(d, 'div', 'hs-lab');
    // switch heads off
    const off = el(d, 'div', 'hs-lab-block hs-lab-off');
    off.appendChild(el(d, 'h3', 'hs-lab-title', 'Switch heads off'));
    off.appendChild(el(d, 'p', 'hs-lab-explain', 'Turn on "switch-off mode", then click heads in the grid (or press X on a focused head) to run the model without them. Their outputs are removed before W_O; every later layer and the predictions are recomputed.'));
    const row = el(d, 'div', 'hs-lab-row');
    const mode = el(d, 'button', 'hs-lab-btn hs-lab-mode', 'Switch-off mode: off');
    mode.type = 'button';
    mode.setAttribute('aria-pressed', 'false');
    mode.addEventListener('click', () => this.setSwitchMode(!this.switchMode));
    const reset = el(d, 'button', 'hs-lab-btn hs-lab-reset', 'Switch all heads back on');
    reset.type = 'button';
    reset.addEventListener('click', () => this.setAblate([]));
    row.append(mode, reset);
    off.appendChild(row);
    const offList = el(d, 'p', 'hs-lab-offlist');
    offList.setAttribute('role', 'status');
    const loss = el(d, 'div', 'hs-lab-loss');
    loss.setAttribute('aria-live', 'polite');
    off.append(offList, loss);
    // knock-out
    const ko = el(d, 'div', 'hs-lab-block hs-lab-ko');
    ko.appendChild(el(d, 'h3', 'hs-lab-title', 'Which heads does this text need?'));
    ko.appendChild(el(d, 'p', 'hs-lab-explain', 'Switches off each head alone (on top of any already off) and ranks heads by how much the mean loss on the text rises without it.'));
    const koBtn = el(d, 'button', 'hs-lab-btn hs-lab-ko-run', 'Knock out each head in turn');
    koBtn.type = 'button';
    koBtn.addEventListener('click', () => this.runKnockout());
    const koStatus = el(d, 'p', 'hs-lab-ko-status');
    koStatus.setAttribute('role', 'status');
    const koList = el(d, 'ol', 'hs-lab-ko-list');
    ko.append(koBtn, koStatus, koList);
    // roles legend
    const roles = el(d, 'div', 'hs-lab-block hs-lab-roles');
    roles.appendChild(el(d, 'h3', 'hs-lab-title', 'What the heads turned out to do'));
    roles.appendChild(el(d, 'p', 'hs-lab-explain', 'Badges on the grid are measured live on the current text (induction on a random word sequence repeated twice). They describe patterns found after training, not jobs anyone assigned; a head can show several, and on other text it may behave differently. A badge appears when a score reaches its threshold (in small grid cells, as a dot; hover or focus the head for its words):'));
    // a compact key, always visible; the formulas and thresholds one click away
    const key = el(d, 'ul', 'hs-lab-key');
    for (const r of Object.keys(ROLE_THRESHOLDS)) {
      const li = el(d, 'li');
      li.append(el(d, 'span', 'hs-lab-badge', ROLE_SHORT[r]), d.createTextNode(` ${ROLE_NAMES[r]}`));
      key.appendChild(li);
    }
    const details = el(d, 'details', 'hs-lab-formulas');
    details.appendChild(el(d, 'summary', '', 'How each score is computed (A = the head\'s attention; row t = the token that looks)'));
    const legend = el(d, 'dl', 'hs-lab-legend');
    for (const r of Object.keys(ROLE_THRESHOLDS)) {
      const dt = el(d, 'dt');
      dt.append(el(d, 'span', 'hs-lab-badge', ROLE_SHORT[r]), d.createTextNode(` ${ROLE_NAMES[r]}: ${ROLE_DESCRIPTIONS[r]}`));
      const dd = el(d, 'dd', '', `score = ${ROLE_FORMULAS[r]}; badge at ≥ ${ROLE_THRESHOLDS[r]}`);
      legend.append(dt, dd);
    }
    details.appendChild(legend);
    const rolesStatus = el(d, 'p', 'hs-lab-roles-status');
    rolesStatus.setAttribute('role', 'status');
    roles.append(key, details, rolesStatus);
    // predict, then reveal
    const quiz = el(d, 'div', 'hs-lab-block hs-lab-quiz');
    quiz.appendChild(el(d, 'h3', 'hs-lab-title', 'Predict, then reveal'));
    quiz.appendChild(el(d, 'p', 'hs-lab-explain', 'Guess where a head looks before you see it. The head\'s pattern is hidden until you answer.'));
    const quizRow = el(d, 'div', 'hs-lab-row');
    const quizStart = el(d, 'button', 'hs-lab-btn hs-lab-quiz-start', 'Quiz me on the selected head');
    quizStart.type = 'button';
    quizStart.addEventListener('click', () => this.startQuiz(false));
    const quizRandom = el(d, 'button', 'hs-lab-btn hs-lab-quiz-random', 'Quiz me on a surprising head');
    quizRandom.type = 'button';
    quizRandom.addEventListener('click', () => this.startQuiz(true));
    quizRow.append(quizStart, quizRandom);
    const quizBody = el(d, 'div', 'hs-lab-quiz-body');
    quiz.append(quizRow, quizBody);
    root.append(off, ko, roles, quiz);
    this.host.appendChild(root);
    this.els = { root, mode, reset, offList, loss, koBtn, koStatus, koList, rolesStatus, quizBody, quizStart };
    this.#renderOffList();
  }

  #wireGrid() {
    const gh = this.o.gridHost;
    // capture phase: runs before the grid's own click (which selects a head)
    gh.addEventListener('click', (e) => {
      if (!this.switchMode) return;
      const c = e.target.closest?.('[data-layer]');
      if (!c) return;
      e.stopPropagation();
      e.preventDefault();
      this.toggle(Number(c.dataset.layer), Number(c.dataset.head));
      c.focus();
    }, true);
    gh.addEventListener('keydown', (e) => {
      const c = e.target.closest?.('[data-layer]');
      if (!c) return;
      const k = e.key;
      if (k === 'x' || k === 'X' || k === 'Delete' || (this.switchMode && (k === 'Enter' || k === ' '))) {
        e.stopPropagation();
        e.preventDefault();
        this.toggle(Number(c.dataset.layer), Number(c.dataset.head));
      }
    }, true);
  }

  setSwitchMode(on) {
    this.switchMode = on;
    this.els.mode.setAttribute('aria-pressed', on ? 'true' : 'false');
    this.els.mode.textContent = `Switch-off mode: ${on ? 'on' : 'off'}`;
    this.o.gridHost.classList.toggle('hs-switch-mode', on);
    this.decorate();
  }

  toggle(l, h) {
    const k = key(l, h);
    if (this.ablated.has(k)) this.ablated.delete(k); else this.ablated.set(k, [l, h]);
    this.#changed();
  }

  setAblate(pairs) {
    this.ablated.clear();
    for (const [l, h] of pairs) this.ablated.set(key(l, h), [l, h]);
    this.#changed();
  }

  #changed() {
    this.#renderOffList();
    this.decorate();
    this.o.onAblate?.(this.ablate);
    this.els.koList.replaceChildren();
    this.els.koStatus.textContent = '';
  }

  #renderOffList() {
    const a = this.ablate;
    this.els.reset.disabled = a.length === 0;
    this.els.offList.textContent = a.length
      ? `Switched off (${a.length}): ${a.map(([l, h]) => `layer ${l} head ${h}`).join(', ')}.`
      : 'All heads are on.';
    if (!a.length) this.els.loss.replaceChildren();
  }

  // ---- after every render of a result -------------------------------------------------------
  /** Call after the views rendered `result` (which was run with the current ablation). */
  update(result) {
    // Scores once per result (a page re-renders one result for every hover or selection), computed
    // just after the frame that paints the result (a few ms for 32 heads x 128 tokens), so typing
    // stays within a frame; until then the cells keep the previous badges.
    if (result !== this.result) {
      this.result = result;
      this.cancelScore?.();
      this.cancelScore = afterNextPaint(() => this.#score());
    }
    this.#ensureProbe();
    this.decorate();
    this.#scheduleLoss();
    if (this.quiz && this.quiz.text !== result.text) this.endQuiz();
  }

  #score() {
    const r = this.result;
    if (!r) return;
    try {
      this.scores = liveScores(r, this.probeScores);
    } catch { this.scores = null; }
    this.scoresResult = r;
    this.decorate();
  }

  #ensureProbe() {
    if (this.probePromise) return;
    this.els.rolesStatus.textContent = 'Measuring induction on a repeated random word sequence…';
    this.probePromise = (async () => {
      const model = await this.o.getModel();
      const probe = await inductionProbeText(model, { length: 16, seed: 1 });
      const r = await model.run(probe, { topK: 1 });
      this.probeScores = allHeadScores(r);
      this.probeText = probe;
      this.els.rolesStatus.textContent = `Induction measured on: "${probe.trim()}" (16 random words, twice).`;
      if (this.result) this.#score();
      this.o.onRoles?.();
    })().catch((e) => {
      this.els.rolesStatus.textContent = `The induction probe could not run: ${e.message}`;
    });
  }

  /** Crossed-out cells, badges and accessible names on the grid. */
  decorate() {
    const cells = this.o.grid?.cells;
    if (!cells) return;
    const res = this.result;
    // called after every render: write only what changed (each write makes the browser restyle)
    const setAttr = (node, name, value) => { if (node.getAttribute(name) !== value) node.setAttribute(name, value); };
    cells.forEach((row, l) => row.forEach((entry, h) => {
      const { cell, badge } = entry;
      const off = this.ablated.has(key(l, h));
      if (cell.classList.contains('hs-ablated') !== off) cell.classList.toggle('hs-ablated', off);
      setAttr(cell, 'data-ablated', off ? 'true' : 'false');
      const s = this.scores?.[l]?.[h];
      const roles = s ? headBadges(s) : [];
      const badgeText = roles.map((r) => ROLE_SHORT[r]).join(' ');
      if (badge.textContent !== badgeText) badge.textContent = badgeText;
      setAttr(cell, 'data-roles', roles.join(' '));
      const hidden = res && this.quiz && this.quiz.layer === l && this.quiz.head === h && !this.quiz.revealed;
      const parts = [`Layer ${l}, head ${h}`];
      if (off) parts.push('switched off');
      if (hidden) parts.push('pattern hidden until you answer the question');
      else if (s) parts.push(rolesSentence(s, roles));
      if (this.switchMode) parts.push(off ? 'press Enter to switch on' : 'press Enter to switch off');
      setAttr(cell, 'aria-label', parts.join(': '));
      let title;
      if (hidden) {
        title = `Layer ${l}, head ${h}: hidden until you answer`;
      } else {
        // the grid's own title for the cell (GridView keeps it as entry.title), then the roles
        const base = entry.title ?? cell.title.split(' · found after training')[0];
        title = roles.length ? `${base} · found after training: ${roles.map((x) => ROLE_NAMES[x]).join(', ')}` : base;
      }
      if (cell.classList.contains('hs-pattern-hidden') !== !!hidden) cell.classList.toggle('hs-pattern-hidden', !!hidden);
      if (cell.title !== title) cell.title = title;
    }));
  }

  // ---- loss and next-token change -----------------------------------------------------------
  #scheduleLoss() {
    const text = this.o.getText();
    const ablate = this.ablate;
    const sig = `${formatAblate(ablate)}|${text}`;
    if (sig === this.lossSig) return;
    this.lossSig = sig;
    clearTimeout(this.lossTimer);
    // when typing pauses: these allLogits runs share the worker with the views' runs
    this.lossTimer = setTimeout(() => this.#computeLoss(text, ablate, sig), 350);
  }

  async #computeLoss(text, ablate, sig) {
    if (!text) return;
    const seq = ++this.lossSeq;
    try {
      const model = await this.o.getModel();
      const base = await model.run(text, { allLogits: true, topK: 5 });
      const abl = ablate.length ? await model.run(text, { allLogits: true, topK: 5, ablate }) : base;
      if (seq !== this.lossSeq) return;
      this.lastLoss = { base: base.loss, ablated: abl.loss, sig };
      this.#renderLoss(base, abl, ablate);
    } catch (e) {
      if (seq === this.lossSeq) this.els.loss.textContent = `Could not compute the loss: ${e.message}`;
    }
  }

  #renderLoss(base, abl, ablate) {
    const d = this.doc;
    const box = this.els.loss;
    const frag = d.createDocumentFragment();
    const lossP = el(d, 'p', 'hs-lab-lossline');
    if (!(base.T > 1)) {
      lossP.textContent = 'The loss needs at least two tokens of text.';
    } else if (!ablate.length) {
      lossP.textContent = `Mean loss on this text (how surprised the model is by each next token): ${base.loss.toFixed(3)} nats per token.`;
    } else {
      const dl = abl.loss - base.loss;
      lossP.textContent = `Mean loss on this text: ${base.loss.toFixed(3)} with all heads → ${abl.loss.toFixed(3)} nats per token with ${ablate.length} switched off (${signed(dl)}; ${dl > 0.005 ? 'the text gets harder to predict' : dl < -0.005 ? 'slightly easier, by chance on this text' : 'almost no change'}).`;
    }
    lossP.dataset.base = String(base.loss);
    lossP.dataset.ablated = String(abl.loss);
    frag.appendChild(lossP);
    if (ablate.length) {
      const pb = softmax(base.logitsLast);
      const pa = softmax(abl.logitsLast);
      const table = el(d, 'table', 'hs-lab-next');
      const cap = el(d, 'caption', '', 'Next-token probability with all heads → with the heads off');
      table.appendChild(cap);
      const thead = el(d, 'thead');
      const hr = el(d, 'tr');
      for (const t of ['token', 'all heads', 'heads off', 'change']) hr.appendChild(el(d, 'th', '', t));
      thead.appendChild(hr);
      table.appendChild(thead);
      const tb = el(d, 'tbody');
      const ids = [...new Set([...base.topNext.slice(0, 4), ...abl.topNext.slice(0, 3)].map((p) => p.id))];
      const names = new Map([...base.topNext, ...abl.topNext].map((p) => [p.id, p.token]));
      for (const id of ids) {
        const tr = el(d, 'tr');
        tr.appendChild(el(d, 'td', 'hs-lab-tok', tokenLabel(names.get(id), 18)));
        tr.appendChild(el(d, 'td', '', pct(pb[id])));
        tr.appendChild(el(d, 'td', '', pct(pa[id])));
        const ch = pa[id] - pb[id];
        const td = el(d, 'td', ch > 0.0005 ? 'hs-up' : ch < -0.0005 ? 'hs-down' : '', `${ch >= 0 ? '+' : '−'}${(100 * Math.abs(ch)).toFixed(1)} pt`);
        tr.appendChild(td);
        tb.appendChild(tr);
      }
      table.appendChild(tb);
      frag.appendChild(table);
    }
    box.replaceChildren(frag);
    box.dataset.ready = 'true';
    box.dataset.ablate = formatAblate(ablate); // which heads these numbers are for
  }

  // ---- knock-out ----------------------------------------------------------------------------
  async runKnockout() {
    const text = this.o.getText();
    if (!text) return;
    const { koBtn, koStatus, koList } = this.els;
    koBtn.disabled = true;
    koStatus.textContent = 'Running the model once per head…';
    koList.replaceChildren();
    const d = this.doc;
    try {
      const model = await this.o.getModel();
      const t0 = performance.now();
      const { baseLoss, heads } = await knockoutRanking(model, text, { ablate: this.ablate });
      const ms = performance.now() - t0;
      const max = Math.max(1e-6, ...heads.map((x) => Math.abs(x.delta)));
      const redundant = heads.filter((x) => Math.abs(x.delta) < REDUNDANT_DELTA);
      const harmful = heads.filter((x) => x.delta <= -REDUNDANT_DELTA);
      for (const x of heads) {
        const li = el(d, 'li', 'hs-lab-ko-item');
        const b = el(d, 'button', 'hs-lab-ko-head', `L${x.layer} H${x.head}`);
        b.type = 'button';
        b.setAttribute('aria-label', `Layer ${x.layer}, head ${x.head}: loss ${signed(x.delta)} nats without it. Select this head.`);
        b.addEventListener('click', () => this.o.onSelect?.(x.layer, x.head));
        const bar = el(d, 'span', 'hs-lab-ko-bar');
        const fill = el(d, 'span', x.delta >= 0 ? 'hs-lab-ko-fill' : 'hs-lab-ko-fill hs-neg');
        fill.style.width = `${(100 * Math.abs(x.delta) / max).toFixed(1)}%`;
        bar.appendChild(fill);
        const val = el(d, 'span', 'hs-lab-ko-val', signed(x.delta));
        li.append(b, bar, val);
        if (Math.abs(x.delta) < REDUNDANT_DELTA) {
          li.classList.add('hs-redundant');
          li.appendChild(el(d, 'span', 'hs-lab-ko-note', 'barely matters'));
        } else if (x.delta < 0) {
          li.appendChild(el(d, 'span', 'hs-lab-ko-note', 'loss drops without it'));
        }
        li.dataset.layer = String(x.layer);
        li.dataset.head = String(x.head);
        li.dataset.delta = String(x.delta);
        koList.appendChild(li);
      }
      const top = heads[0];
      let s = `Loss with all heads on: ${baseLoss.toFixed(3)} nats per token. Most needed: layer ${top.layer} head ${top.head} (${signed(top.delta)} without it).`;
      s += redundant.length
        ? ` ${redundant.length} of ${heads.length} heads change the loss by less than ${REDUNDANT_DELTA} nats when switched off alone: on this text they look redundant (some heads end up doing little after training).`
        : ` Every head changes the loss by at least ${REDUNDANT_DELTA} nats here.`;
      if (harmful.length) s += ` Without ${harmful.length === 1 ? 'one head' : `${harmful.length} heads`} the loss on this text even drops: what helps on average can hurt on one text.`;
      s += ` (${heads.length + 1} runs in ${(ms / 1000).toFixed(1)} s.)`;
      koStatus.textContent = s;
      koList.dataset.ready = 'true';
    } catch (e) {
      koStatus.textContent = `The knock-out could not run: ${e.message}`;
    } finally {
      koBtn.disabled = false;
    }
  }

  // ---- predict, then reveal -----------------------------------------------------------------
  /** Starts a question on the selected head (or, with `surprising`, on a confident head/token). */
  startQuiz(surprising) {
    const r = this.result;
    if (!r || r.T < 3) {
      this.els.quizBody.textContent = 'Type a longer text first (at least three tokens).';
      return;
    }
    const T = r.T;
    const at = (l, h, q, k) => r.attentionAll[((l * r.nHead + h) * T + q) * T + k];
    const argmax = (l, h, q) => {
      let best = 0;
      for (let k = 1; k <= q; k++) if (at(l, h, q, k) > at(l, h, q, best)) best = k;
      return best;
    };
    let layer, head, q;
    if (surprising) {
      // a head and token with a clear answer: the strongest key takes >= 0.4 and is neither the
      // token itself, the previous token nor the first token (the interesting guesses); failing
      // that, any clear answer; failing that (a model with only diffuse heads), the clearest ones
      const tiers = [[], [], []];
      const all = [];
      for (let l = 0; l < r.nLayer; l++) for (let h = 0; h < r.nHead; h++) for (let t = 2; t < T; t++) {
        const k = argmax(l, h, t);
        const w = at(l, h, t, k);
        all.push([l, h, t, w]);
        if (w >= 0.4 && k !== t && k !== t - 1 && k !== 0) tiers[0].push([l, h, t]);
        else if (w >= 0.4) tiers[1].push([l, h, t]);
        else if (w >= 0.25) tiers[2].push([l, h, t]);
      }
      all.sort((x, y) => y[3] - x[3]);
      const cands = tiers.find((c) => c.length) || all.slice(0, 20);
      this.quizCount = (this.quizCount || 0) + 1;
      [layer, head, q] = cands[(this.quizCount * 7919) % cands.length];
    } else {
      const s = this.o.getState();
      layer = s.layer; head = s.head;
      q = Number.isInteger(s.token) && s.token >= 1 && s.token < T ? s.token : T - 1;
    }
    this.quiz = { layer, head, q, text: r.text, revealed: false, answer: argmax(layer, head, q) };
    this.o.onHidePattern?.(layer, head);
    this.decorate();
    this.#renderQuiz();
  }

  #renderQuiz() {
    const d = this.doc;
    const { layer, head, q, revealed, answer, guess } = this.quiz;
    const r = this.result;
    const body = this.els.quizBody;
    const frag = d.createDocumentFragment();
    const qp = el(d, 'p', 'hs-lab-quiz-q');
    qp.append(d.createTextNode(`Layer ${layer}, head ${head} (its pattern is hidden). In this head, which token does `),
      el(d, 'strong', 'hs-lab-tok', quoteToken(r.tokens[q].text)), d.createTextNode(` (token ${q}) attend to most?`));
    frag.appendChild(qp);
    const choices = el(d, 'div', 'hs-lab-choices');
    choices.setAttribute('role', 'group');
    choices.setAttribute('aria-label', 'Earlier tokens to choose from');
    const T = r.T;
    for (let k = 0; k <= q; k++) {
      const b = el(d, 'button', 'hs-lab-choice', tokenLabel(r.tokens[k].text, 18));
      b.type = 'button';
      b.dataset.index = String(k);
      b.setAttribute('aria-label', `token ${k}: ${tokenWords(r.tokens[k].text)}${k === q ? ' (itself)' : ''}`);
      if (revealed) {
        b.disabled = true;
        const w = r.attentionAll[((layer * r.nHead + head) * T + q) * T + k];
        b.appendChild(el(d, 'span', 'hs-lab-choice-w', w.toFixed(2)));
        b.style.setProperty('--w', String(w));
        b.classList.add('hs-revealed');
        if (k === answer) b.classList.add('hs-answer');
        if (k === guess) b.classList.add('hs-guess');
      } else {
        b.addEventListener('click', () => this.answerQuiz(k));
      }
      choices.appendChild(b);
    }
    frag.appendChild(choices);
    const res = el(d, 'p', 'hs-lab-quiz-result');
    res.setAttribute('role', 'status');
    if (revealed) {
      const w = r.attentionAll[((layer * r.nHead + head) * T + q) * T + answer];
      const target = answer === q ? 'itself' : quoteToken(r.tokens[answer].text);
      res.textContent = guess === answer
        ? `Right: it attends most to ${target} (weight ${w.toFixed(2)}). The numbers under the tokens are the head's weights; the grid and detail view show the pattern again.`
        : `Not quite: it attends most to ${target} (weight ${w.toFixed(2)}); your guess got ${r.attentionAll[((layer * r.nHead + head) * T + q) * T + guess].toFixed(2)}. The numbers under the tokens are the head's weights.`;
      if (w < 0.2) res.textContent += ' This head spreads its attention thinly here: no token gets much more than the others, so there was no clear answer.';
      const again = el(d, 'button', 'hs-lab-btn hs-lab-quiz-next', 'Another question');
      again.type = 'button';
      again.addEventListener('click', () => this.startQuiz(true));
      frag.append(res, again);
    } else {
      frag.appendChild(res);
    }
    body.replaceChildren(frag);
    body.dataset.state = revealed ? 'revealed' : 'asking';
    const focusEl = revealed ? body.querySelector('.hs-lab-quiz-next') : body.querySelector('.hs-lab-choice');
    focusEl?.focus();
  }

  answerQuiz(k) {
    if (!this.quiz || this.quiz.revealed) return;
    this.quiz.guess = k;
    this.quiz.revealed = true;
    this.o.onHidePattern?.(null, null);
    this.decorate();
    this.#renderQuiz();
  }

  endQuiz() {
    if (!this.quiz) return;
    const wasHidden = !this.quiz.revealed;
    this.quiz = null;
    this.els.quizBody.replaceChildren();
    delete this.els.quizBody.dataset.state;
    if (wasHidden) this.o.onHidePattern?.(null, null);
    this.decorate();
  }
}
