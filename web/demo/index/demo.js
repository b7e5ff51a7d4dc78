// The headscope demo page's controller. Built on the package's public API (headscope-worker.js,
// through the component module's shared model cache) and the views exported by headscope-view.js.
// One state object (`page`), one render path (renderNow), and one way to switch models (useModel).
import {
  Runner,
  DEFAULT_TEXT,
  stateFromQuery,
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
  setFill,
} from '../../component/headscope-view.js';
import { installLab } from './lab-panel.js';
import { installInside } from './inside-panel.js';
import { installContinue } from './continue.js';
import { installSharing } from './share.js';
import { installThemeToggle } from './theme-toggle.js';
import { TokenStrip } from './token-strip.js';
import { HeadChips } from './head-chips.js';
import { installModelChoice, showModelTexts } from './model-choice.js';
import { installAttribution } from '../../component/runtime/attribution.js';
import { watchOnScreen } from './on-screen.js';
import { installPatching } from './patch-panel.js';
import { installWhy } from './explain-panel.js';
import { installCircuits } from './circuits-panel.js';
import { installLongText } from './long-text.js';
import { shortenExplanations } from '../common/more.js';
import { installPageUrl } from './page-url.js';
import { installDetailControls } from './detail-controls.js';
import { startPage } from './start.js';

// the long explanations: their first sentence, and "more"
shortenExplanations(document);

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

// the detail panel's tabs, "Links per token", the layer and head pickers
const controls = installDetailControls({
  state,
  onView: () => {
    makeDetailView();
    render();
  },
  selectHead,
  render,
});

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
  controls.fill(result);
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
  pageUrl.written();
}

// the URL follows what is on screen (page-url.js)
const pageUrl = installPageUrl({ page, panels: () => [patching, why, circuitsPanel] });
const { urlState } = pageUrl;

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
  setFill($('run-progress-fill'), tokens / Math.max(1, total));
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

const models = installModelChoice({ page, useModel, urlState });

startPage({ page, fromUrl, textBox, useModel, models });
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
