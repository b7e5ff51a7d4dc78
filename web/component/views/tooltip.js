// A tooltip that follows the pointer, for the heatmap's cells.
import { el } from './dom.js';

/** A tooltip that follows the pointer (text only). */
export class Tooltip {
  constructor(container) {
    this.container = container;
    this.el = el(container.ownerDocument, 'div', 'hs-tooltip');
    this.el.setAttribute('aria-hidden', 'true');
    this.el.hidden = true;
    container.appendChild(this.el);
  }

  show(text, clientX, clientY) {
    this.el.textContent = text;
    this.el.hidden = false;
    const box = this.container.getBoundingClientRect();
    const w = this.el.offsetWidth;
    let x = clientX - box.left + 12;
    if (x + w > box.width) x = Math.max(0, clientX - box.left - w - 12);
    this.el.style.left = `${x}px`;
    this.el.style.top = `${clientY - box.top + 14}px`;
  }

  hide() {
    this.el.hidden = true;
  }
}
