// <headscope-lab>: the embeddable lab: every head in a grid with role badges; switch
// heads off by clicking them (switch-off mode) or pressing X; next-token predictions and loss with
// and without them; "knock out each head in turn"; predict-then-reveal questions.
//
//   <script type="module" src="headscope-lab.js"></script>
//   <headscope-lab text="The chef, who trained in Paris, cooked the meal quickly." ablate="0:1,1:3"></headscope-lab>
//
// Attributes: text, model (shipped name or folder URL), ablate ("layer:head,..." switched off at
// start), editable (a text box), theme (light | dark), loading (lazy: the model is fetched when the
// widget comes near the viewport). Shares the model cache of headscope-view.js
// (one download and one worker per model across <headscope-view> and <headscope-lab> widgets).
// Must sit next to headscope-view.js, analysis.js and the package's files, as in dist/.
// Events: `headscope-render` after each render. Properties: result, lab (the Lab), ready.
import {
  getModel,
  Runner,
  DEFAULT_TEXT,
  GridView,
  TopKView,
  readTheme,
  describeHead,
  viewsCss,
} from './headscope-view.js';
import { Lab, parseAblate } from './lab/lab.js';
import { modelCard } from './runtime/model-card.js';
import hostCss from './host.css';
import labCss from './lab.css';
import { el, lazySheets, shadowWithReady, rendered } from './views/dom.js';
import { paletteCss } from './runtime/theme.js';
import { isLazy, whenNear } from './runtime/near-viewport.js';

const LOCAL_CSS = `
:host { margin: 12px 0 24px; border: 1px solid var(--hs-faint); border-radius: 8px; }
.hs-labw { display: grid; gap: 12px; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); padding: 8px; }
.hs-labw-left { display: grid; gap: 8px; align-content: start; min-width: 0; }
.hs-labw h3.hs-labw-h { margin: 0; font-size: 14px; }
.hs-labw textarea { width: 100%; box-sizing: border-box; font: inherit; padding: 6px; border: 1px solid var(--hs-muted); border-radius: 6px; background: var(--hs-bg); color: var(--hs-fg); }
.hs-labw .hs-caption { font-size: 13px; margin: 0; }
@media (max-width: 640px) { .hs-labw { grid-template-columns: minmax(0, 1fr); } }
:host([compact]) .hs-labw { grid-template-columns: minmax(0, 1fr); }
`;
const styleSheets = lazySheets(paletteCss(), hostCss, viewsCss, labCss, LOCAL_CSS);

export class HeadscopeLabElement extends HTMLElement {
  static get observedAttributes() {
    return ['text', 'ablate'];
  }

  #root;
  #els = null;
  #runner = null;
  #result = null;
  #state = { layer: 0, head: 0, heads: [0], token: null, ablate: [] };
  #readyResolve;

  constructor() {
    super();
    ({ root: this.#root, resolveReady: this.#readyResolve } = shadowWithReady(this, styleSheets()));
  }

  get result() {
    return this.#result;
  }
  get lab() {
    return this.#els?.lab ?? null;
  }

  connectedCallback() {
    if (this.#els) return;
    const d = this.ownerDocument;
    const mk = (tag, cls, text) => el(d, tag, cls, text);
    const wrap = mk('div', 'hs-labw');
    wrap.setAttribute('part', 'widget');
    const left = mk('div', 'hs-labw-left');
    const status = mk('p', 'hs-caption', 'Loading the model…');
    status.setAttribute('role', 'status');
    const textarea = mk('textarea');
    textarea.rows = 2;
    textarea.spellcheck = false;
    textarea.setAttribute('aria-label', 'Text the model reads');
    textarea.value = this.getAttribute('text') ?? DEFAULT_TEXT;
    textarea.hidden = !this.hasAttribute('editable');
    textarea.addEventListener('input', () => this.#run());
    const gridHost = mk('div', 'hs-labw-grid');
    const caption = mk('p', 'hs-caption');
    const topTitle = mk('h3', 'hs-labw-h', 'What the model expects next');
    const topHost = mk('div');
    left.append(status, textarea, gridHost, caption, topTitle, topHost);
    const right = mk('div', 'hs-labw-right');
    wrap.append(left, right);
    this.#root.appendChild(wrap);
    const grid = new GridView(gridHost, {
      onSelect: (l, h, { focus } = {}) => {
        this.#state.layer = l;
        this.#state.head = h;
        this.#state.heads = [h];
        grid.select(l, h, focus);
        this.#render();
      },
    });
    const topk = new TopKView(topHost);
    const lab = new Lab(right, {
      grid,
      gridHost,
      initialAblate: parseAblate(this.getAttribute('ablate')),
      getModel: () => getModel(this.getAttribute('model') || ''),
      // the verb-to-subject badge's probe sentences, from the model's card when it has one
      getProbeSentences: () =>
        modelCard(this.getAttribute('model') || '').then((card) => card?.roles?.probe_sentences ?? null),
      getResult: () => this.#result,
      getText: () => this.#text(),
      getState: () => this.#state,
      onAblate: (pairs) => {
        this.#state.ablate = pairs;
        this.#run();
      },
      onSelect: (l, h) => {
        this.#state.layer = l;
        this.#state.head = h;
        grid.select(l, h, true);
        this.#render();
      },
      onHidePattern: () => this.#render(),
    });
    this.#state.ablate = lab.ablate;
    this.#els = { status, textarea, grid, topk, caption, lab };
    // loading="lazy": the model is fetched once the widget comes near the viewport
    if (isLazy(this)) status.textContent = 'The model loads when you scroll here.';
    whenNear(this)
      .then(() => {
        status.textContent = 'Loading the model…';
        return getModel(this.getAttribute('model') || '');
      })
      .then(
        (model) => {
          this.#runner = new Runner(model, {
            onResult: (r) => {
              this.#result = r;
              this.#render();
            },
            onError: (e) => {
              status.textContent = `The model could not run: ${e.message}`;
            },
          });
          status.textContent = '';
          status.hidden = true;
          this.#run();
        },
        (e) => {
          status.textContent = `The model could not be loaded: ${e.message}`;
        },
      );
  }

  attributeChangedCallback(name, oldValue, newValue) {
    if (!this.#els || oldValue === newValue) return;
    if (name === 'text') {
      this.#els.textarea.value = newValue ?? DEFAULT_TEXT;
      this.#run();
    }
    if (name === 'ablate') this.#els.lab.setAblate(parseAblate(newValue));
  }

  #text() {
    return this.#els?.textarea.value ?? this.getAttribute('text') ?? DEFAULT_TEXT;
  }

  #run() {
    const text = this.#text();
    if (!this.#runner || !text) return;
    this.#runner.request(text, { ablate: this.#state.ablate });
  }

  #render() {
    const r = this.#result;
    if (!r || !this.#els) return;
    const { grid, topk, caption, lab } = this.#els;
    const theme = readTheme(this);
    this.#state.layer = Math.min(this.#state.layer, r.nLayer - 1);
    this.#state.head = Math.min(this.#state.head, r.nHead - 1);
    grid.update(r, this.#state, theme);
    lab.update(r);
    topk.update(r);
    const hidden =
      lab.quiz && !lab.quiz.revealed && lab.quiz.layer === this.#state.layer && lab.quiz.head === this.#state.head;
    caption.textContent = hidden
      ? `Layer ${this.#state.layer}, head ${this.#state.head}: hidden until you answer.`
      : describeHead(r, this.#state.layer, this.#state.head, r.T - 1);
    this.dataset.tokens = String(r.T);
    rendered(this, this.#readyResolve, { T: r.T, ablate: this.#state.ablate });
  }
}

if (!customElements.get('headscope-lab')) customElements.define('headscope-lab', HeadscopeLabElement);
