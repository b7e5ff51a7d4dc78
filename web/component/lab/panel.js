// The lab panels' common pieces: a panel's block, its buttons, a signed number. Elements come from
// the components' one DOM helper (views/dom.js).
import { el } from '../views/dom.js';

/** A button of the lab's style. */
export function button(doc, cls, text, onClick) {
  const b = el(doc, 'button', `hs-lab-btn ${cls}`, text);
  b.type = 'button';
  if (onClick) b.addEventListener('click', onClick);
  return b;
}

/** A panel: its block, title and explanation. */
export function panel(doc, cls, title, explain) {
  const block = el(doc, 'div', `hs-lab-block ${cls}`);
  block.append(el(doc, 'h3', 'hs-lab-title', title), el(doc, 'p', 'hs-lab-explain', explain));
  return block;
}

/** A loss change with its sign: +0.120, −0.004. */
export const signed = (x, d = 3) => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(d)}`;
