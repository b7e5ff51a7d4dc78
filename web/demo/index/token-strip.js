// The strip of token buttons under the text box. Each button is tinted by how much the focused
// token looks at it in the selected head. Buttons are reused from render to render: typing changes
// a few labels and tints instead of rebuilding the strip (which made the browser restyle all of it).
import { focusToken, tokenLabel, tokenWords, heat, heatInk } from '../../component/headscope-view.js';
import { headSource } from '../../lib/result.js';

function setAttr(node, name, value) {
  if (node.getAttribute(name) !== value) node.setAttribute(name, value);
}
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text; // text, never markup
}

export class TokenStrip {
  /** onSelect(t) when a token is clicked. */
  constructor(host, { onSelect }) {
    this.host = host;
    this.buttons = [];
    host.addEventListener('click', (e) => {
      const b = e.target.closest('[data-index]');
      if (b) onSelect(Number(b.dataset.index));
    });
  }

  /**
   * weightsHidden: leave the weights out of the accessible names (a quiz question is open).
   * written: [start, end) ranges of the text that the model wrote (Continue): their tokens are
   * marked, in their names too.
   */
  update(result, state, theme, { weightsHidden = false, written = [] } = {}) {
    const focused = focusToken(result, state);
    const T = result.T;
    const src = headSource(result, state.layer, state.head); // the page pulled it for a long text
    const base = src ? src.offset + focused * src.stride : 0;
    for (let i = 0; i < T; i++) {
      const t = result.tokens[i];
      let b = this.buttons[i];
      if (!b) {
        b = document.createElement('button');
        b.type = 'button';
        b.className = 'token';
        b.dataset.index = String(i);
        this.buttons[i] = b;
      }
      if (b.parentNode !== this.host) this.host.appendChild(b); // the strip holds buttons 0..T-1 in order
      setText(b, tokenLabel(t.text, 24));
      setAttr(b, 'aria-pressed', i === focused ? 'true' : 'false');
      const byModel = written.some(([from, to]) => t.start >= from && t.end <= to);
      if (b.classList.contains('token-written') !== byModel) b.classList.toggle('token-written', byModel);
      const w = src && i <= focused ? src.data[base + i] : 0;
      let bg = '';
      let fg = '';
      if (i <= focused && w >= 0.02) {
        bg = heat(theme, w); // CSSOM, allowed under the strict CSP
        fg = heatInk(theme, w); // black or white, whichever contrasts more with the tint
      }
      if (b.hsBg !== bg) {
        b.style.backgroundColor = bg;
        b.hsBg = bg;
      }
      if (b.hsFg !== fg) {
        b.style.color = fg;
        b.hsFg = fg;
      }
      setAttr(
        b,
        'aria-label',
        `token ${i}: ${tokenWords(t.text)}${byModel ? ', written by the model' : ''}${i <= focused && !weightsHidden ? `, weight ${w.toFixed(2)}` : ''}`,
      );
    }
    for (let i = T; i < this.buttons.length && this.buttons[i].parentNode; i++) this.buttons[i].remove();
    // a strip longer than its box scrolls: bring the focused token into view when it changes
    // (short texts never overflow: skip the layout read that the check costs)
    if (T > 60 && (focused !== this.focused || T !== this.T)) {
      this.focused = focused;
      this.T = T;
      const strip = this.host;
      if (strip.scrollHeight > strip.clientHeight) {
        const b = this.buttons[focused];
        if (b.offsetTop < strip.scrollTop || b.offsetTop + b.offsetHeight > strip.scrollTop + strip.clientHeight)
          strip.scrollTop = b.offsetTop - strip.clientHeight / 2;
      }
    }
  }
}
