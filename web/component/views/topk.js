// Next-token predictions: the top k tokens with their probabilities, as an HTML list.
import { tokenLabel } from '../theme.js';
import { el } from './scene-view.js';

/** Next-token predictions, top-k with probabilities (HTML list). */
export class TopKView {
  constructor(host) {
    this.host = host;
    this.doc = host.ownerDocument;
    this.list = el(this.doc, 'ol', 'hs-topk');
    host.appendChild(this.list);
  }

  update(result) {
    // one row per prediction, reused: only changed texts and widths are written
    const rows = this.rows ?? (this.rows = []);
    const n = result.topNext.length;
    for (let i = 0; i < n; i++) {
      const p = result.topNext[i];
      let r = rows[i];
      if (!r) {
        const li = el(this.doc, 'li', 'hs-topk-item');
        const token = el(this.doc, 'span', 'hs-topk-token');
        const bar = el(this.doc, 'span', 'hs-topk-bar');
        const fill = el(this.doc, 'span', 'hs-topk-fill');
        bar.appendChild(fill);
        const prob = el(this.doc, 'span', 'hs-topk-prob');
        li.append(token, bar, prob);
        r = rows[i] = { li, token, fill, prob, text: null, width: null, pct: null };
      }
      if (r.li.parentNode !== this.list) this.list.appendChild(r.li);
      const text = tokenLabel(p.token, 20);
      if (r.text !== text) { r.token.textContent = text; r.text = text; } // text, never markup
      const width = `${(100 * p.prob).toFixed(2)}%`;
      if (r.width !== width) { r.fill.style.width = width; r.width = width; } // CSSOM: allowed under a strict CSP
      const pct = formatPercent(p.prob);
      if (r.pct !== pct) { r.prob.textContent = pct; r.pct = pct; }
    }
    for (let i = n; i < rows.length; i++) rows[i].li.remove();
  }
}

/** 0.4213 -> "42.1%", 0.000123 -> "0.012%". */
export function formatPercent(p) {
  const v = 100 * p;
  if (v >= 0.1) return `${v.toFixed(1)}%`;
  if (v <= 0) return '0%';
  return `${v.toPrecision(2)}%`;
}
