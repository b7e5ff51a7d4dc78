// The strip of token buttons under the text box. Each button is tinted by how much the focused
// token looks at it in the selected head. Buttons are reused from render to render: typing changes
// a few labels and tints instead of rebuilding the strip (which made the browser restyle all of it).
// A long text shows a window of STRIP_WINDOW tokens around the focused one, between two buttons that
// move it: 8,192 buttons would cost every keystroke a restyle of all of them.
import { focusToken } from '../../component/model/describe.js';
import { tokenLabel, tokenWords, heat, heatInk } from '../../component/runtime/theme.js';
import { headSource, windowAround } from '../../lib/result.js';

function setAttr(node, name, value) {
  if (node.getAttribute(name) !== value) node.setAttribute(name, value);
}
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text; // text, never markup
}

export const STRIP_WINDOW = 512;

/** The tokens [from, to) the strip shows of T with `focused` focused: all, or a window around it. */
export const stripWindow = (T, focused) => windowAround(T, focused, STRIP_WINDOW);

export class TokenStrip {
  /** onSelect(t) when a token is clicked. */
  constructor(host, { onSelect }) {
    this.host = host;
    this.buttons = [];
    // past the window's ends: each selects the token just outside it, which moves the window
    this.before = this.#mover('token-more');
    this.after = this.#mover('token-more');
    host.addEventListener('click', (e) => {
      const b = e.target.closest('[data-index]');
      if (b) onSelect(Number(b.dataset.index));
    });
  }

  #mover(className) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = className;
    return b;
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
    const [from, to] = stripWindow(T, focused);
    this.#follow(from);
    this.#moverAt(this.before, from > 0, from - 1, `${from.toLocaleString('en-US')} tokens before`);
    for (let i = from; i < to; i++) {
      const t = result.tokens[i];
      let b = this.buttons[i - from];
      if (!b) {
        b = document.createElement('button');
        b.type = 'button';
        b.className = 'token';
        this.buttons[i - from] = b;
      }
      setAttr(b, 'data-index', String(i));
      // the strip holds the window's buttons in order, after the button before it
      if (b.parentNode !== this.host) this.host.insertBefore(b, this.after.parentNode ? this.after : null);
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
    for (let j = to - from; j < this.buttons.length && this.buttons[j].parentNode; j++) this.buttons[j].remove();
    this.shownFrom = from;
    this.shownCount = to - from;
    this.#moverAt(this.after, to < T, to, `${(T - to).toLocaleString('en-US')} tokens after`);
    // a strip longer than its box scrolls: bring the focused token into view when it changes
    // (short texts never overflow: skip the layout read that the check costs)
    if (T > 60 && (focused !== this.focused || T !== this.T)) {
      this.focused = focused;
      this.T = T;
      const strip = this.host;
      if (strip.scrollHeight > strip.clientHeight) {
        const b = this.buttons[focused - from];
        if (b.offsetTop < strip.scrollTop || b.offsetTop + b.offsetHeight > strip.scrollTop + strip.clientHeight)
          strip.scrollTop = b.offsetTop - strip.clientHeight / 2;
      }
    }
  }

  // The window moved forward (typing at the end of a long text moves it a token a keystroke): the
  // buttons of the tokens still in it keep their tokens, and those that left it are taken out, to
  // come back at the end for the new tokens. Otherwise every button would show its neighbour's
  // token: 512 labels, indices and names rewritten, and the strip laid out again, at each keystroke.
  #follow(from) {
    const shift = from - (this.shownFrom ?? from),
      shown = this.shownCount ?? 0;
    if (shift <= 0 || shift >= shown) return; // the same start, back (rare: a click), or all new
    const left = this.buttons.slice(0, shift);
    for (const b of left) b.remove();
    this.buttons = [...this.buttons.slice(shift, shown), ...left, ...this.buttons.slice(shown)];
  }

  // a mover shown (with the token it selects and its words) or taken out
  #moverAt(b, shown, index, words) {
    if (!shown) {
      b.remove();
      return;
    }
    setAttr(b, 'data-index', String(index));
    setText(b, `… ${words}`);
    setAttr(b, 'aria-label', `${words}: show token ${index}`);
    if (b === this.before && this.host.firstChild !== b) this.host.insertBefore(b, this.host.firstChild);
    if (b === this.after && this.host.lastChild !== b) this.host.appendChild(b);
  }
}
