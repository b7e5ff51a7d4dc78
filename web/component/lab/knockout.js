// The lab's knock-out panel: switches off each head alone (on top of any already off) and ranks
// the heads by how much the mean loss on the text rises without them. Heads that barely change it
// look redundant on this text: more heads cost more, and some end up doing little.
import { knockoutRanking } from '../../lib/analysis.js';
import { el } from '../views/dom.js';
import { panel, button, signed } from './panel.js';

/** Heads below this loss change (nats per token) count as "barely matters" in the knock-out. */
export const REDUNDANT_DELTA = 0.02;

/**
 * Options: getModel() -> Promise<model>, getText(), getAblate() -> [[layer, head]...] already off,
 * onSelect(layer, head) when a head of the ranking is picked.
 */
export class KnockoutPanel {
  constructor(doc, options) {
    this.doc = doc;
    this.o = options;
    const ko = panel(
      doc,
      'hs-lab-ko',
      'Which heads does this text need?',
      'Switches off each head alone (on top of any already off) and ranks heads by how much the mean loss on the text rises without it.',
    );
    this.runButton = button(doc, 'hs-lab-ko-run', 'Knock out each head in turn', () => this.run());
    this.status = el(doc, 'p', 'hs-lab-ko-status');
    this.status.setAttribute('role', 'status');
    this.list = el(doc, 'ol', 'hs-lab-ko-list');
    ko.append(this.runButton, this.status, this.list);
    this.element = ko;
  }

  /** Forgets the ranking (the text or the switched-off heads changed). */
  clear() {
    this.list.replaceChildren();
    this.status.textContent = '';
  }

  async run() {
    const text = this.o.getText();
    if (!text) return;
    const { runButton: koBtn, status: koStatus, list: koList } = this;
    koBtn.disabled = true;
    koStatus.textContent = 'Running the model once per head…';
    koList.replaceChildren();
    const d = this.doc;
    try {
      const model = await this.o.getModel();
      const t0 = performance.now();
      const { baseLoss, heads } = await knockoutRanking(model, text, { ablate: this.o.getAblate() });
      const ms = performance.now() - t0;
      const max = Math.max(1e-6, ...heads.map((x) => Math.abs(x.delta)));
      const redundant = heads.filter((x) => Math.abs(x.delta) < REDUNDANT_DELTA);
      const harmful = heads.filter((x) => x.delta <= -REDUNDANT_DELTA);
      for (const x of heads) {
        const li = el(d, 'li', 'hs-lab-ko-item');
        const b = el(d, 'button', 'hs-lab-ko-head', `L${x.layer} H${x.head}`);
        b.type = 'button';
        b.setAttribute(
          'aria-label',
          `Layer ${x.layer}, head ${x.head}: loss ${signed(x.delta)} nats without it. Select this head.`,
        );
        b.addEventListener('click', () => this.o.onSelect?.(x.layer, x.head));
        const bar = el(d, 'span', 'hs-lab-ko-bar');
        const fill = el(d, 'span', x.delta >= 0 ? 'hs-lab-ko-fill' : 'hs-lab-ko-fill hs-neg');
        fill.style.width = `${((100 * Math.abs(x.delta)) / max).toFixed(1)}%`;
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
      if (harmful.length)
        s += ` Without ${harmful.length === 1 ? 'one head' : `${harmful.length} heads`} the loss on this text even drops: what helps on average can hurt on one text.`;
      s += ` (${heads.length + 1} runs in ${(ms / 1000).toFixed(1)} s.)`;
      koStatus.textContent = s;
      koList.dataset.ready = 'true';
    } catch (e) {
      koStatus.textContent = `The knock-out could not run: ${e.message}`;
    } finally {
      koBtn.disabled = false;
    }
  }
}
