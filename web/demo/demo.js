// The headscope demo page. Built on the package's public API (headscope-worker.js, through the
// component module's shared model cache) and the views exported by headscope-view.js.
import {
  getModel, Runner, DEFAULT_TEXT, stateFromQuery, stateToQuery, embedSnippet,
  GridView, HeatmapView, LinesView, CombineView, TopKView, Tooltip, describeHead, focusToken,
  gridScene, heatmapScene, linesScene, combineScene, readTheme, tokenLabel, tokenWords, heat,
  sceneToSvgString, sceneToPngBlob, downloadBlob,
} from '../component/headscope-view.js';
import { attentionIndex } from '../lib/result.js';
import { installLab } from './lab.js';

const $ = (id) => document.getElementById(id);
const reducedMotion = () => window.matchMedia('(prefers-reduced-motion: reduce)').matches;

// ---- state --------------------------------------------------------------------------------
const fromUrl = stateFromQuery(location.search);
const state = {
  model: fromUrl.model,
  text: fromUrl.text ?? DEFAULT_TEXT,
  layer: fromUrl.layer ?? 0,
  head: fromUrl.head ?? 0,
  heads: fromUrl.heads ?? [],
  token: fromUrl.token ?? null,
  view: fromUrl.view === 'lines' ? 'lines' : 'heatmap', // the detail panel's tab
  ablate: [], // heads switched off, [[layer, head], ...]
};
let result = null;
let info = null;
let theme = null;
let runner = null;
let lab = null; // the lab panel (web/demo/lab.js)

// ---- theme ---------------------------------------------------------------------------------
const THEME_KEY = 'headscope-theme';
function storedTheme() {
  try { return localStorage.getItem(THEME_KEY); } catch { return null; }
}
function currentScheme() {
  const forced = document.documentElement.dataset.theme;
  if (forced) return forced;
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}
function applyTheme(name) {
  if (name) document.documentElement.dataset.theme = name;
  const dark = currentScheme() === 'dark';
  const btn = $('theme-toggle');
  btn.textContent = dark ? 'Light theme' : 'Dark theme';
  btn.setAttribute('aria-pressed', dark ? 'true' : 'false');
  theme = readTheme(document.documentElement);
  render();
}
$('theme-toggle').addEventListener('click', () => {
  const next = currentScheme() === 'dark' ? 'light' : 'dark';
  try { localStorage.setItem(THEME_KEY, next); } catch { /* private mode */ }
  applyTheme(next);
});
window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => applyTheme());
const urlTheme = new URLSearchParams(location.search).get('theme');
applyTheme(urlTheme === 'dark' || urlTheme === 'light' ? urlTheme : storedTheme());

// ---- views ---------------------------------------------------------------------------------
const tooltip = new Tooltip($('detail-scroll'));
const grid = new GridView($('grid'), {
  onSelect: (l, h, { focus } = {}) => selectHead(l, h, focus),
  onOpen: () => {
    const detail = $('detail');
    const r = detail.getBoundingClientRect();
    if (r.top > window.innerHeight || r.bottom < 0) detail.scrollIntoView({ behavior: reducedMotion() ? 'auto' : 'smooth', block: 'start' });
  },
});
let detailView = null;
function makeDetailView() {
  const host = $('detail-view');
  host.replaceChildren();
  tooltip.hide();
  const onSelectToken = (t) => selectToken(t);
  detailView = state.view === 'lines' ? new LinesView(host, { onSelectToken }) : new HeatmapView(host, { tooltip, onSelectToken, onAnnounce: announce });
  detailView.kind = state.view;
}
makeDetailView();
const combine = new CombineView($('combine'), { onSelectHead: (h) => selectHead(state.layer, h, false) });
const topk = new TopKView($('topk'));

function announce(text) {
  const live = $('live');
  if (live.textContent !== text) live.textContent = text;
}

function selectHead(layer, head, focus) {
  const changed = layer !== state.layer || head !== state.head;
  state.layer = layer;
  state.head = head;
  if (!state.heads.includes(head) || changed) state.heads = [head];
  grid.select(layer, head, focus);
  render();
  if (result) announce(describeHead(result, layer, head, focusToken(result, state)));
}

function selectToken(t) {
  tokenFromCard = false;
  state.token = result && t === result.T - 1 ? null : t;
  render();
  if (result) announce(describeHead(result, state.layer, state.head, focusToken(result, state)));
}

function setView(view) {
  if (view === state.view) return;
  state.view = view;
  for (const tab of document.querySelectorAll('[role="tab"]')) {
    const on = tab.dataset.view === view;
    tab.setAttribute('aria-selected', on ? 'true' : 'false');
    tab.tabIndex = on ? 0 : -1;
  }
  $('detail-view').setAttribute('aria-labelledby', `tab-${view}`);
  makeDetailView();
  render();
}
for (const tab of document.querySelectorAll('[role="tab"]')) {
  tab.addEventListener('click', () => setView(tab.dataset.view));
  tab.addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
    const next = tab.dataset.view === 'heatmap' ? 'lines' : 'heatmap';
    setView(next);
    $(`tab-${next}`).focus();
  });
}
setViewTabs();
function setViewTabs() {
  for (const tab of document.querySelectorAll('[role="tab"]')) {
    const on = tab.dataset.view === state.view;
    tab.setAttribute('aria-selected', on ? 'true' : 'false');
    tab.tabIndex = on ? 0 : -1;
  }
}

$('layer-select').addEventListener('change', (e) => selectHead(Number(e.target.value), state.head, false));
$('head-select').addEventListener('change', (e) => selectHead(state.layer, Number(e.target.value), false));

function fillSelect(select, n, value, word) {
  if (select.options.length !== n) {
    select.replaceChildren(...Array.from({ length: n }, (_, i) => new Option(`${word} ${i}`, String(i))));
  }
  if (select.value !== String(value)) select.value = String(value);
}

let chipsKey = '';
function renderHeadChips() {
  const box = $('head-chips');
  const hidden = state.view !== 'lines';
  if (box.hidden !== hidden) box.hidden = hidden;
  if (hidden || !result) return;
  const shown = state.heads.length ? state.heads : [state.head];
  // typing does not change the chips: rebuild them only when the heads or the theme change
  const key = `${result.nHead}|${shown.join(',')}|${theme.heads.join(',')}|${state.layer}|${state.head}`;
  if (key === chipsKey && box.childElementCount === result.nHead) return;
  chipsKey = key;
  const chips = [];
  for (let h = 0; h < result.nHead; h++) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'head-chip';
    const on = shown.includes(h);
    b.setAttribute('aria-pressed', on ? 'true' : 'false');
    const sw = document.createElement('span');
    sw.className = 'swatch';
    if (on) sw.style.background = theme.heads[shown.indexOf(h) % theme.heads.length];
    b.append(sw, document.createTextNode(`head ${h}`));
    b.addEventListener('click', () => {
      let next = shown.includes(h) ? shown.filter((x) => x !== h) : [...shown, h];
      if (next.length === 0) next = [h];
      state.heads = next;
      if (!next.includes(state.head)) state.head = next[0];
      grid.select(state.layer, state.head, false);
      render();
      box.querySelectorAll('button')[h]?.focus();
    });
    chips.push(b);
  }
  box.replaceChildren(...chips);
}

// One button per token, reused from render to render: typing changes a few labels and tints
// instead of rebuilding the strip (which made the browser restyle and lay out all of it).
const tokenButtons = [];
function setAttr(node, name, value) {
  if (node.getAttribute(name) !== value) node.setAttribute(name, value);
}
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text; // text, never markup
}
function renderTokens() {
  const strip = $('tokens');
  const focused = focusToken(result, state);
  // each chip is tinted by how much the focused token looks at it in the selected head
  const T = result.T;
  const base = attentionIndex(result, state.layer, state.head, focused, 0);
  // while a question of "predict, then reveal" is open, the names must not give the weights away
  const weightsHidden = !!lab?.quiz && !lab.quiz.revealed;
  for (let i = 0; i < T; i++) {
    const t = result.tokens[i];
    let b = tokenButtons[i];
    if (!b) {
      b = document.createElement('button');
      b.type = 'button';
      b.className = 'token';
      b.dataset.index = String(i);
      tokenButtons[i] = b;
    }
    if (b.parentNode !== strip) strip.appendChild(b); // the strip holds buttons 0..T-1 in order
    setText(b, tokenLabel(t.text, 24));
    setAttr(b, 'aria-pressed', i === focused ? 'true' : 'false');
    const w = i <= focused ? result.attentionAll[base + i] : 0;
    let bg = '';
    let fg = '';
    if (i <= focused && w >= 0.02) {
      bg = heat(theme, w); // CSSOM, allowed under the strict CSP
      fg = w > 0.36 ? (theme.dark ? '#000' : '#fff') : theme.fg; // dark half of the √ scale
    }
    if (b.hsBg !== bg) { b.style.backgroundColor = bg; b.hsBg = bg; }
    if (b.hsFg !== fg) { b.style.color = fg; b.hsFg = fg; }
    setAttr(b, 'aria-label', `token ${i}: ${tokenWords(t.text)}${i <= focused && !weightsHidden ? `, weight ${w.toFixed(2)}` : ''}`);
  }
  for (let i = T; i < tokenButtons.length && tokenButtons[i].parentNode; i++) tokenButtons[i].remove();
}
$('tokens').addEventListener('click', (e) => {
  const b = e.target.closest('[data-index]');
  if (b) selectToken(Number(b.dataset.index));
});

// UI events (hover, selection, theme) render in the next animation frame, coalesced; a new model
// result renders at once (it arrives at most once per run), so it is painted in the coming frame
// instead of waiting one more.
let renderQueued = false;
function render() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    if (!renderQueued) return;
    renderQueued = false;
    renderNow();
  });
}
function renderImmediately() {
  renderQueued = false;
  renderNow();
}

let urlTimer = 0;
let lastRenderMs = 0;
function renderNow() {
  if (!result || !theme) return;
  const t0 = performance.now();
  state.layer = Math.min(state.layer, result.nLayer - 1);
  state.head = Math.min(state.head, result.nHead - 1);
  state.heads = state.heads.filter((h) => h < result.nHead);
  if (Number.isInteger(state.token) && state.token >= result.T) state.token = null;
  fillSelect($('layer-select'), result.nLayer, state.layer, 'layer');
  fillSelect($('head-select'), result.nHead, state.head, 'head');
  renderTokens();
  grid.update(result, state, theme);
  lab?.update(result); // crossed-out heads, badges, loss
  if (detailView.kind !== state.view) makeDetailView();
  detailView.update(result, state, theme);
  renderHeadChips();
  combine.update(result, state, theme);
  topk.update(result);
  setText($('detail-caption'), describeHead(result, state.layer, state.head, focusToken(result, state)));
  const notice = $('notice');
  if (result.droppedTokens > 0) {
    notice.hidden = false;
    setText(notice, `This text is longer than the model's context of ${info.config.nPositions} tokens: the first ${result.droppedTokens} tokens were cut, and the views show the last ${result.T}.`);
  } else if (!notice.hidden) {
    notice.hidden = true;
  }
  setText($('stats'), `${result.T} tokens · model ran in ${result.runMs.toFixed(1)} ms`);
  setAttr(document.body, 'data-tokens', String(result.T));
  lastRenderMs = performance.now() - t0;
  document.body.dataset.renders = String(Number(document.body.dataset.renders || 0) + 1);
  clearTimeout(urlTimer);
  urlTimer = setTimeout(() => {
    history.replaceState(null, '', `${location.pathname}?${stateToQuery(urlState())}`);
  }, 300);
}

function urlState() {
  return {
    model: state.model, text: state.text, layer: state.layer, head: state.head,
    heads: state.heads, token: state.token ?? undefined, view: state.view,
  };
}

// ---- export and embed -----------------------------------------------------------------------
function sceneFor(which) {
  if (which === 'grid') return gridScene(result, state, theme).scene;
  if (which === 'combine') return combineScene(result, state, theme).scene;
  if (state.view === 'lines') return linesScene(result, state, theme, detailView.focus ?? null).scene;
  return heatmapScene(result, state, theme).scene;
}
for (const b of document.querySelectorAll('[data-export]')) {
  b.addEventListener('click', async () => {
    if (!result) return;
    const which = b.dataset.export;
    const name = which === 'grid' ? 'grid' : which === 'combine' ? `combine-L${state.layer}` : `${state.view}-L${state.layer}H${state.head}`;
    const scene = sceneFor(which);
    if (b.dataset.format === 'svg') {
      downloadBlob(new Blob([sceneToSvgString(scene, `headscope ${name}`)], { type: 'image/svg+xml' }), `headscope-${name}.svg`);
    } else {
      downloadBlob(await sceneToPngBlob(scene, 2), `headscope-${name}.png`);
    }
  });
}

$('embed-button').addEventListener('click', async () => {
  const embedUrl = new URL('embed.html', location.href).href;
  // size the iframe to the view it shows (caption, widget padding and the credit line around it)
  const scene = sceneFor('detail');
  const width = Math.round(Math.min(960, Math.max(360, scene.width + 24)));
  const height = Math.round(scene.height + 100);
  const snippet = embedSnippet(embedUrl, urlState(), { width, height });
  $('embed-box').hidden = false;
  const code = $('embed-code');
  code.value = snippet;
  code.select();
  const status = $('embed-status');
  try {
    await navigator.clipboard.writeText(snippet);
    status.textContent = 'Copied to the clipboard.';
  } catch {
    status.textContent = 'Selected: press Ctrl+C (or ⌘C) to copy.';
  }
});

// ---- model ---------------------------------------------------------------------------------
const textBox = $('text');
textBox.value = state.text;
let tokenFromCard = false; // the card's 'cooked' token: dropped once the reader edits the text
textBox.addEventListener('input', () => {
  state.text = textBox.value;
  if (tokenFromCard) { state.token = null; tokenFromCard = false; }
  if (state.text.length === 0) {
    $('stats').textContent = 'Type some text to see the heads respond.';
    return;
  }
  runner?.request(state.text);
});

async function start() {
  const fill = $('progress-fill');
  const bar = $('progress');
  try {
    const model = await getModel(state.model, {
      onProgress: ({ loaded, total }) => {
        if (!total) return;
        const pct = Math.min(100, (100 * loaded) / total);
        fill.style.width = `${pct.toFixed(1)}%`;
        bar.setAttribute('aria-valuenow', pct.toFixed(0));
        $('loading-text').textContent = `Loading the model… ${(loaded / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB`;
      },
    });
    info = model.info;
    const c = info.config;
    const card = await loadCard(state.model || 'headscope-base');
    let cardText = '';
    if (card) {
      if (card.loss?.val !== undefined) cardText += ` Validation loss ${Number(card.loss.val).toFixed(3)} nats per token (perplexity ${card.loss.val_perplexity}).`;
      if (card.description) cardText += ` ${card.description}`;
      // Start on what the model card found most telling in the article's sentence (unless the URL chose
      // a head or the text differs): the head linking 'cooked' or 'who' back to 'chef' most above chance,
      // if one does clearly (1.5x uniform attention); else the strongest previous-token head, at 'cooked'.
      if (fromUrl.layer === undefined && fromUrl.head === undefined && state.text === card.chef_sentence?.text) {
        const start = openingHead(card);
        if (start && start.layer < c.nLayer && start.head < c.nHead) {
          state.layer = start.layer;
          state.head = start.head;
          state.heads = [start.head];
          if (fromUrl.token === undefined && Number.isInteger(start.token)) {
            state.token = start.token;
            tokenFromCard = true;
          }
        }
      }
    }
    $('model-info').textContent = `Model: ${info.name}, ${c.nLayer} layers × ${c.nHead} heads, ${(info.parameterCount / 1e6).toFixed(2)} M parameters, context ${c.nPositions} tokens; engine: WebAssembly ${info.simd.simd ? `SIMD (${info.simd.arch})` : 'scalar'} in a Web Worker.${cardText}`;
    runner = new Runner(model, {
      requestOptions: () => ({ ablate: state.ablate }),
      onResult: (r) => {
        const first = !result;
        result = r;
        if (first) {
          $('loading').hidden = true;
          $('app').hidden = false;
          document.body.dataset.ready = 'true';
        }
        renderImmediately();
      },
      onError: (e) => { $('stats').textContent = `The model could not run on this text: ${e.message}`; },
    });
    // the lab panel (web/demo/lab.js); its runs carry the switched-off heads
    lab = installLab({ state, runner, grid, getModel: () => getModel(state.model), getResult: () => result, render, selectHead });
    runner.request(state.text);
  } catch (e) {
    $('loading').classList.add('error');
    const hint = state.model ? '' : ' The default model may not have been built yet; open this page with ?model=<folder URL> to use another model.';
    $('loading-text').textContent = `The model could not be loaded: ${e.message}.${hint}`;
    document.body.dataset.error = 'true';
  }
}
start();
listModels();

// The models this site holds (models/index.json, written by web/demo/build.sh).
let indexPromise = null;
function modelIndex() {
  if (!indexPromise) {
    indexPromise = fetch('models/index.json')
      .then((res) => (res.ok ? res.json() : { models: [] }))
      .then((j) => (Array.isArray(j.models) ? j.models : []))
      .catch(() => []);
  }
  return indexPromise;
}

/** The model card (card.json) of a shipped model, when the site has one; else null. */
/** The head (and query token) the page opens on for the article's sentence, from the model card:
 *  the link to 'chef' whose best head is furthest above uniform attention, when it is at least 1.5x
 *  uniform; otherwise the strongest previous-token head (score >= 0.5) at the query token of 'cooked'. */
function openingHead(card) {
  const links = Object.values(card.chef_sentence?.links || {});
  let best = null;
  for (const link of links) {
    const top = link.top?.[0];
    if (!top || !(link.uniform_baseline > 0)) continue;
    const ratio = top.weight / link.uniform_baseline;
    if (ratio >= 1.5 && (!best || ratio > best.ratio)) best = { layer: top.layer, head: top.head, token: link.query_token, ratio };
  }
  if (best) return best;
  const prev = (card.heads || []).filter((h) => h.prev_token >= 0.5).sort((a, b) => b.prev_token - a.prev_token)[0];
  if (prev) return { layer: prev.layer, head: prev.head, token: card.chef_sentence?.links?.['cooked->chef']?.query_token };
  return null;
}

async function loadCard(name) {
  try {
    const entry = (await modelIndex()).find((m) => m.name === name);
    if (!entry?.card) return null;
    const res = await fetch(`models/${encodeURIComponent(name)}/card.json`);
    return res.ok ? await res.json() : null;
  } catch {
    return null;
  }
}

// A model picker, when the site holds more than one model.
async function listModels() {
  const models = (await modelIndex()).map((m) => m.name);
  const current = state.model || 'headscope-base';
  if (!models.includes(current)) models.push(current);
  if (models.length < 2) return;
  const select = $('model-select');
  select.replaceChildren(...models.map((m) => new Option(m.length > 40 ? `…${m.slice(-39)}` : m, m)));
  select.value = current;
  $('model-pick').hidden = false;
  select.addEventListener('change', () => {
    const next = { ...urlState(), model: select.value === 'headscope-base' ? undefined : select.value };
    location.search = stateToQuery(next);
  });
}

// for the end-to-end tests and curious readers
window.headscopeDemo = { state, get result() { return result; }, get runs() { return runner?.runs ?? 0; }, get renderMs() { return lastRenderMs; } };
