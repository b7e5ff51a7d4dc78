// The headscope demo page's controller. Built on the package's public API (headscope-worker.js,
// through the component module's shared model cache) and the views exported by headscope-view.js.
// One state object (`page`), one render path (renderNow), and one way to switch models (useModel).
import {
  getModel,
  getFastTypingModel,
  loadModelFromBuffers,
  setThreads,
  Runner,
  DEFAULT_TEXT,
  stateFromQuery,
  stateToQuery,
  GridView,
  HeatmapView,
  LinesView,
  CombineView,
  TopKView,
  Tooltip,
  describeHead,
  focusToken,
  gridScene,
  heatmapScene,
  linesScene,
  combineScene,
} from '../../component/headscope-view.js';
import { installLab } from './lab-panel.js';
import { installInside } from './inside-panel.js';
import { installContinue } from './continue.js';
import { installSharing } from './share.js';
import { installThemeToggle } from './theme-toggle.js';
import { TokenStrip } from './token-strip.js';
import { HeadChips } from './head-chips.js';
import { loadCard } from '../common/models.js';
import { cardOpening } from './card-opening.js';
import { installModelChoice, showModelTexts } from './model-choice.js';
import { loadTrainedModel } from '../common/trained-model.js';
import { installAttribution } from '../../component/runtime/attribution.js';
import { watchOnScreen } from './on-screen.js';
import { installPatching } from './patch-panel.js';
import { installWhy } from './explain-panel.js';
import { installCircuits } from './circuits-panel.js';
import { installLongText } from './long-text.js';
import { shortenExplanations } from '../common/more.js';

// the long explanations: their first sentence, and "more"
shortenExplanations(document);

// ?threads=N as the page was opened with: it chose the engine, so the URL keeps it
const URL_THREADS = new URLSearchParams(location.search).get('threads');

const $ = (id) => document.getElementById(id);
const reducedMotion = () => window.matchMedia('(prefers-reduced-motion: reduce)').matches;
const setText = (node, text) => {
  if (node.textContent !== text) node.textContent = text;
}; // text, never markup

// ---- state --------------------------------------------------------------------------------
const fromUrl = stateFromQuery(location.search);
const page = {
  state: {
    model: fromUrl.model, // a shipped name or folder URL; undefined: the default model
    text: fromUrl.text ?? DEFAULT_TEXT,
    layer: fromUrl.layer ?? 0,
    head: fromUrl.head ?? 0,
    heads: fromUrl.heads ?? [],
    token: fromUrl.inside ?? fromUrl.token ?? null, // a link to "Inside this head" names its query token
    view: fromUrl.view === 'lines' ? 'lines' : 'heatmap', // the detail panel's tab
    links: fromUrl.links, // links per token in the lines view (0: all; default 3)
    ablate: [], // heads switched off, [[layer, head], ...]
    patch: null, // the patching panel's "patch only this head": RunOptions.patch of every run, or null
    why: null, // "Why does it look there?": the heatmap cell { q, k } picked, or null (explain-panel.js)
    whyView: 'raw', // its split: 'raw' or 'contrast'
    step: fromUrl.step ?? 1, // "Inside this head": its step (1-6), in the URL once used
    insideOpen: fromUrl.inside !== undefined,
    by: fromUrl.by ?? 'weight', // the attention views' colours: weight, or weight × value size
  },
  model: null, // the loaded model (worker client)
  modelName: '', // its name as the page shows it (a local folder's name for a folder from disk)
  local: false, // true for a model read from the reader's disk (no URL can name it)
  info: null,
  result: null,
  theme: null,
  runner: null,
  lab: null,
  tokenFromCard: false, // the card's 'cooked' token: dropped once the reader edits the text
  lastRenderMs: 0,
};
const { state } = page;
// a long text's runs return thumbnails, and the heads the views show are pulled (long-text.js)
const longText = installLongText(page);

// ---- views ---------------------------------------------------------------------------------
const tooltip = new Tooltip($('detail-scroll'));
const grid = new GridView($('grid'), {
  onSelect: (l, h, { focus } = {}) => selectHead(l, h, focus),
  onOpen: () => {
    const detail = $('detail');
    const r = detail.getBoundingClientRect();
    if (r.top > window.innerHeight || r.bottom < 0)
      detail.scrollIntoView({ behavior: reducedMotion() ? 'auto' : 'smooth', block: 'start' });
  },
});
let detailView = null;
function makeDetailView() {
  const host = $('detail-view');
  host.replaceChildren();
  $('detail-scroll').classList.remove('hs-zoomed');
  tooltip.hide();
  const onSelectToken = (t) => selectToken(t);
  detailView =
    state.view === 'lines'
      ? new LinesView(host, { onSelectToken, onSelectCell: (q, k) => why.pick(q, k) })
      : new HeatmapView(host, { tooltip, onSelectToken, onSelectCell: (q, k) => why.pick(q, k), onAnnounce: announce });
  detailView.kind = state.view;
}
makeDetailView();
const combine = new CombineView($('combine'), { onSelectHead: (h) => selectHead(state.layer, h, false) });
const attribution = installAttribution({
  getModel: () => page.model,
  idle: async () => page.runner?.idle(),
  onUpdate: () => render(),
});
const topk = new TopKView($('topk'));
// panels below the fold are drawn (and ask the model for their numbers) when they come into view
const combineOnScreen = watchOnScreen($('combine'), (shown) => {
  if (shown) render();
});
const topkOnScreen = watchOnScreen($('topk'), (shown) => {
  if (shown) render();
});
const tokens = new TokenStrip($('tokens'), { onSelect: (t) => selectToken(t) });
const chips = new HeadChips($('head-chips'), {
  onChange: (heads, head) => {
    state.heads = heads;
    state.head = head;
    grid.select(state.layer, state.head, false);
    render();
  },
});
// "Which heads carry the answer?": its buttons show a head's attention on the clean text here and
// switch it off through the lab
const patching = installPatching({
  getModel: () => page.model,
  selectHead: (l, h) => selectHead(l, h, false),
  showText: (text) => {
    textBox.value = text;
    textBox.dispatchEvent(new Event('input'));
    $('detail').scrollIntoView({ block: 'start' });
  },
  showPatched,
  patched: () => state.patch,
  lab: () => page.lab,
  theme: () => page.theme,
  announce,
});
// "Why does it look there?": the selected head's score at a heatmap cell, split into its sources
const why = installWhy({
  state,
  getModel: () => page.model,
  idle: async () => page.runner?.idle(),
  selectHead: (l, h) => selectHead(l, h, false),
  theme: () => page.theme,
  render: () => render(),
});
// "Heads working together": composition and copying from the weights, the selected head's upstream heads
const circuitsPanel = installCircuits({
  getModel: () => page.model,
  idle: async () => page.runner?.idle(),
  selectHead: (l, h) => selectHead(l, h, false),
});
installThemeToggle($('theme-toggle'), (theme) => {
  page.theme = theme;
  render();
  patching.draw();
  why.draw();
});
const inside = installInside({
  state,
  announce,
  render,
  reducedMotion,
  wantValueSizes,
  onExplain: (q, k) => {
    why.pick(q, k);
    $('why').scrollIntoView({ behavior: reducedMotion() ? 'auto' : 'smooth', block: 'start' });
  },
});
const writer = installContinue({
  $,
  state,
  textBox: $('text'),
  announce,
  getModel: () => page.model,
  getRunner: () => page.runner,
  getResult: () => page.result,
  show: (r) => {
    page.result = r;
    renderImmediately();
  },
});

// "Weight × value size" picked: the text runs again, for its value sizes (the engine's cache holds
// it, so only the sizes are computed). Not while the model writes: a request would stop it, and
// continue.js asks once the writing is over.
function wantValueSizes() {
  if (page.result && !page.result.valueNorms && state.text && !writer.writing) page.runner?.request(state.text);
}

function announce(text) {
  setText($('live'), text);
}

function selectHead(layer, head, focus) {
  const changed = layer !== state.layer || head !== state.head;
  state.layer = layer;
  state.head = head;
  if (!state.heads.includes(head) || changed) state.heads = [head];
  grid.select(layer, head, focus);
  render();
  if (page.result) announce(describeHead(page.result, layer, head, focusToken(page.result, state)));
}

function selectToken(t) {
  page.tokenFromCard = false;
  state.token = page.result && t === page.result.T - 1 ? null : t;
  render();
  if (page.result) announce(describeHead(page.result, state.layer, state.head, focusToken(page.result, state)));
}

// the detail panel's tabs: heatmap | lines
const tabs = [...document.querySelectorAll('[role="tab"]')];
function markTabs() {
  for (const tab of tabs) {
    const on = tab.dataset.view === state.view;
    tab.setAttribute('aria-selected', on ? 'true' : 'false');
    tab.tabIndex = on ? 0 : -1;
  }
  $('detail-view').setAttribute('aria-labelledby', `tab-${state.view}`);
}
function setView(view) {
  if (view === state.view) return;
  state.view = view;
  markTabs();
  makeDetailView();
  render();
}
for (const tab of tabs) {
  tab.addEventListener('click', () => setView(tab.dataset.view));
  tab.addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
    const next = tab.dataset.view === 'heatmap' ? 'lines' : 'heatmap';
    setView(next);
    $(`tab-${next}`).focus();
  });
}
markTabs();

const linksSelect = $('links-select');
if (Number.isInteger(state.links)) linksSelect.value = String(state.links);
linksSelect.addEventListener('change', () => {
  state.links = Number(linksSelect.value);
  render();
});

$('layer-select').addEventListener('change', (e) => selectHead(Number(e.target.value), state.head, false));
$('head-select').addEventListener('change', (e) => selectHead(state.layer, Number(e.target.value), false));

function fillSelect(select, n, value, word) {
  if (select.options.length !== n) {
    select.replaceChildren(...Array.from({ length: n }, (_, i) => new Option(`${word} ${i}`, String(i))));
  }
  if (select.value !== String(value)) select.value = String(value);
}

// ---- the one render path ------------------------------------------------------------------
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
function renderNow() {
  const { result, theme } = page;
  if (!result || !theme) return;
  // a long text's result holds only the heads pulled for it: another head's views wait for its
  // weights (the engine may be busy with a side run), and everything else draws now
  const held = longText.ready(result);
  if (!held) longText.pull(result).then((current) => current && page.result === result && render(), showRunError);
  const t0 = performance.now();
  state.layer = Math.min(state.layer, result.nLayer - 1);
  state.head = Math.min(state.head, result.nHead - 1);
  state.heads = state.heads.filter((h) => h < result.nHead);
  if (Number.isInteger(state.token) && state.token >= result.T) state.token = null;
  fillSelect($('layer-select'), result.nLayer, state.layer, 'layer');
  fillSelect($('head-select'), result.nHead, state.head, 'head');
  // while a question of "predict, then reveal" is open, the names must not give the weights away
  const quiz = page.lab?.quiz;
  const writing = writer.update(result); // the tokens the model wrote, and the last one's draw
  if (held) tokens.update(result, state, theme, { weightsHidden: !!quiz && !quiz.revealed, written: writing.written });
  grid.update(result, state, theme);
  page.lab?.update(result); // crossed-out heads, badges, loss
  if (detailView.kind !== state.view) makeDetailView();
  inside.update(result, theme);
  if (held) detailView.update(result, state, theme);
  if (held) why.update(result);
  chips.update(result, state, theme);
  const linksPick = $('links-pick');
  if (linksPick.hidden !== (state.view !== 'lines')) linksPick.hidden = state.view !== 'lines';
  if (combineOnScreen.visible) combine.update(result, state, theme, attribution.shown(result, state));
  if (topkOnScreen.visible) topk.update(result, { drawn: writing.drawn });
  if (held) circuitsPanel.update(result, state, theme);
  setText(
    $('detail-caption'),
    held
      ? describeHead(result, state.layer, state.head, focusToken(result, state))
      : `Layer ${state.layer}, head ${state.head}: reading its weights from the engine…`,
  );
  const notice = $('notice');
  if (result.droppedTokens > 0) {
    notice.hidden = false;
    setText(
      notice,
      `This text is longer than the model's context of ${page.info.config.nPositions} tokens: the first ${result.droppedTokens} tokens were cut, and the views show the last ${result.T}.`,
    );
  } else if (!notice.hidden) {
    notice.hidden = true;
  }
  setText($('stats'), `${result.T} tokens · model ran in ${result.runMs.toFixed(1)} ms`);
  if (document.body.dataset.tokens !== String(result.T)) document.body.dataset.tokens = String(result.T);
  page.lastRenderMs = performance.now() - t0;
  document.body.dataset.renders = String(Number(document.body.dataset.renders || 0) + 1);
  clearTimeout(urlTimer);
  urlTimer = setTimeout(() => {
    const query = [stateToQuery(urlState()), panelsQuery()].filter(Boolean).join('&');
    const threads = URL_THREADS === null ? '' : `${query ? '&' : ''}threads=${encodeURIComponent(URL_THREADS)}`;
    history.replaceState(null, '', `${location.pathname}?${query}${threads}`);
  }, 300);
}

// the panels' own keys (patching: clean, corrupted, ...; why, whyview) and the lab's switched-off heads
function panelsQuery() {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...patching.query(), ...why.query(), ...circuitsPanel.query() }))
    if (v !== undefined) q.set(k, v);
  const off = new URLSearchParams(location.search).get('off');
  if (off) q.set('off', off);
  return q.toString();
}

// A model from the reader's disk has no URL: the URL keeps the text and the view, not the model.
function urlState() {
  return {
    model: page.local ? undefined : state.model,
    text: state.text,
    layer: state.layer,
    head: state.head,
    heads: state.heads,
    token: state.token ?? undefined,
    view: state.view,
    links: state.links,
    by: state.by,
    ...(state.insideOpen && page.result ? { inside: focusToken(page.result, state), step: state.step } : {}),
  };
}

// ---- export and embed -----------------------------------------------------------------------
function sceneFor(which) {
  const { result, theme } = page;
  if (which === 'grid') return gridScene(result, state, theme).scene;
  if (which === 'combine')
    return combineScene(result, state, theme, attribution.shown(result, state), { width: combine.width }).scene;
  if (which === 'inside') return inside.exportScene();
  if (which === 'patch') return patching.exportScene();
  if (which === 'why') return why.exportScene();
  if (which === 'circuits') return circuitsPanel.exportScene();
  if (state.view === 'lines') return linesScene(result, state, theme, detailView.focus ?? null).scene;
  return heatmapScene(result, state, theme, detailView.exportOptions?.() ?? {}).scene; // what the reader sees, zoomed
}
installSharing({ sceneFor, hasResult: () => !!page.result, state, urlState });

// ---- text ----------------------------------------------------------------------------------
const textBox = $('text');
textBox.value = state.text;
textBox.addEventListener('input', () => {
  state.text = textBox.value;
  state.why = null; // the cell's positions belong to the text before the edit
  if (state.patch) showPatched(null, undefined, false); // an edited text is no longer the patched one
  if (page.tokenFromCard) {
    state.token = null;
    page.tokenFromCard = false;
  }
  if (state.text.length === 0) {
    $('stats').textContent = 'Type some text to see the heads respond.';
    return;
  }
  page.runner?.request(state.text);
});

// The patching panel's "patch only this head": the views show `text` (the corrupted text) run with
// `patch` ({ from: the clean text, layer, head }), until stopped or the text is edited. null: as it is.
function showPatched(patch, text, run = true) {
  state.patch = patch;
  const box = $('patched');
  box.hidden = !patch;
  setText(
    $('patched-text'),
    patch
      ? `The views show this text with layer ${patch.layer}, head ${patch.head}'s output taken from the clean text (${JSON.stringify(patch.from)}).`
      : '',
  );
  if (text !== undefined) {
    textBox.value = text;
    state.text = text;
  }
  if (run) page.runner?.request(state.text);
  patching.draw();
}
$('patched-stop').addEventListener('click', () => showPatched(null));

// ---- long runs: progress and cancel ----------------------------------------------------------
// A long run (a big model on a long text) reports its progress in steps of tokens; the page stays
// responsive meanwhile (the run is in the worker), and Cancel stops it between two steps.
function showRunError(e) {
  setText($('stats'), `The model could not run on this text: ${e.message}`);
}
function showProgress(tokens, total) {
  $('run-progress').hidden = false;
  setText($('run-progress-text'), `Running the model: ${tokens} of ${total} tokens…`);
  $('run-progress-fill').style.width = `${((100 * tokens) / Math.max(1, total)).toFixed(1)}%`;
}
function hideProgress() {
  if (!$('run-progress').hidden) $('run-progress').hidden = true;
}
$('run-cancel').addEventListener('click', () => page.runner?.cancel());

// ---- models --------------------------------------------------------------------------------
/**
 * Makes `model` the page's model: a new runner and lab, the texts that name it, a run of the text.
 * The previous model (if any) keeps working until this point, and is then disposed of if it was
 * the page's own (shipped models stay in the shared cache for other widgets).
 */
function useModel(model, { name, local = false, card = null }) {
  const previous = page.local ? page.model : null;
  page.model = model;
  page.info = model.info;
  longText.clear();
  page.modelName = name;
  page.local = local;
  showModelTexts(model, { name, local, card });
  // the old model's runs (and writing) stop here: none may write into the result on screen any more
  writer.stop('model');
  if (page.runner) {
    page.runner.reuseResults = false;
    page.runner.cancel();
  }
  page.runner = new Runner(model, {
    reuseResults: true, // typing at the end of 1,024 tokens of GPT-2 moves 0.6 MB, not 600
    requestOptions: (text) => ({
      ablate: state.ablate,
      valueNorms: state.by === 'value',
      patch: state.patch,
      ...longText.runOptions(text),
    }),
    onProgress: ({ tokens, total }) => showProgress(tokens, total),
    onCancel: () => {
      hideProgress();
      if (!page.runner?.pending) setText($('stats'), 'The run was cancelled: edit the text to run the model again.');
    },
    onResult: (r) => {
      if (page.runner?.model !== model) return; // a result of the model just replaced
      longText.absorb(r); // a long text's result: the new rows of the heads shown came with it
      if (!longText.ready(r)) {
        // a long text's result: the heads the views show first (the last frame stays meanwhile)
        longText.pull(r).then((current) => current && page.runner?.model === model && showResult(r), showRunError);
        return;
      }
      showResult(r);
    },
    onError: (e) => {
      $('stats').textContent = `The model could not run on this text: ${e.message}`;
    },
  });
  function showResult(r) {
    hideProgress();
    const first = !page.result;
    page.result = r;
    if (first) {
      $('loading').hidden = true;
      $('app').hidden = false;
      document.body.dataset.ready = 'true';
    }
    renderImmediately();
    if (first && state.insideOpen)
      inside.reveal(); // a link to one step of "Inside this head"
    else if (first) patching.revealIfLinked(); // a link to a patching experiment
  }
  inside.useModel(model, page.runner);
  patching.setModel(model);
  circuitsPanel.setModel(model);
  page.lab?.dispose();
  state.ablate = [];
  showPatched(null, undefined, false); // a patch names another model's heads
  page.lab = installLab({
    state,
    runner: page.runner,
    grid,
    card,
    getModel: async () => model,
    getResult: () => page.result,
    render,
    selectHead,
  });
  document.body.dataset.model = name;
  page.runner.request(state.text);
  if (previous && previous !== model) previous.dispose();
}

// ?trained=1: the model the training page saved in this browser, on the probe text it trained for
async function startTrained() {
  const saved = await loadTrainedModel();
  if (!saved)
    throw new Error(
      'no trained model is stored in this browser: train one on the training page (train.html) and open it from there',
    );
  state.text = saved.text;
  textBox.value = saved.text;
  const model = await loadModelFromBuffers(saved.files);
  const name = `trained ${saved.name}`;
  useModel(model, { name, local: true });
  models.addLocal(`${name} (from the training page)`, name);
}

async function start() {
  const fill = $('progress-fill');
  const bar = $('progress');
  try {
    // ?threads=N: the engine's threads (1: the single-threaded build), for a reader to compare
    if (URL_THREADS !== null) setThreads(/^\d+$/.test(URL_THREADS) ? Number(URL_THREADS) : URL_THREADS);
    if (new URLSearchParams(location.search).get('trained') === '1') {
      await startTrained();
      return;
    }
    const model = await getFastTypingModel(state.model, {
      onProgress: ({ loaded, total }) => {
        if (!total) return;
        const pct = Math.min(100, (100 * loaded) / total);
        fill.style.width = `${pct.toFixed(1)}%`;
        bar.setAttribute('aria-valuenow', pct.toFixed(0));
        $('loading-text').textContent =
          `Loading the model… ${(loaded / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB`;
      },
    });
    const name = model.info.name;
    const card = await loadCard(state.model || 'headscope-base');
    // the article's sentence opens on the card's most telling head, unless the URL chose one
    const opening = await cardOpening(model, card, { text: state.text, fromUrl });
    if (opening) {
      state.layer = opening.layer;
      state.head = opening.head;
      state.heads = [opening.head];
      if (opening.token !== undefined) {
        state.token = opening.token;
        page.tokenFromCard = true;
      }
    }
    useModel(model, { name, card });
  } catch (e) {
    $('loading').classList.add('error');
    const hint = state.model
      ? ''
      : ' The default model may not have been built yet; open this page with ?model=<folder URL> to use another model.';
    $('loading-text').textContent = `The model could not be loaded: ${e.message}.${hint}`;
    document.body.dataset.error = 'true';
  }
}

const models = installModelChoice({ page, useModel, urlState });

start();
models.list();

// for the end-to-end tests and curious readers
window.headscopeDemo = {
  state,
  get result() {
    return page.result;
  },
  get runs() {
    return page.runner?.runs ?? 0;
  },
  get renderMs() {
    return page.lastRenderMs;
  },
  get model() {
    return page.model;
  },
  get theme() {
    return page.theme;
  },
  get runner() {
    return page.runner;
  },
  idle: () => page.runner?.idle(), // resolves once no run is pending or in flight
  grid, // grid.weightAt(layer, head, q, k): the weight its canvas shows
  pulled: longText.pulled, // a long text's heads pulled from the engine: rowsPulled
  patching, // the patching panel: its report, idle(), start()
  circuits: circuitsPanel, // "Heads working together": circuits, upstream, idle()
  why, // "Why does it look there?": its split, idle()
};
