// The lab's switch-off panel: which heads are off, the mode in which a click on the grid switches a
// head off, and what that costs: the mean loss on the text and the next-token probabilities with
// all heads and without the switched-off ones (runs with `allLogits`, when typing pauses).
import { tokenLabel } from '../runtime/theme.js';
import { formatAblate } from '../../lib/result.js';
import { el } from '../views/dom.js';
import { panel, button, signed } from './panel.js';

const key = (l, h) => `${l}:${h}`;
// Above this the loss is computed when the reader asks (a button), not whenever typing pauses:
// about a quarter of a second of WebAssembly.
const AUTO_LOSS_MAX_GFLOP = 3;
const pct = (p) =>
  p >= 0.1 ? `${(100 * p).toFixed(0)}%` : p >= 0.01 ? `${(100 * p).toFixed(1)}%` : `${(100 * p).toFixed(2)}%`;

function softmax(logits) {
  let m = -Infinity;
  for (const v of logits) if (v > m) m = v;
  let s = 0;
  const p = new Float64Array(logits.length);
  for (let i = 0; i < logits.length; i++) {
    p[i] = Math.exp(logits[i] - m);
    s += p[i];
  }
  for (let i = 0; i < p.length; i++) p[i] /= s;
  return p;
}

/**
 * Options: initialAblate [[layer, head]...], getModel(), getText(),
 * onAblate(pairs): the set of heads changed; onMode(on): switch-off mode changed.
 */
export class SwitchOffPanel {
  constructor(doc, options) {
    this.doc = doc;
    this.o = options;
    this.ablated = new Map(); // "layer:head" -> [layer, head]
    for (const [l, h] of options.initialAblate || []) this.ablated.set(key(l, h), [l, h]);
    this.switchMode = false;
    this.lossSeq = 0;
    const off = panel(
      doc,
      'hs-lab-off',
      'Switch heads off',
      'Turn on "switch-off mode", then click heads in the grid (or press X on a focused head) to run the model without them. Their outputs are removed before W_O; every later layer and the predictions are recomputed.',
    );
    const row = el(doc, 'div', 'hs-lab-row');
    this.modeButton = button(doc, 'hs-lab-mode', 'Switch-off mode: off', () => this.setSwitchMode(!this.switchMode));
    this.modeButton.setAttribute('aria-pressed', 'false');
    this.resetButton = button(doc, 'hs-lab-reset', 'Switch all heads back on', () => this.setAblate([]));
    row.append(this.modeButton, this.resetButton);
    this.offList = el(doc, 'p', 'hs-lab-offlist');
    this.offList.setAttribute('role', 'status');
    this.lossBox = el(doc, 'div', 'hs-lab-loss');
    this.lossBox.setAttribute('aria-live', 'polite');
    off.append(row, this.offList, this.lossBox);
    this.element = off;
    this.#renderOffList();
  }

  /** Cancels a pending loss computation. */
  dispose() {
    clearTimeout(this.lossTimer);
    this.lossSeq++;
  }

  /** The switched-off heads, sorted: [[layer, head], ...]. */
  get ablate() {
    return [...this.ablated.values()].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  }

  isOff(l, h) {
    return this.ablated.has(key(l, h));
  }

  setSwitchMode(on) {
    this.switchMode = on;
    this.modeButton.setAttribute('aria-pressed', on ? 'true' : 'false');
    this.modeButton.textContent = `Switch-off mode: ${on ? 'on' : 'off'}`;
    this.o.onMode?.(on);
  }

  toggle(l, h) {
    const k = key(l, h);
    if (this.ablated.has(k)) this.ablated.delete(k);
    else this.ablated.set(k, [l, h]);
    this.#changed();
  }

  setAblate(pairs) {
    this.ablated.clear();
    for (const [l, h] of pairs) this.ablated.set(key(l, h), [l, h]);
    this.#changed();
  }

  #changed() {
    this.#renderOffList();
    this.o.onAblate?.(this.ablate);
  }

  #renderOffList() {
    const a = this.ablate;
    this.resetButton.disabled = a.length === 0;
    this.offList.textContent = a.length
      ? `Switched off (${a.length}): ${a.map(([l, h]) => `layer ${l} head ${h}`).join(', ')}.`
      : 'All heads are on.';
    if (!a.length) this.lossBox.replaceChildren();
  }

  /** After a render: recompute the loss if the text or the heads changed. */
  scheduleLoss() {
    const text = this.o.getText();
    const ablate = this.ablate;
    const sig = `${formatAblate(ablate)}|${text}`;
    if (sig === this.lossSig) return;
    this.lossSig = sig;
    clearTimeout(this.lossTimer);
    // when typing pauses: these allLogits runs share the worker with the views' runs
    this.lossTimer = setTimeout(() => this.#computeLoss(text, ablate, sig), 350);
  }

  async #computeLoss(text, ablate, sig, { asked = false } = {}) {
    if (!text) return;
    const seq = ++this.lossSeq;
    try {
      const model = await this.o.getModel();
      // a text the reader has typed past (the timer fired as a new text arrived): its runs would only
      // take the engine's cache from the text on screen
      if (seq !== this.lossSeq || text !== this.o.getText()) return;
      // Every position's logits: T x vocabulary x width multiply-adds per run. Small models on
      // short texts take milliseconds; GPT-2 on 1,000 tokens takes seconds, which would hold up the
      // next keystroke's run behind it in the worker: then the reader asks for it.
      const { vocabSize, nEmbd, nPositions } = model.info.config;
      const tokens = Math.min(nPositions, Math.ceil(text.length / 3)); // about 3 characters per token
      const gflop = (2 * tokens * vocabSize * nEmbd * (ablate.length ? 2 : 1)) / 1e9;
      if (!asked && gflop > AUTO_LOSS_MAX_GFLOP) {
        if (seq !== this.lossSeq) return;
        this.lastLoss = null;
        const p = el(this.doc, 'p', 'hs-lab-lossline');
        p.textContent = `The mean loss on this text needs the logits at every position (about ${gflop.toFixed(0)} GFLOP${ablate.length ? ', twice' : ''}), so it is not computed on every pause. `;
        p.append(
          button(this.doc, 'hs-lab-loss-run', 'Compute the loss', () =>
            this.#computeLoss(text, ablate, sig, { asked: true }),
          ),
        );
        this.lossBox.replaceChildren(p);
        return;
      }
      if (asked) this.lossBox.textContent = 'Computing the loss…';
      const base = await model.run(text, { allLogits: true, topK: 5 });
      const abl = ablate.length ? await model.run(text, { allLogits: true, topK: 5, ablate }) : base;
      if (seq !== this.lossSeq) return;
      this.lastLoss = { base: base.loss, ablated: abl.loss, sig };
      this.#renderLoss(base, abl, ablate);
    } catch (e) {
      if (seq === this.lossSeq) this.lossBox.textContent = `Could not compute the loss: ${e.message}`;
    }
  }

  #renderLoss(base, abl, ablate) {
    const d = this.doc;
    const box = this.lossBox;
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
        const td = el(
          d,
          'td',
          ch > 0.0005 ? 'hs-up' : ch < -0.0005 ? 'hs-down' : '',
          `${ch >= 0 ? '+' : '−'}${(100 * Math.abs(ch)).toFixed(1)} pt`,
        );
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
}
