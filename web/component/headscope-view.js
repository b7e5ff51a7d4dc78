// <headscope-view>: a framework-free web component showing one view of a model's attention.
//
//   <script type="module" src="headscope-view.js"></script>
//   <headscope-view text="The chef, who trained in Paris, cooked the meal quickly."
//                   layer="1" head="3" view="lines"></headscope-view>
//
// Attributes: text, layer, head (counted from 0), view = grid | heatmap | lines | inside | combine, model (a
// shipped model's name or a model folder URL; default: the package's default model), heads ("0,3":
// several heads at once in the lines view), token (the focused token index; default the last),
// inside (the same, for view="inside": the query token whose computation it walks through), step
// (1-6, the step of view="inside"), by = weight | value (the grid, heatmap and lines coloured by
// weight × value size), editable (shows a text box), theme = light | dark (default: the reader's preference),
// loading = lazy (the model is fetched only when the widget comes near the viewport, as for an <img>).
// Every widget on a page that names the same model shares one download and one Web Worker.
//
// This module also exports the building blocks the demo page uses (parts.js: views, runner, state helpers).
import viewsCss from './views.css';
import hostCss from './host.css';
import { getModel } from './runtime/model-cache.js';
import { Runner } from './runtime/runner.js';
import { DEFAULT_TEXT, VIEWS, parseHeads } from './runtime/url-state.js';
import { describeHead, focusToken, clamp } from './model/describe.js';
import { GridView, gridScene } from './views/grid.js';
import { HeatmapView, heatmapScene } from './views/heatmap.js';
import { LinesView, linesScene } from './views/lines.js';
import { CombineView, combineScene } from './views/combine.js';
import { WriteBar } from './writer.js';
import { InsideView } from './views/inside.js';
import { clampStep, INSIDE_STEPS } from './model/inside.js';
import { valueWeightingSentence, hasValueNorms, byValue } from './model/weighting.js';
import { InsideSource } from './runtime/inside-source.js';
import { isLazy, whenNear } from './runtime/near-viewport.js';
import { installAttribution } from './runtime/attribution.js';
import { headSharing } from './model/kv-groups.js';
import { Tooltip } from './views/tooltip.js';
import { el, lazySheets, shadowWithReady, rendered, setFill } from './views/dom.js';
import { parseAblate } from '../lib/result.js';
import { paletteCss, readTheme } from './runtime/theme.js';
import { sceneToSvgString, sceneToPngBlob } from './views/scene.js';

export * from './parts.js';

const styleSheets = lazySheets(paletteCss(), hostCss, viewsCss);

function intAttr(el, name, fallback) {
  const v = el.getAttribute(name);
  if (v === null || v === '') return fallback;
  const n = Number(v);
  return Number.isInteger(n) && n >= 0 ? n : fallback;
}

export class HeadscopeViewElement extends HTMLElement {
  static get observedAttributes() {
    return [
      'text',
      'layer',
      'head',
      'heads',
      'view',
      'model',
      'token',
      'editable',
      'theme',
      'ablate',
      'links',
      'inside',
      'step',
      'by',
    ];
  }

  #root;
  #els = null;
  #runner = null;
  #modelKey = null;
  #result = null;
  #view = null;
  #viewName = null;
  #renderQueued = false;
  #readyResolve;
  #loadError = null;
  #source = null; // one head's insides (view="inside"): InsideSource over the model
  #attribution = null; // view="combine": the logit split beside the bars (runtime/attribution.js)
  #model = null;
  #near = false; // loading="lazy": whether the widget has come near the viewport (its model may load)
  #waiting = false;

  constructor() {
    super();
    // this.ready resolves after the first successful render
    ({ root: this.#root, resolveReady: this.#readyResolve } = shadowWithReady(this, styleSheets()));
  }

  /** The latest run result (see the package's RunResult). */
  get result() {
    return this.#result;
  }

  /** The widget's state in the form used by URLs. */
  get state() {
    const r = this.#result;
    const nL = r ? r.nLayer : Infinity;
    const nH = r ? r.nHead : Infinity;
    const layer = clamp(intAttr(this, 'layer', 0), 0, nL - 1);
    const head = clamp(intAttr(this, 'head', 0), 0, nH - 1);
    const heads = parseHeads(this.getAttribute('heads')).filter((h) => h < nH);
    const view = VIEWS.includes(this.getAttribute('view')) ? this.getAttribute('view') : 'heatmap';
    // view="inside" walks through the `inside` token (or `token`)
    const token =
      view === 'inside' ? intAttr(this, 'inside', intAttr(this, 'token', null)) : intAttr(this, 'token', null);
    const links = intAttr(this, 'links', undefined);
    const by = this.getAttribute('by') === 'value' ? 'value' : 'weight';
    const ablate = parseAblate(this.getAttribute('ablate'));
    return {
      model: this.getAttribute('model') || undefined,
      text: this.#text(),
      layer,
      head,
      heads: heads.length ? heads : [head],
      token,
      links,
      view,
      ablate,
      by,
      step: clampStep(intAttr(this, 'step', 1)),
    };
  }

  #text() {
    if (this.#els?.textarea && !this.#els.textarea.hidden) return this.#els.textarea.value;
    const t = this.getAttribute('text');
    return t === null ? DEFAULT_TEXT : t;
  }

  #onScheme = () => this.#queueRender();
  #schemeQuery = window.matchMedia('(prefers-color-scheme: dark)');

  connectedCallback() {
    if (!this.#els) this.#build();
    if (!this.#near && !isLazy(this)) this.#near = true;
    if (this.#near) this.#ensureModel();
    else if (!this.#waiting) {
      this.#waiting = true;
      this.#els.statusText.textContent = 'The model loads when you scroll here.';
      whenNear(this).then(() => {
        this.#near = true;
        if (this.isConnected) this.#ensureModel();
      });
    }
    // colours are baked into the SVG: re-render when the reader's colour scheme changes
    this.#schemeQuery.addEventListener('change', this.#onScheme);
  }

  disconnectedCallback() {
    this.#schemeQuery.removeEventListener('change', this.#onScheme);
    this.#els?.writer.stop();
  }

  attributeChangedCallback(name, oldValue, newValue) {
    if (!this.#els || oldValue === newValue) return;
    if (name === 'model') {
      if (this.#near) this.#ensureModel();
      return;
    }
    if (name === 'ablate') {
      this.#run();
      return;
    }
    // the result on screen has no value sizes: run the text again for them (the engine's cache
    // holds it, so this computes only the sizes)
    if (name === 'by' && newValue === 'value' && this.#result && !hasValueNorms(this.#result)) this.#run();
    if (name === 'text') {
      if (this.#els.textarea.value !== (newValue ?? '')) this.#els.textarea.value = newValue ?? DEFAULT_TEXT;
      this.#run();
      return;
    }
    if (name === 'editable') {
      this.#els.textarea.hidden = this.#els.writer.el.hidden = !this.hasAttribute('editable');
      if (!this.hasAttribute('editable')) this.#els.writer.stop();
    }
    this.#queueRender();
  }

  #build() {
    const d = this.ownerDocument;
    const mk = (tag, cls, text) => el(d, tag, cls, text);
    const wrap = mk('div', 'hs-widget');
    wrap.setAttribute('part', 'widget');
    const status = mk('div', 'hs-status');
    status.setAttribute('role', 'status');
    const statusText = mk('span', 'hs-status-text', 'Loading the model…');
    const progress = mk('span', 'hs-progress');
    const fill = mk('span', 'hs-progress-fill');
    progress.appendChild(fill);
    status.append(statusText, progress);
    const textarea = mk('textarea', 'hs-text');
    textarea.setAttribute('aria-label', 'Text the model reads');
    textarea.rows = 2;
    textarea.spellcheck = false;
    textarea.value = this.getAttribute('text') ?? DEFAULT_TEXT;
    textarea.hidden = !this.hasAttribute('editable');
    textarea.addEventListener('input', () => this.#run());
    // editable: Continue lets the model write on (its tokens go into the text box, the view follows)
    const writer = new WriteBar(d, {
      getRunner: () => this.#runner,
      getText: () => this.#text(),
      setText: (t) => {
        textarea.value = t;
      },
      getResult: () => this.#result,
      getAblate: () => parseAblate(this.getAttribute('ablate')),
      getValueNorms: () => this.#byValue(),
      show: (result) => {
        this.#result = result;
        this.#renderQueued = false;
        this.#render();
      },
    });
    writer.el.hidden = textarea.hidden;
    const caption = mk('p', 'hs-caption');
    caption.setAttribute('part', 'caption');
    const notice = mk('p', 'hs-notice');
    notice.hidden = true;
    const scroll = mk('div', 'hs-scroll');
    const viewHost = mk('div', 'hs-view');
    scroll.appendChild(viewHost);
    const live = mk('div', 'hs-sr');
    live.setAttribute('aria-live', 'polite');
    wrap.append(status, textarea, writer.el, caption, notice, scroll, live);
    this.#root.appendChild(wrap);
    const tooltip = new Tooltip(scroll);
    this.#els = { wrap, status, statusText, fill, textarea, writer, caption, notice, scroll, viewHost, live, tooltip };
  }

  #ensureModel() {
    const key = this.getAttribute('model') || '';
    if (this.#modelKey === key && (this.#runner || !this.#loadError)) return;
    this.#modelKey = key;
    this.#els.writer.stop(); // the old model's writing must not reach the new model's view
    this.#runner = null;
    this.#loadError = null;
    const { status, statusText, fill } = this.#els;
    status.hidden = false;
    status.classList.remove('hs-error');
    statusText.textContent = 'Loading the model…';
    getModel(key, {
      onProgress: ({ loaded, total }) => {
        if (total > 0) setFill(fill, loaded / total);
      },
    }).then(
      (model) => {
        if (this.#modelKey !== key) return;
        this.#model = model;
        this.#runner = new Runner(model, {
          onResult: (result) => {
            this.#result = result;
            this.#renderQueued = false;
            this.#render();
          },
          onError: (e) => this.#showError(`The model could not run: ${e.message}`),
        });
        const runner = this.#runner;
        this.#attribution = installAttribution({
          getModel: () => (this.#runner === runner ? model : null),
          idle: () => runner.idle(),
          onUpdate: () => this.#queueRender(),
        });
        this.#source = new InsideSource(model, { onUpdate: () => this.#queueRender(), idle: () => runner.idle() });
        status.hidden = true;
        this.#run();
      },
      (e) => {
        if (this.#modelKey !== key) return;
        this.#loadError = e;
        this.#showError(`The model could not be loaded: ${e.message}`);
      },
    );
  }

  #showError(message) {
    const { status, statusText } = this.#els;
    status.hidden = false;
    status.classList.add('hs-error');
    statusText.textContent = message;
  }

  #run() {
    const text = this.#text();
    if (!this.#runner) return;
    if (text.length === 0) {
      this.#els.caption.textContent = 'Type some text to see the attention heads.';
      return;
    }
    this.#runner.request(text, { ablate: parseAblate(this.getAttribute('ablate')), valueNorms: this.#byValue() });
  }

  #byValue() {
    return this.getAttribute('by') === 'value';
  }

  #queueRender() {
    if (this.#renderQueued || !this.#result) return;
    this.#renderQueued = true;
    requestAnimationFrame(() => {
      if (!this.#renderQueued) return; // a result rendered in between
      this.#renderQueued = false;
      this.#render();
    });
  }

  #render() {
    const result = this.#result;
    if (!result || !this.#els) return;
    const state = this.state;
    const theme = readTheme(this);
    const { viewHost, caption, live, notice, tooltip } = this.#els;
    if (this.#viewName !== state.view) {
      viewHost.replaceChildren();
      this.#els.scroll.classList.remove('hs-zoomed');
      this.#viewName = state.view;
      const selectToken = (t) => this.setAttribute('token', String(t));
      if (state.view === 'grid') {
        this.#view = new GridView(viewHost, {
          onSelect: (l, h, { focus } = {}) => {
            this.setAttribute('layer', String(l));
            this.setAttribute('head', String(h));
            this.#view.select(l, h, focus);
            this.dispatchEvent(
              new CustomEvent('headscope-select', { detail: { layer: l, head: h }, bubbles: true, composed: true }),
            );
          },
        });
      } else if (state.view === 'lines') {
        this.#view = new LinesView(viewHost, { onSelectToken: selectToken });
      } else if (state.view === 'combine') {
        this.#view = new CombineView(viewHost, { onSelectHead: (h) => this.setAttribute('head', String(h)) });
      } else if (state.view === 'inside') {
        this.#view = new InsideView(viewHost, {
          tooltip,
          onStep: (s) => this.setAttribute('step', String(s)),
          onAnnounce: (t) => {
            live.textContent = t;
          },
        });
      } else {
        this.#view = new HeatmapView(viewHost, {
          tooltip,
          onSelectToken: selectToken,
          onAnnounce: (t) => {
            live.textContent = t;
          },
        });
      }
    }
    this.#want(result, state);
    let sentence = describeHead(result, state.layer, state.head, focusToken(result, state));
    if (state.view === 'inside') {
      const inside = this.#shownInside(result, state);
      if (this.#view.step !== state.step) this.#view.setStep(state.step, { silent: true });
      const error = this.#source?.error;
      this.#view.update(inside, state, theme, {
        status: error
          ? `This head could not be read: ${error}`
          : inside?.text === result.text && this.#source.fresh
            ? ''
            : 'Reading the head…',
      });
      const shared = headSharing(result.nHead, result.nKvHead ?? result.nHead, state.head);
      sentence = `Inside layer ${state.layer}, head ${state.head}, token ${focusToken(result, state)}: step ${state.step} of ${INSIDE_STEPS.length}, ${INSIDE_STEPS[state.step - 1].name}${shared ? ` (${shared})` : ''}`;
    } else if (state.view === 'combine') {
      this.#view.update(result, state, theme, this.#attribution?.shown(result, state) ?? null);
      sentence = `How the ${result.nHead} heads of layer ${state.layer} combine through W_O at token ${focusToken(result, state)}`;
    } else {
      this.#view.update(result, state, theme);
    }
    const weighted =
      state.view !== 'inside' && byValue(result, state) ? ` ${valueWeightingSentence(result.ablate)}` : '';
    caption.textContent =
      state.view === 'grid'
        ? `Every head of the model (${result.nLayer} layers × ${result.nHead} heads). Selected: ${sentence}${weighted && `.${weighted}`}`
        : weighted
          ? `${sentence}.${weighted}`
          : sentence;
    if (state.view !== 'inside' && live.textContent !== sentence) live.textContent = sentence;
    if (result.droppedTokens > 0) {
      notice.hidden = false;
      notice.textContent = `The text is longer than the model's context: the first ${result.droppedTokens} tokens were cut; showing the last ${result.T}.`;
    } else {
      notice.hidden = true;
    }
    this.dataset.tokens = String(result.T);
    rendered(this, this.#readyResolve, { T: result.T, view: state.view });
  }

  // The insides view="inside" shows: its head's, for the text on screen.
  #want(result, state) {
    this.#source?.want(result.text, {
      panel: state.view === 'inside' ? [state.layer, state.head] : null,
      ablate: result.ablate ?? [],
    });
  }

  // The insides shown: the latest of the selected head (an earlier text's while the next loads).
  #shownInside(result, state) {
    const inside = this.#source?.inside;
    return inside && inside.layer === state.layer && inside.head === state.head ? inside : null;
  }

  /** The current view as a scene (display list). */
  scene() {
    const r = this.#result;
    if (!r) throw new Error('nothing rendered yet');
    const state = this.state;
    const theme = readTheme(this);
    if (state.view === 'grid') return gridScene(r, state, theme).scene;
    if (state.view === 'inside') {
      const scene = this.#view?.exportScene?.();
      if (!scene) throw new Error("the head's insides are not read yet");
      return scene;
    }
    if (state.view === 'lines') return linesScene(r, state, theme, this.#view?.focus ?? null).scene;
    if (state.view === 'combine')
      return combineScene(r, state, theme, this.#attribution?.shown(r, state) ?? null, { width: this.#view?.width })
        .scene;
    return heatmapScene(r, state, theme, this.#view?.exportOptions?.() ?? {}).scene;
  }

  /** The current view as an SVG document (string). */
  exportSvg() {
    return sceneToSvgString(this.scene(), 'headscope');
  }

  /** The current view as a PNG Blob (2x resolution). */
  exportPng(scale = 2) {
    return sceneToPngBlob(this.scene(), scale);
  }
}

if (!customElements.get('headscope-view')) customElements.define('headscope-view', HeadscopeViewElement);
