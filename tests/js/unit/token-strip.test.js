// The demo's token strip (web/demo/index/token-strip.js) on a stand-in DOM: a long text shows a
// window of STRIP_WINDOW buttons, in token order, each naming its own token; typing at the end moves
// the window a token a keystroke, and the buttons of the tokens still in it keep them (the strip
// writes the new tokens' buttons alone, not 512 labels again). Moving back, and to the end again,
// still gives the window in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { themeFrom, tokenLabel } from '../../../web/component/runtime/theme.js';

// Elements with what the strip uses: children in order, attributes, text, classes, style; every
// write of an attribute or of text counted, so that a test sees how much of the strip changed
let writes = 0;
class FakeElement {
  constructor(tag) {
    this.tag = tag;
    this.children = [];
    this.parentNode = null;
    this.attrs = new Map();
    this.text = '';
    this.classes = new Set();
    this.style = {};
    this.scrollHeight = 0;
    this.clientHeight = 0;
    const self = this;
    this.classList = {
      contains: (c) => self.classes.has(c),
      toggle: (c, on) => ((on ?? !self.classes.has(c)) ? self.classes.add(c) : self.classes.delete(c)),
    };
  }
  set className(c) {
    this.classes = new Set(c.split(' '));
  }
  get textContent() {
    return this.text;
  }
  set textContent(t) {
    writes++;
    this.text = t;
  }
  getAttribute(name) {
    return this.attrs.has(name) ? this.attrs.get(name) : null;
  }
  setAttribute(name, value) {
    writes++;
    this.attrs.set(name, String(value));
  }
  get firstChild() {
    return this.children[0] ?? null;
  }
  get lastChild() {
    return this.children[this.children.length - 1] ?? null;
  }
  insertBefore(node, ref) {
    node.remove();
    const at = ref ? this.children.indexOf(ref) : this.children.length;
    assert.ok(at >= 0, 'insertBefore: the reference is a child');
    this.children.splice(at, 0, node);
    node.parentNode = this;
    return node;
  }
  appendChild(node) {
    return this.insertBefore(node, null);
  }
  remove() {
    if (!this.parentNode) return;
    this.parentNode.children.splice(this.parentNode.children.indexOf(this), 1);
    this.parentNode = null;
  }
  addEventListener() {}
}
globalThis.document = { createElement: (tag) => new FakeElement(tag) };
const { TokenStrip, STRIP_WINDOW } = await import('../../../web/demo/index/token-strip.js');

const theme = themeFrom(() => '');
const state = { layer: 0, head: 0, token: null };
// a result of T tokens without maps (a long text's: the strip then shows no weights)
const resultOf = (T) => ({
  T,
  nHead: 1,
  tokens: Array.from({ length: T }, (_, i) => ({ id: i, text: ` w${i}`, start: 4 * i, end: 4 * i + 4 })),
});

// the strip's buttons in order: [from, to) of the tokens, each naming its own token, the movers at the ends
function check(host, result, from, to, what) {
  const buttons = host.children.filter((b) => b.classes.has('token'));
  assert.equal(buttons.length, to - from, `${what}: the window's buttons`);
  buttons.forEach((b, j) => {
    assert.equal(b.getAttribute('data-index'), String(from + j), `${what}: button ${j}'s index`);
    assert.equal(b.textContent, tokenLabel(result.tokens[from + j].text, 24), `${what}: button ${j}'s label`);
  });
  const movers = host.children.filter((b) => b.classes.has('token-more'));
  assert.equal(movers.length, (from > 0 ? 1 : 0) + (to < result.T ? 1 : 0), `${what}: the movers`);
  if (from > 0) assert.equal(host.firstChild.getAttribute('data-index'), String(from - 1), `${what}: the mover before`);
  if (to < result.T) assert.equal(host.lastChild.getAttribute('data-index'), String(to), `${what}: the mover after`);
}

test('the token strip: a window in order; typing at the end writes the new buttons alone', () => {
  const host = new FakeElement('div');
  const strip = new TokenStrip(host, { onSelect: () => {} });
  let T = 600;
  strip.update(resultOf(T), state, theme);
  check(host, resultOf(T), T - STRIP_WINDOW, T, 'first paint');

  // a token typed at the end: the window moves by one. Its new button's label, index, pressed
  // state and name, the token before it no longer pressed, and the mover: a handful of writes,
  // where showing each token on its neighbour's button wrote some 1,500 (3 a button)
  for (let k = 0; k < 5; k++) {
    writes = 0;
    T++;
    strip.update(resultOf(T), state, theme);
    check(host, resultOf(T), T - STRIP_WINDOW, T, `typed token ${k + 1}`);
    assert.ok(writes <= 12, `typed token ${k + 1}: ${writes} writes`);
  }
  // three tokens at once (a pasted word)
  T += 3;
  strip.update(resultOf(T), state, theme);
  check(host, resultOf(T), T - STRIP_WINDOW, T, 'three tokens');

  // back: a token in the middle focused, the window around it (every button rewritten: a click)
  assert.equal(T, 608);
  const focused = 300; // the window's middle: [300 - 256, 300 + 256)
  strip.update(resultOf(T), { ...state, token: focused }, theme);
  check(host, resultOf(T), 44, 556, 'focused back');
  // and to the end again, by more than a window's worth of tokens
  T += 600;
  strip.update(resultOf(T), state, theme);
  check(host, resultOf(T), T - STRIP_WINDOW, T, 'the end again');
  // deleted back to a short text: every token, no mover
  strip.update(resultOf(40), state, theme);
  check(host, resultOf(40), 0, 40, 'a short text');
  // and long again, typed past the window a token at a time
  for (T = STRIP_WINDOW - 2; T < STRIP_WINDOW + 3; T++) {
    strip.update(resultOf(T), state, theme);
    check(host, resultOf(T), Math.max(0, T - STRIP_WINDOW), T, `${T} tokens`);
  }
});
