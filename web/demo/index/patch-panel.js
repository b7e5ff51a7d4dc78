// The demo page's "Which heads carry the answer?": activation and attribution patching between a
// clean and a corrupted text (model.patch() in the page's worker; the scores are defined in
// cpp/include/headscope/patching.hpp). The texts' tokens aligned with the swapped ones marked; the
// answer and distractor typed or picked from each text's top predictions; the layer x head map, the
// estimate at once and the exact scores as they arrive; a clicked head's scores by position, its
// attention on the clean text and a switch in the other views; the residual stream's map; the
// estimate against the exact scores. The scenes are web/component/charts/patching.js (tested in Node).
// The panel's state lives in the URL (clean, corrupted, answer, distractor, patched=L:H), so an
// article can link to an experiment; such a link scrolls here and runs it.
import { SceneView } from '../../component/views/scene-view.js';
import { HostWidth } from '../../component/views/host-width.js';
import {
  alignTokens,
  headScore,
  patchHeadsScene,
  patchResidScene,
  patchPositionScene,
  patchScatterScene,
  patchLabel,
  patchSummary,
  scoreText,
} from '../../component/charts/patching.js';
import { tokenWords } from '../../component/runtime/theme.js';
import { watchOnScreen } from './on-screen.js';
import { $, setText } from './page-dom.js';
import { PRESETS } from './patch-presets.js';
import { showAligned } from './patch-tokens.js';

// Models up to this size patch as soon as the panel is on screen; larger ones wait for the button
// (GPT-2 small's shape takes seconds to tens of seconds, see bench/README.md)
const AUTO_PARAMETERS = 50e6;
// each head at each position by default up to this many parameters x runs (the default model: 4e3 runs)
const POSITIONS_BUDGET = 2e10;

/**
 * ctx: { getModel(): the page's model, selectHead(l, h), showText(text): the page's text box and
 * views, showPatched(patch | null, text): the views show `text` run with RunOptions.patch (null: as
 * it is), patched(): the patch the views show, lab(): the page's Lab (switch-off), theme(): the
 * page's theme, announce(text) }.
 * Returns { query(): the URL's patching keys, exportScene(), setModel(model), report }.
 */
export function installPatching(ctx) {
  const els = {
    preset: $('patch-preset'),
    why: $('patch-preset-why'),
    clean: $('patch-clean'),
    corrupted: $('patch-corrupted'),
    tokens: $('patch-tokens'),
    align: $('patch-align'),
    answer: $('patch-answer'),
    distractor: $('patch-distractor'),
    answerList: $('patch-answer-list'),
    distractorList: $('patch-distractor-list'),
    byPosition: $('patch-by-position'),
    run: $('patch-run'),
    cancel: $('patch-cancel'),
    progress: $('patch-progress'),
    status: $('patch-status'),
    head: $('patch-head'),
    headText: $('patch-head-text'),
    show: $('patch-show'),
    off: $('patch-off'),
    only: $('patch-only'),
  };
  const views = {
    heads: new SceneView($('patch-heads')),
    position: new SceneView($('patch-position')),
    resid: new SceneView($('patch-resid')),
    scatter: new SceneView($('patch-scatter')),
  };
  const results = $('patch-results');
  const width = new HostWidth($('patch-heads'), () => draw());
  const lowerWidth = new HostWidth($('patch-resid'), () => draw());
  const panel = {
    report: null, // the latest report (partial while running)
    selected: null, // [layer, head]
    controller: null,
    running: null,
    startedAt: 0,
    firstAt: 0,
    autoRan: false,
    history: [], // per report shown: { done: exact runs, estimated: heads still estimates } (tests read it)
  };

  // ---- the texts: from the URL, else the first preset --------------------------------------
  const q = new URLSearchParams(location.search);
  const fromUrl = q.has('clean') && q.has('corrupted');
  for (const [i, p] of PRESETS.entries()) els.preset.append(new Option(p.name, String(i)));
  els.preset.append(new Option('Your own texts', 'own'));
  function usePreset(p) {
    els.clean.value = p.clean;
    els.corrupted.value = p.corrupted;
    els.answer.value = p.answer;
    els.distractor.value = p.distractor;
    setText(els.why, p.why);
  }
  if (fromUrl) {
    els.clean.value = q.get('clean');
    els.corrupted.value = q.get('corrupted');
    els.answer.value = q.get('answer') ?? '';
    els.distractor.value = q.get('distractor') ?? '';
    const i = PRESETS.findIndex((p) => p.clean === els.clean.value && p.corrupted === els.corrupted.value);
    els.preset.value = i >= 0 ? String(i) : 'own';
    if (i >= 0) setText(els.why, PRESETS[i].why);
    const m = /^(\d+):(\d+)$/.exec(q.get('patched') ?? '');
    if (m) panel.selected = [Number(m[1]), Number(m[2])];
  } else usePreset(PRESETS[0]);
  els.preset.addEventListener('change', () => {
    if (els.preset.value === 'own') {
      setText(els.why, 'Type two texts with the same number of tokens, differing where the answer should come from.');
      return;
    }
    usePreset(PRESETS[Number(els.preset.value)]);
    textsChanged();
    start();
  });

  // ---- tokens aligned, and each text's top predictions for the answer lists ------------------
  let alignTimer = 0;
  let alignSeq = 0;
  let aligned = null; // alignTokens() of the texts in the boxes, once tokenized
  function textsChanged() {
    clearTimeout(alignTimer);
    alignTimer = setTimeout(alignNow, 250);
  }
  async function alignNow() {
    const model = ctx.getModel();
    if (!model) return;
    const seq = ++alignSeq;
    const clean = els.clean.value;
    const corrupted = els.corrupted.value;
    try {
      const [a, b] = await Promise.all([model.tokenize(clean), model.tokenize(corrupted)]);
      if (seq !== alignSeq) return;
      aligned = alignTokens(a, b);
      drawTokens(aligned);
      await suggest(model, seq, clean, corrupted);
    } catch (e) {
      if (seq === alignSeq) setText(els.align, e.message);
    }
  }
  function drawTokens(al) {
    setText(els.align, showAligned(els.tokens, al));
    els.run.disabled = !al.sameLength || al.differing === 0;
  }
  async function suggest(model, seq, clean, corrupted) {
    for (const [text, list] of [
      [clean, els.answerList],
      [corrupted, els.distractorList],
    ]) {
      if (!text) continue;
      const r = await model.run(text);
      if (seq !== alignSeq) return;
      list.replaceChildren(...r.topNext.slice(0, 8).map((p) => new Option(`${(p.prob * 100).toFixed(1)}%`, p.token)));
    }
  }
  for (const box of [els.clean, els.corrupted])
    box.addEventListener('input', () => {
      els.preset.value = 'own';
      setText(els.why, 'Type two texts with the same number of tokens, differing where the answer should come from.');
      textsChanged();
      writeUrl();
    });
  for (const box of [els.answer, els.distractor]) {
    box.addEventListener('change', writeUrl);
    box.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') start();
    });
  }

  // ---- running ------------------------------------------------------------------------------
  els.run.addEventListener('click', () => start());
  els.cancel.addEventListener('click', () => panel.controller?.abort());

  function start() {
    const model = ctx.getModel();
    if (!model) return;
    panel.controller?.abort();
    const controller = new AbortController();
    panel.controller = controller;
    const previous = panel.running ?? Promise.resolve();
    const run = previous.then(() => patchNow(model, controller.signal));
    panel.running = run;
    run.finally(() => {
      if (panel.running === run) panel.running = null;
    });
    writeUrl();
    return run;
  }

  async function patchNow(model, signal) {
    if (signal.aborted) return;
    const { config } = model.info;
    const T = aligned?.columns.length ?? 16;
    const byPosition = els.byPosition.checked;
    const options = {
      clean: els.clean.value,
      corrupted: els.corrupted.value,
      byPosition,
      signal,
      onProgress: ({ fraction, report }) => {
        if (signal.aborted) return;
        if (!panel.firstAt) {
          panel.firstAt = performance.now();
          ctx.announce(`Estimated scores are shown; exact scores follow. ${patchLabel(report)}`);
        }
        show(report, fraction);
      },
    };
    const answer = els.answer.value;
    const distractor = els.distractor.value;
    if (answer) options.answer = answer;
    if (distractor) options.distractor = distractor;
    els.run.disabled = true;
    els.cancel.disabled = false;
    els.progress.hidden = false;
    els.progress.value = 0;
    panel.startedAt = performance.now();
    panel.firstAt = 0;
    panel.history = [];
    document.body.dataset.patching = 'running';
    setText(
      els.status,
      `Estimating every score (one forward and one backward pass)… ${config.nLayer * config.nHead} heads${byPosition ? ` at ${T} positions` : ''}.`,
    );
    try {
      const report = await model.patch(options);
      if (signal.aborted) return;
      show(report, 1);
      const s = ((performance.now() - panel.startedAt) / 1000).toFixed(1);
      setText(els.status, `Every score is exact: ${report.exactRunsTotal} patched runs in ${s} s. ${ldText(report)}`);
      ctx.announce(patchLabel(report));
      document.body.dataset.patching = 'done';
    } catch (e) {
      if (e.name === 'AbortError' || signal.aborted) {
        setText(els.status, panel.report ? 'Cancelled: the scores not computed yet stay estimates.' : 'Cancelled.');
        document.body.dataset.patching = 'cancelled';
      } else {
        setText(els.status, `The patching could not run: ${e.message}`);
        document.body.dataset.patching = 'error';
      }
    } finally {
      if (panel.controller?.signal === signal) {
        els.cancel.disabled = true;
        els.progress.hidden = true;
        els.run.disabled = !!aligned && (!aligned.sameLength || aligned.differing === 0);
      }
    }
  }

  const ldText = (r) =>
    `Logit difference ${JSON.stringify(r.answer.text)} − ${JSON.stringify(r.distractor.text)}: ${r.ldClean.toFixed(2)} on the clean text, ${r.ldCorrupted.toFixed(2)} on the corrupted one.`;

  function show(report, fraction) {
    panel.report = report;
    panel.history.push({ done: report.exactRunsDone, estimated: report.heads.filter(Number.isNaN).length });
    results.hidden = false;
    els.progress.value = fraction;
    if (!report.complete)
      setText(
        els.status,
        `${report.exactRunsDone} of ${report.exactRunsTotal} exact runs done (paler cells with ≈ are still estimates). ${ldText(report)}`,
      );
    draw();
  }

  // ---- drawing ------------------------------------------------------------------------------
  let drawQueued = false;
  function draw() {
    if (drawQueued) return;
    drawQueued = true;
    requestAnimationFrame(() => {
      drawQueued = false;
      drawNow();
    });
  }
  function drawNow() {
    const r = panel.report;
    if (!r || !onScreen.visible) return;
    const theme = ctx.theme();
    if (!theme) return;
    if (panel.selected && (panel.selected[0] >= r.nLayer || panel.selected[1] >= r.nHead)) panel.selected = null;
    const w = Math.max(260, width.width);
    views.heads.show(patchHeadsScene(r, theme, { selected: panel.selected, width: w }).scene, patchLabel(r), 'group');
    const lw = Math.max(260, lowerWidth.width);
    views.resid.show(
      patchResidScene(r, theme, { width: lw }).scene,
      `The residual stream patched at each layer and position: ${residSentence(r)}`,
    );
    const sw = Math.min(460, lw);
    views.scatter.show(patchScatterScene(r, theme, { width: sw, selected: panel.selected }).scene, scatterSentence(r));
    drawHead(r, theme, w);
  }
  function residSentence(r) {
    let best = null;
    for (let l = 0; l < r.nLayer; l++)
      for (let p = 0; p < r.tokens; p++) {
        const v = r.resid[l * r.tokens + p];
        if (Number.isFinite(v) && (!best || v > best.v)) best = { l, p, v };
      }
    return best
      ? `highest ${scoreText(best.v)} entering layer ${best.l} at token ${best.p} (${tokenWords(r.tokensClean[best.p].text)}).`
      : 'not computed yet.';
  }
  function scatterSentence(r) {
    const s = patchSummary(r);
    return s.worst
      ? `Attribution estimate against exact score for every head computed so far; furthest from its exact score: layer ${s.worst.l} head ${s.worst.h}, estimated ${scoreText(s.worst.attribution)}, exact ${scoreText(s.worst.exact)}.`
      : 'Attribution estimate against exact score: no exact score yet.';
  }
  function drawHead(r, theme, w) {
    const sel = panel.selected;
    els.head.hidden = !sel;
    if (!sel) return;
    const [l, h] = sel;
    const { value, exact } = headScore(r, l, h);
    setText(
      els.headText,
      `Layer ${l}, head ${h}: ${exact ? 'score' : 'estimated score'} ${scoreText(value)} (estimate ${scoreText(r.headsAttribution[l * r.nHead + h])}).`,
    );
    const off = (ctx.lab()?.ablate ?? []).some(([a, b]) => a === l && b === h);
    els.off.setAttribute('aria-pressed', off ? 'true' : 'false');
    setText(els.off, off ? 'Switch it on again in the other views' : 'Switch it off in the other views');
    const on = ctx.patched();
    const only = !!on && on.layer === l && on.head === h;
    els.only.setAttribute('aria-pressed', only ? 'true' : 'false');
    setText(els.only, only ? 'Stop patching it in the other views' : 'Patch only this head in the other views');
    const pos = patchPositionScene(r, theme, { layer: l, head: h, width: w });
    $('patch-position').hidden = !pos;
    if (pos) views.position.show(pos.scene, `Layer ${l} head ${h} patched at each position in turn.`);
  }

  // a head: click, or Enter / Space on a focused cell; arrows move between cells
  const headsHost = $('patch-heads');
  function select(l, h, focus) {
    panel.selected = [l, h];
    drawNow();
    writeUrl();
    if (focus) headsHost.querySelector(`.hs-patch-cell[data-layer="${l}"][data-head="${h}"]`)?.focus();
  }
  headsHost.addEventListener('click', (e) => {
    const c = e.target.closest?.('.hs-patch-cell');
    if (c) select(Number(c.dataset.layer), Number(c.dataset.head), true);
  });
  headsHost.addEventListener('keydown', (e) => {
    const c = e.target.closest?.('.hs-patch-cell');
    const r = panel.report;
    if (!c || !r) return;
    let l = Number(c.dataset.layer);
    let h = Number(c.dataset.head);
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      select(l, h, true);
      return;
    }
    const moves = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };
    const m = moves[e.key];
    if (!m) return;
    e.preventDefault();
    l = Math.max(0, Math.min(r.nLayer - 1, l + m[0]));
    h = Math.max(0, Math.min(r.nHead - 1, h + m[1]));
    for (const x of headsHost.querySelectorAll('.hs-patch-cell')) x.tabIndex = -1;
    const next = headsHost.querySelector(`.hs-patch-cell[data-layer="${l}"][data-head="${h}"]`);
    if (next) {
      next.tabIndex = 0;
      next.focus();
    }
  });
  els.show.addEventListener('click', () => {
    if (!panel.selected) return;
    ctx.showText(els.clean.value);
    ctx.selectHead(...panel.selected);
  });
  // the views above: the corrupted text with only this head's output from the clean text (a patched
  // run, RunOptions.patch), or back to the text as it is
  els.only.addEventListener('click', () => {
    if (!panel.selected) return;
    const [layer, head] = panel.selected;
    const on = ctx.patched();
    if (on && on.layer === layer && on.head === head) ctx.showPatched(null);
    else ctx.showPatched({ from: els.clean.value, layer, head }, els.corrupted.value);
    drawNow();
  });
  els.off.addEventListener('click', () => {
    if (!panel.selected) return;
    ctx.lab()?.toggle(...panel.selected);
    drawNow();
  });

  // ---- on screen, URL, model ------------------------------------------------------------------
  const section = $('patch');
  const onScreen = watchOnScreen(section, (shown) => {
    if (!shown) return;
    draw();
    autoRun();
  });
  function autoRun() {
    const model = ctx.getModel();
    if (!model || panel.autoRan || !onScreen.visible) return;
    if (!fromUrl && model.info.parameterCount > AUTO_PARAMETERS) return;
    panel.autoRan = true;
    start();
  }
  function writeUrl() {
    clearTimeout(writeUrl.timer);
    writeUrl.timer = setTimeout(() => {
      const next = new URLSearchParams(location.search);
      for (const [k, v] of Object.entries(query()))
        if (v === undefined) next.delete(k);
        else next.set(k, v);
      history.replaceState(null, '', `${location.pathname}?${next.toString()}`);
    }, 300);
  }
  // the keys this panel owns (undefined: absent); demo.js keeps them when it writes its own
  function query() {
    const touched = fromUrl || panel.report || panel.running;
    if (!touched)
      return { clean: undefined, corrupted: undefined, answer: undefined, distractor: undefined, patched: undefined };
    return {
      clean: els.clean.value,
      corrupted: els.corrupted.value,
      answer: els.answer.value || undefined,
      distractor: els.distractor.value || undefined,
      patched: panel.selected ? `${panel.selected[0]}:${panel.selected[1]}` : undefined,
    };
  }

  function setModel(model) {
    panel.controller?.abort();
    panel.report = null;
    panel.autoRan = false;
    results.hidden = true; // the last model's maps
    const { parameterCount, config } = model.info;
    const runs = config.nLayer * config.nHead * 24;
    els.byPosition.checked = parameterCount * runs <= POSITIONS_BUDGET;
    setText(els.status, '');
    textsChanged();
    autoRun();
  }
  // the page's first result is on screen: a link to an experiment scrolls here (and the panel, now
  // in view, runs it)
  function revealIfLinked() {
    if (fromUrl) section.scrollIntoView({ block: 'start' });
  }

  return {
    query,
    setModel,
    revealIfLinked,
    draw,
    presets: PRESETS,
    exportScene: () => (panel.report ? views.heads.scene : null),
    get report() {
      return panel.report;
    },
    get history() {
      return panel.history;
    },
    get selected() {
      return panel.selected;
    },
    idle: () => panel.running ?? Promise.resolve(),
    start,
  };
}
