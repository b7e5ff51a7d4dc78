// Next-token predictions: the top k tokens with their probabilities, as an HTML list.
import { tokenLabel } from '../runtime/theme.js';
import { el, setFill } from './dom.js';

/**
 * Next-token predictions, top-k with probabilities (HTML list). While the model writes, the
 * distribution the last token was drawn from instead (after temperature, top-k and top-p), with the
 * drawn token marked in words as well as in colour.
 */
export class TopKView {
  constructor(host) {
    this.host = host;
    this.doc = host.ownerDocument;
    this.list = el(this.doc, 'ol', 'hs-topk');
    host.appendChild(this.list);
  }

  /**
   * drawn: { id, token, prob, distribution: { ids, probs, top } } (a generated token, as generate()'s
   * onToken hears it): its distribution's most likely tokens, and the drawn one (with its rank when
   * it is not among them).
   */
  update(result, { drawn = null } = {}) {
    let predictions = result.topNext;
    let drawnAt = -1;
    let rank = -1;
    if (drawn) {
      predictions = drawn.distribution.top;
      drawnAt = predictions.findIndex((p) => p.id === drawn.id);
      if (drawnAt < 0) {
        rank = drawn.distribution.ids.indexOf(drawn.id) + 1;
        predictions = [...predictions, { id: drawn.id, token: drawn.token, prob: drawn.prob }];
        drawnAt = predictions.length - 1;
      }
    }
    const drawing = !!drawn;
    if (this.list.classList.contains('hs-topk-drawing') !== drawing)
      this.list.classList.toggle('hs-topk-drawing', drawing);
    // one row per prediction, reused: only changed texts and widths are written
    const rows = this.rows ?? (this.rows = []);
    const n = predictions.length;
    for (let i = 0; i < n; i++) {
      const p = predictions[i];
      let r = rows[i];
      if (!r) {
        const li = el(this.doc, 'li', 'hs-topk-item');
        const token = el(this.doc, 'span', 'hs-topk-token');
        const bar = el(this.doc, 'span', 'hs-topk-bar');
        const fill = el(this.doc, 'span', 'hs-topk-fill');
        bar.appendChild(fill);
        const prob = el(this.doc, 'span', 'hs-topk-prob');
        const mark = el(this.doc, 'span', 'hs-topk-mark');
        li.append(token, bar, prob, mark);
        r = rows[i] = { li, token, fill, prob, mark, text: null, width: null, pct: null, marked: null };
      }
      if (r.li.parentNode !== this.list) this.list.appendChild(r.li);
      const text = tokenLabel(p.token, 20);
      if (r.text !== text) {
        r.token.textContent = text;
        r.text = text;
      } // text, never markup
      const width = Math.round(p.prob * 1e4);
      if (r.width !== width) {
        setFill(r.fill, width / 1e4);
        r.width = width;
      }
      const pct = formatPercent(p.prob);
      if (r.pct !== pct) {
        r.prob.textContent = pct;
        r.pct = pct;
      }
      const marked = i === drawnAt ? (rank > 0 ? `drawn (#${rank})` : 'drawn') : '';
      if (r.marked !== marked) {
        r.mark.textContent = marked;
        r.li.classList.toggle('hs-topk-drawn', !!marked);
        r.marked = marked;
      }
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
