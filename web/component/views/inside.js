// "Inside this head": one head's computation for the focused query token, step by
// step, with the model's own numbers (HeadscopeModel.inspectHead()):
//   1 query    the token's input, through W_Q, becomes its query q (d_head numbers)
//   2 keys     every token up to it has a key k_j; later tokens are masked
//   3 scores   q . k_j, the sum of d_head products (shown for one key), divided by sqrt(d_head)
//   4 weights  the softmax of the scores: the heatmap's row
//   5 values   each value v_j scaled by its weight; they add up to z
//   6 write    z times the head's rows of W_O: its share of the token's update
// InsideView shows the scene of views/inside-scene.js with step tabs, Back/Next, one sentence per
// step (model/inside.js), a tooltip with each number and keyboard navigation.
import { tokenWords, quoteToken } from '../runtime/theme.js';
import { focusToken, clamp } from '../model/describe.js';
import { INSIDE_STEPS, clampStep, f4, signed, insideSentence } from '../model/inside.js';
import { insideScene } from './inside-scene.js';
import { SceneView } from './scene-view.js';
import { el } from './dom.js';
import { HostWidth } from './host-width.js';

let viewCount = 0;
const reducedMotion = (win) => !!win?.matchMedia?.('(prefers-reduced-motion: reduce)').matches;

/**
 * The panel: step tabs, the step's sentence, the picture (SVG, with tooltips), Back and Next.
 * Keyboard: the tabs move with ← → Home End (and Back/Next are buttons); on the picture ↑ ↓ pick a
 * key, ← → move along the numbers of the highlighted vector (each is read out), PageUp/PageDown
 * step back and on. onStep(step) after the reader changes the step; onShowCombine (optional) adds a
 * link from the last step to "How the heads combine"; onExplain(query, key) (optional) a link from the
 * scores step that splits the highlighted key's score into its sources ("Why does it look there?").
 */
export class InsideView {
  constructor(host, { tooltip, onStep, onAnnounce, onShowCombine, onExplain } = {}) {
    this.host = host;
    this.doc = host.ownerDocument;
    this.tooltip = tooltip;
    this.onStep = onStep;
    this.onAnnounce = onAnnounce;
    this.step = 1;
    this.key = null;
    this.dim = null;
    this.inside = null;
    const d = this.doc;
    const id = `hs-inside-${++viewCount}`;
    const root = el(d, 'div', 'hs-inside');
    const tabs = el(d, 'div', 'hs-inside-steps');
    tabs.setAttribute('role', 'tablist');
    tabs.setAttribute('aria-label', 'Steps inside the head');
    this.tabs = INSIDE_STEPS.map((s, n) => {
      const b = el(d, 'button', 'hs-inside-step');
      b.type = 'button';
      b.id = `${id}-tab-${n + 1}`;
      b.setAttribute('role', 'tab');
      b.setAttribute('aria-controls', `${id}-panel`);
      b.dataset.step = String(n + 1);
      b.append(el(d, 'span', 'hs-inside-step-n', String(n + 1)), el(d, 'span', 'hs-inside-step-name', s.name));
      b.addEventListener('click', () => this.setStep(n + 1, { focusTab: true }));
      tabs.appendChild(b);
      return b;
    });
    tabs.addEventListener('keydown', (e) => {
      const to = { ArrowLeft: this.step - 1, ArrowRight: this.step + 1, Home: 1, End: INSIDE_STEPS.length }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      this.setStep(clampStep(to), { focusTab: true });
    });
    this.sentence = el(d, 'p', 'hs-inside-sentence');
    this.sentence.id = `${id}-sentence`;
    const panel = el(d, 'div', 'hs-inside-figure');
    panel.id = `${id}-panel`;
    panel.setAttribute('role', 'tabpanel');
    panel.tabIndex = 0;
    panel.setAttribute('aria-describedby', this.sentence.id);
    this.panel = panel;
    this.figure = new SceneView(panel);
    this.panelWidth = new HostWidth(panel, () => this.#render());
    const nav = el(d, 'div', 'hs-inside-nav');
    this.back = el(d, 'button', 'hs-inside-back', '← Back');
    this.back.type = 'button';
    this.next = el(d, 'button', 'hs-inside-next', 'Next →');
    this.next.type = 'button';
    this.counter = el(d, 'span', 'hs-inside-counter');
    this.back.addEventListener('click', () => this.setStep(this.step - 1));
    this.next.addEventListener('click', () => this.setStep(this.step + 1));
    nav.append(this.back, this.counter, this.next);
    if (onShowCombine) {
      this.combineLink = el(d, 'button', 'hs-inside-combine', 'See how the heads combine ↓');
      this.combineLink.type = 'button';
      this.combineLink.addEventListener('click', () => onShowCombine());
      nav.appendChild(this.combineLink);
    }
    if (onExplain) {
      this.explainLink = el(d, 'button', 'hs-inside-explain', 'Why this score? Split it into its sources ↓');
      this.explainLink.type = 'button';
      this.explainLink.addEventListener('click', () => {
        if (this.layout && this.inside) onExplain(focusToken(this.inside, this.state), this.layout.key);
      });
      nav.appendChild(this.explainLink);
    }
    this.status = el(d, 'p', 'hs-inside-status');
    this.status.setAttribute('role', 'status');
    root.append(tabs, this.sentence, panel, nav, this.status);
    host.appendChild(root);
    this.root = root;
    panel.addEventListener('pointermove', (e) => this.#pointer(e));
    panel.addEventListener('pointerdown', (e) => this.#pointer(e));
    // a tap's tooltip stays until the next tap (a touch pointer leaves as soon as it lifts)
    panel.addEventListener('pointerleave', (e) => {
      if (e.pointerType !== 'touch') this.tooltip?.hide();
    });
    panel.addEventListener('blur', () => {
      this.dim = null;
      this.tooltip?.hide();
      this.#render();
    });
    panel.addEventListener('keydown', (e) => this.#key(e));
  }

  /** Shows step `step` (1..6); focusTab moves the keyboard focus to its tab (tab-list keys, clicks). */
  setStep(step, { focusTab = false, silent = false } = {}) {
    step = clampStep(step);
    const changed = step !== this.step;
    this.step = step;
    this.dim = null;
    this.#render(changed);
    if (focusTab) this.tabs[step - 1].focus();
    if (changed && !silent) this.onStep?.(step);
  }

  /**
   * inside: inspectHead()'s data for the text on screen (or the last one, while the next loads:
   * then pass status), state: the page's state (token: the query token), theme.
   */
  update(inside, state, theme, { status = '' } = {}) {
    const focusChanged =
      this.inside &&
      (focusToken(this.inside, this.state) !== (inside ? focusToken(inside, state) : -1) ||
        this.inside.layer !== inside?.layer ||
        this.inside.head !== inside?.head);
    if (focusChanged) this.key = null; // another query or head: its strongest key again
    this.inside = inside;
    this.state = state;
    this.theme = theme;
    if (this.status.textContent !== status) this.status.textContent = status;
    this.root.classList.toggle('hs-inside-busy', !!status);
    this.#render();
  }

  /** The scene as shown (for exports, with the sentence in the picture). */
  exportScene() {
    if (!this.inside) return null;
    return insideScene(this.inside, this.state, this.theme, {
      step: this.step,
      key: this.key,
      width: this.#width(),
      caption: true,
    }).scene;
  }

  #width() {
    return Math.max(300, Math.min(900, this.panelWidth.width || 640));
  }

  #render(animate = false) {
    this.tabs.forEach((b, n) => {
      const on = n + 1 === this.step;
      b.setAttribute('aria-selected', on ? 'true' : 'false');
      b.tabIndex = on ? 0 : -1;
    });
    this.panel.setAttribute('aria-labelledby', this.tabs[this.step - 1].id);
    this.back.disabled = this.step <= 1;
    this.next.disabled = this.step >= INSIDE_STEPS.length;
    const counter = `Step ${this.step} of ${INSIDE_STEPS.length}`;
    if (this.counter.textContent !== counter) this.counter.textContent = counter;
    if (this.combineLink) this.combineLink.hidden = this.step !== INSIDE_STEPS.length;
    if (this.explainLink) this.explainLink.hidden = this.step !== 3;
    const inside = this.inside;
    if (!inside) {
      if (this.sentence.textContent !== '') this.sentence.textContent = '';
      return;
    }
    const i = focusToken(inside, this.state);
    const { scene, layout } = insideScene(inside, this.state, this.theme, {
      step: this.step,
      key: this.key,
      width: this.#width(),
    });
    this.layout = layout;
    const text = insideSentence(inside, i, this.step, layout.key);
    if (this.sentence.textContent !== text) this.sentence.textContent = text;
    this.figure.show(
      scene,
      `Inside layer ${inside.layer}, head ${inside.head}, token ${i} '${tokenWords(inside.tokens[i].text)}': step ${this.step}, ${INSIDE_STEPS[this.step - 1].name}`,
    );
    this.panel.dataset.step = String(this.step);
    this.panel.dataset.query = String(i);
    this.panel.dataset.key = String(layout.key);
    this.#cursor();
    if (animate && !reducedMotion(this.doc.defaultView)) {
      // a short fade and slide of the new step (none when the reader asks for reduced motion)
      this.panel.classList.remove('hs-inside-enter');
      void this.panel.offsetWidth; // restart the animation
      this.panel.classList.add('hs-inside-enter');
    }
  }

  // The keyboard cursor on one number of the highlighted vector: an outline and the tooltip.
  #cursor() {
    this.cursorEl?.remove();
    this.cursorEl = null;
    const c = this.layout?.cursor;
    if (!c || this.dim === null || !this.figure.svg) return null;
    const d = clamp(this.dim, 0, c.n - 1);
    this.dim = d;
    const per = c.perRow ?? c.n;
    const x = c.x + (d % per) * c.w;
    const y = c.y + Math.floor(d / per) * (c.h ?? 0);
    const r = this.doc.createElementNS('http://www.w3.org/2000/svg', 'rect');
    for (const [k, v] of Object.entries({
      x,
      y,
      width: c.w,
      height: c.h ? c.h - 1 : this.layout.cellH,
      fill: 'none',
      stroke: this.theme.fg,
      'stroke-width': 2,
      'pointer-events': 'none',
    }))
      r.setAttribute(k, String(v));
    this.figure.svg.appendChild(r);
    this.cursorEl = r;
    const text = c.tip(d);
    const box = this.figure.svg.getBoundingClientRect();
    const s = box.width / this.figure.scene.width;
    this.tooltip?.show(text, box.left + (x + c.w) * s, box.top + y * s);
    return text;
  }

  #pointer(e) {
    if (!this.figure.svg) return;
    const target = e.target?.closest?.('[data-tip], [data-key]');
    const tip = e.target?.closest?.('[data-tip]')?.dataset.tip;
    if (tip) this.tooltip?.show(tip, e.clientX, e.clientY);
    else this.tooltip?.hide();
    // the key under the pointer: its products (scores step) and its row highlighted
    const p = this.figure.toScene(e);
    if (!p || !this.layout || ![2, 3, 4, 5].includes(this.step)) return;
    let key = null;
    for (const [j, y] of this.layout.rows) if (p.y >= y - 3 && p.y < y - 3 + this.layout.rowH) key = j;
    if (key === null && target?.dataset.key !== undefined) key = Number(target.dataset.key);
    if (key !== null && key !== this.layout.key) {
      this.key = key;
      this.#render();
    }
  }

  #key(e) {
    if (!this.layout) return;
    const { keys } = this.layout;
    const at = keys.indexOf(this.layout.key);
    let handled = true;
    switch (e.key) {
      case 'ArrowUp':
        this.key = keys[Math.max(0, at - 1)];
        break;
      case 'ArrowDown':
        this.key = keys[Math.min(keys.length - 1, at + 1)];
        break;
      case 'ArrowLeft':
        this.dim = this.dim === null ? 0 : this.dim - 1;
        break;
      case 'ArrowRight':
        this.dim = this.dim === null ? 0 : this.dim + 1;
        break;
      case 'Home':
        this.dim = 0;
        break;
      case 'End':
        this.dim = (this.layout.cursor?.n ?? 1) - 1;
        break;
      case 'PageUp':
        this.setStep(this.step - 1);
        return e.preventDefault();
      case 'PageDown':
        this.setStep(this.step + 1);
        return e.preventDefault();
      case 'Escape':
        this.dim = null;
        this.tooltip?.hide();
        break;
      default:
        handled = false;
    }
    if (!handled) return;
    e.preventDefault();
    this.#render();
    // read out what the keys reached: the number under the cursor, or the picked key's row
    const c = this.layout.cursor;
    let said;
    if (this.dim !== null && c) said = c.tip(clamp(this.dim, 0, c.n - 1));
    else if (e.key === 'ArrowUp' || e.key === 'ArrowDown') said = this.#keySentence();
    if (said) this.onAnnounce?.(said);
  }

  #keySentence() {
    const { inside } = this;
    const i = this.layout.i;
    const j = this.layout.key;
    const T = inside.T;
    const who = quoteToken(inside.tokens[j].text);
    return `key ${who}: score ${signed(inside.scores[i * T + j])}, weight ${f4(inside.attention[i * T + j])}, value size ${inside.valueNorm[j].toFixed(2)}`;
  }
}
