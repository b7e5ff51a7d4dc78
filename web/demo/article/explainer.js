// article.html, "Many heads, one sentence": the explainer's own figures and numbers around the
// <headscope-view> and <headscope-lab> widgets its HTML holds. Every number the text states is
// computed here from the site's model list (models/index.json), a model card or a live run, so
// ?model=<shipped name or folder URL> (which also points every widget without its own `model` at
// that model) changes them. Figures are drawn when they come near the viewport (the widgets wait
// the same way, with loading="lazy"), so the first screen needs no model. Everything reaches the
// DOM through textContent, attributes and SVG nodes (the strict CSP: no markup, no inline styles).
import { getModel, readTheme, sceneToSvg, quoteToken } from '../../component/headscope-view.js';
import { onceNear } from '../../component/runtime/near-viewport.js';
import { pruningScene, pruningSummary, pruningLabel } from '../../component/charts/pruning-curve.js';
import { ROLES_TABLE, ROLE_THRESHOLDS } from '../../lib/analysis.js';
import { defaultModelName } from '../../lib/files.js';
import {
  REFERENCE_MODELS,
  entryFromCard,
  shapeOf,
  headCountComparison,
  kvTradeoff,
  modelBytes,
  formatBytes,
  formatCount,
  cardPruningReport,
  judgeHeadsGuess,
} from './facts.js';
import { linkScores } from './chef-heads.js';
import { formedRoles, rolesSentence } from './training.js';
import { createTrainerInWorker } from '../../lib/worker/client.js';
import { gridScene } from '../../component/views/grid.js';
import { probeResult } from '../train/train-run.js';
import { scaleScene } from './scale-scene.js';
import { barsScene } from '../../component/charts/bars.js';
import { keepOffline } from '../common/offline.js';

// the verb-to-subject role's threshold (roles.json), in × an even spread
const LINK_THRESHOLD = ROLES_TABLE.find((r) => r.name === 'verb_to_subject')?.threshold ?? 3;
const TEXT = 'The chef, who trained in Paris, cooked the meal quickly.';
// the figures are drawn at their column's width (text at its real size on a phone), at most this
const CHART_WIDTH = 480;
const $ = (id) => document.getElementById(id);
const nats = (x) => x.toFixed(3);
const pct = (x) => `${(100 * x).toFixed(x < 0.1 ? 1 : 0)}%`;

// readable offline once loaded (common/offline.js; web/demo/article/README.md)
keepOffline();

const params = new URLSearchParams(location.search);
const modelParam = params.get('model');
// ?model= points every widget without a model of its own at that model; they wait for the viewport
// (loading="lazy"), so none has started loading the default model yet
if (modelParam)
  for (const w of document.querySelectorAll('headscope-view:not([model]), headscope-lab:not([model])'))
    w.setAttribute('model', modelParam);

/** Sets every [data-fact=name] to `text`. */
function fact(name, text) {
  for (const n of document.querySelectorAll(`[data-fact="${name}"]`)) if (n.textContent !== text) n.textContent = text;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A shipped model's folder, or the folder URL given. */
function folderOf(name) {
  return /^[\w.-]+$/.test(name) ? `models/${encodeURIComponent(name)}/` : name.endsWith('/') ? name : `${name}/`;
}

async function fetchJson(url) {
  try {
    const res = await fetch(url);
    return res.ok ? await res.json() : null;
  } catch {
    return null;
  }
}

/** Shows `scene` in `host` as an SVG image named `label`. */
function showScene(host, scene, label) {
  const svg = sceneToSvg(scene, { doc: document });
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  svg.removeAttribute('width');
  svg.removeAttribute('height');
  host.replaceChildren(svg);
}

const redraws = [];
window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => redraws.forEach((f) => f()));
/** The width a figure is drawn at: its column's, up to CHART_WIDTH. */
const chartWidth = () => Math.max(280, Math.min(CHART_WIDTH, document.querySelector('article').clientWidth));
{
  // a new column width (a phone turned, a window resized) draws the figures again at it
  let width = chartWidth();
  new ResizeObserver(() => {
    if (chartWidth() === width) return;
    width = chartWidth();
    redraws.forEach((f) => f());
  }).observe(document.querySelector('article'));
}
const theme = () => readTheme(document.documentElement);

// ---- the model list, the cards and the reader's model -------------------------------------------
const index = await fetchJson('models/index.json');
const listed = index?.models ?? [];
const cards = new Map(); // name -> Promise of its entry (entryFromCard) or null
/** A model's entry from its card (fetched once; a few tens of kB, no weights). */
function entryOf(name) {
  if (!cards.has(name))
    cards.set(
      name,
      fetchJson(`${folderOf(name)}card.json`).then((c) => entryFromCard(name, c)),
    );
  return cards.get(name);
}
/** The entries of a family of the site's models (index.json's `family`). */
const familyEntries = (family) => Promise.all(listed.filter((m) => m.family === family).map((m) => entryOf(m.name)));

const ownName = modelParam || defaultModelName;
const ownEntry = await entryOf(ownName);
const ownConfig = ownEntry ?? (await fetchJson(`${folderOf(ownName)}config.json`));
const own = shapeOf(ownName, ownConfig);
const ownWidth = ownConfig?.n_embd ?? ownConfig?.hidden_size;
const displayName = /^[\w.-]+$/.test(ownName) ? ownName : 'the model you opened';

fact('own-name', displayName);
if (own) {
  fact('own-shape', `${own.nLayer} layers × ${own.nHead} heads = ${formatCount(own.heads)} heads`);
  fact('own-heads-per-layer', String(own.nHead));
  if (Number.isInteger(ownWidth))
    fact('own-head-dim', `${ownWidth / own.nHead} numbers long, 1/${own.nHead} of the model's width of ${ownWidth}`);
}

// ---- what the page downloads --------------------------------------------------------------------
{
  const names = [...document.querySelectorAll('headscope-view, headscope-lab')].map(
    (w) => w.getAttribute('model') || ownName,
  );
  const entries = await Promise.all([...new Set(names)].map(entryOf));
  const { bytes, missing } = modelBytes(entries, names);
  const distinct = [...new Set(names)].filter((n) => !missing.includes(n));
  // the engine: one .wasm (the SIMD128 and relaxed-SIMD builds differ by a few bytes), sized by its server
  let engine = NaN;
  try {
    const res = await fetch('headscope_wasm.wasm', { method: 'HEAD' });
    engine = Number(res.headers.get('content-length'));
  } catch {
    // unknown: said without a size
  }
  fact(
    'download',
    `${formatBytes(bytes)} of models (${distinct.join(', ')})${missing.length ? ' and the model you opened' : ''}, ` +
      `plus the engine${engine > 0 ? ` (${formatBytes(engine)})` : ''}, once`,
  );
  // what has come so far, as the browser counts it
  const live = $('download-live');
  let total = 0;
  if (typeof PerformanceObserver === 'function') {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) total += e.transferSize || e.encodedBodySize || 0;
      live.textContent = ` (so far: ${formatBytes(total)})`;
    }).observe({ type: 'resource', buffered: true });
  }
}

// ---- 2: the head-count family, predict then reveal ----------------------------------------------
onceNear($('s2')).then(async () => {
  const cmp = headCountComparison(await familyEntries('heads'));
  if (cmp) {
    fact('fewer-heads', String(cmp.fewer.n_head));
    fact('more-heads', String(cmp.more.n_head));
    fact('fewer-name', cmp.fewer.name);
    fact('more-name', cmp.more.name);
    fact(
      'family-losses',
      `${cmp.family.map((m) => `${m.n_head} per layer ${nats(m.val_loss)}`).join(', ')} nats per token. ` +
        `The lowest is ${cmp.best.name}'s${cmp.best === cmp.more ? ', the one with the most heads' : ', not the one with the most heads'}`,
    );
    const box = $('predict-heads');
    const reveal = $('predict-heads-reveal');
    for (const b of box.querySelectorAll('button[data-guess]')) {
      b.setAttribute('aria-pressed', 'false');
      b.addEventListener('click', () => {
        for (const o of box.querySelectorAll('button[data-guess]')) o.setAttribute('aria-pressed', String(o === b));
        const v = judgeHeadsGuess(cmp, b.dataset.guess);
        const lower = v.lower === 'fewer' ? cmp.fewer : cmp.more;
        const higher = lower === cmp.fewer ? cmp.more : cmp.fewer;
        reveal.textContent =
          `${v.right ? 'Right' : 'Not quite'}: on held-out text ${lower.name} scores a loss of ${nats(lower.val_loss)} nats per token ` +
          `and ${higher.name} ${nats(higher.val_loss)}, a gap of ${nats(Math.abs(cmp.diff))} (${pct(v.relative)}). ` +
          (v.relative < 0.01
            ? 'Small: at this size, more heads buy little on average, but they buy patterns a single head cannot hold apart, as the grids show.'
            : 'The heads let the model keep several patterns apart, as the grids show.');
        box.dataset.answered = v.right ? 'right' : 'wrong';
      });
    }
    box.dataset.ready = 'true';
  }
});

// ---- 3: heads start as noise and specialize: a small training run, on request --------------------
{
  const button = $('train-start');
  const status = $('train-status');
  const figure = $('train');
  let trainer = null;
  let abort = null;
  let probe = null;
  let drawQueued = false;
  const draw = () => {
    if (!probe) return;
    const { scene } = gridScene(probeResult(probe), { layer: -1, head: -1 }, theme());
    showScene($('train-chart'), scene, `Every head's attention on the probe at step ${trainer?.stepsDone ?? 0}`);
  };
  const queueDraw = () => {
    if (drawQueued) return;
    drawQueued = true;
    requestAnimationFrame(() => {
      drawQueued = false;
      draw();
    });
  };
  redraws.push(draw);
  button.addEventListener('click', async () => {
    if (abort) {
      abort.abort();
      return;
    }
    abort = new AbortController();
    button.textContent = 'Pause';
    figure.dataset.state = 'running';
    try {
      if (!trainer) {
        status.textContent = 'Starting…';
        trainer = await createTrainerInWorker({ preset: 'induction' });
        probe = await trainer.probe();
        draw();
      }
      const { nLayer, nHead } = trainer.spec.config;
      const total = trainer.spec.steps;
      const done = await trainer.train({
        steps: Math.max(1, total - trainer.stepsDone),
        probeEvery: 25,
        signal: abort.signal,
        onProgress: (p) => {
          if (p.probe) {
            probe = p.probe;
            queueDraw();
          }
          const loss = p.losses[p.losses.length - 1];
          status.textContent = `${nLayer} layers × ${nHead} heads, step ${p.stepsDone} of ${total}, loss ${loss.toFixed(2)}: ${rolesSentence(formedRoles(probe, ROLE_THRESHOLDS))}.`;
          figure.dataset.steps = String(p.stepsDone);
        },
      });
      figure.dataset.state = done.stopped ? 'paused' : 'done';
      button.textContent = done.stopped ? 'Continue' : 'Trained';
      button.disabled = !done.stopped;
    } catch (e) {
      figure.dataset.state = 'failed';
      status.textContent = `Training stopped: ${e.message}`;
      button.textContent = 'Train a small model';
    } finally {
      abort = null;
    }
  });
}

// ---- 5: the worked example's heads, found on the reader's model ---------------------------------
{
  const figures = [...document.querySelectorAll('#chef-links figure[data-link]')];
  onceNear($('chef-links')).then(async () => {
    for (const f of figures) f.querySelector('.status').textContent = 'Loading the model and scoring every head…';
    let result;
    try {
      const model = await getModel(modelParam || '');
      result = await model.run(TEXT);
    } catch (e) {
      for (const f of figures) f.querySelector('.status').textContent = `The model could not run: ${e.message}`;
      return;
    }
    for (const f of figures) {
      const [from, to] = f.dataset.link.split(' ');
      const s = linkScores(result, from, to);
      if (!s) {
        f.querySelector('.status').textContent = `This model's tokens do not hold “${from}” after “${to}”.`;
        continue;
      }
      const best = s.heads[0];
      const view = document.createElement('headscope-view');
      const attrs = {
        view: 'lines',
        layer: String(best.layer),
        head: String(best.head),
        token: String(s.query),
        text: TEXT,
        ...(modelParam ? { model: modelParam } : {}),
      };
      for (const [k, v] of Object.entries(attrs)) view.setAttribute(k, v);
      const badge = ` The project's role list counts a link from a verb to its subject at ${LINK_THRESHOLD}× or more.`;
      const caption = el(
        'figcaption',
        'found',
        `Layer ${best.layer}, head ${best.head}: from ${quoteToken(result.tokens[s.query].text)}, ${pct(best.weight)} of its attention goes to “${to}”, ${best.ratio.toFixed(1)}× an even spread (the strongest of ${s.heads.length} heads).${badge}`,
      );
      const snippet = el('details', 'snippet');
      snippet.append(
        el('summary', '', 'This widget’s HTML'),
        el(
          'pre',
          '',
          `<headscope-view ${Object.entries({ ...attrs, loading: 'lazy' })
            .map(([k, v]) => `${k}="${v}"`)
            .join(' ')}></headscope-view>`,
        ),
      );
      f.replaceChildren(view, caption, snippet);
      f.dataset.layer = attrs.layer;
      f.dataset.head = attrs.head;
      f.dataset.ratio = best.ratio.toFixed(3);
    }
    $('chef-links').dataset.ready = 'true';
  });
}

// ---- 5: a sense of scale -----------------------------------------------------------------------
if (own) {
  const models = [{ name: displayName, nLayer: own.nLayer, nHead: own.nHead, own: true }, ...REFERENCE_MODELS];
  const draw = () => {
    const { scene } = scaleScene(models, theme(), { width: chartWidth() });
    const [small, big] = REFERENCE_MODELS;
    const heads = (m) => m.nLayer * m.nHead;
    showScene($('scale-chart'), scene, models.map((m) => `${m.name}: ${formatCount(heads(m))} heads`).join('; '));
    $('scale-caption').textContent =
      `${displayName}: ${formatCount(own.heads)} heads. ${small.name}: ${formatCount(heads(small))}. ` +
      `${big.name}: ${formatCount(heads(big))} (${big.nHead} in each of its ${big.nLayer} layers), ${formatCount(Math.round(heads(big) / own.heads))} times as many as ${displayName}.`;
    $('scale').dataset.ready = 'true';
  };
  draw();
  redraws.push(draw);
}

// ---- 6: the pruning curve, from the reader's model's card ----------------------------------------
onceNear($('pruning')).then(async () => {
  const card = await fetchJson(`${folderOf(ownName)}card.json`);
  const report = cardPruningReport(card);
  if (!report) {
    $('pruning-caption').textContent = `${displayName} has no head measurement in a model card.`;
    return;
  }
  const draw = () =>
    showScene(
      $('pruning-chart'),
      pruningScene(report, theme(), { width: chartWidth(), height: 280 }),
      pruningLabel(report, displayName),
    );
  draw();
  redraws.push(draw);
  const s = pruningSummary(report);
  const random = Number.isFinite(s.halfRandomMean)
    ? ` against ${nats(s.halfRandomMean)} on average over ${report.randomOrders} random orders`
    : '';
  $('pruning-caption').textContent =
    `${displayName}, measured on ${report.tokens} held-out tokens: ${s.offBefore[0.05]} of its ${s.n} heads can be switched off before the loss rises 5% (from ${nats(s.loss)} nats). ` +
    `With half of them off (${s.half}), the least-harm order's loss is ${nats(s.halfLoss)}${random}: which heads go matters more than how many.`;
  $('pruning').dataset.ready = 'true';
});

// ---- 6: the key/value family: cache against loss -------------------------------------------------
onceNear($('kv')).then(async () => {
  const kv = kvTradeoff(await familyEntries('kv'));
  if (kv.length >= 2) {
    const data = {
      rows: kv.map((m) => ({ label: `${m.nKvHead} key/value head${m.nKvHead === 1 ? '' : 's'}, ${m.nHead} query` })),
      columns: [
        { title: 'cache per token', values: kv.map((m) => m.cacheBytesPerToken), format: formatBytes },
        { title: 'loss (nats)', values: kv.map((m) => m.loss), format: nats },
      ],
    };
    const draw = () =>
      showScene(
        $('kv-chart'),
        barsScene(data, theme(), { width: chartWidth() }),
        kv.map((m) => `${m.name}: ${formatBytes(m.cacheBytesPerToken)} per token, loss ${nats(m.loss)}`).join('; '),
      );
    draw();
    redraws.push(draw);
    const a = kv[0];
    const b = kv[kv.length - 1];
    $('kv-caption').textContent =
      `Sharing one set of keys and values among all ${b.nHead} query heads cuts the cache ${formatCount(Math.round(a.cacheBytesPerToken / b.cacheBytesPerToken))}× ` +
      `(${formatBytes(a.cacheBytesPerToken)} to ${formatBytes(b.cacheBytesPerToken)} per token) and changes the loss by ${b.loss >= a.loss ? '+' : '−'}${nats(Math.abs(b.loss - a.loss))} nats (${pct(Math.abs(b.loss - a.loss) / a.loss)}).`;
    $('kv').dataset.ready = 'true';
  }
});

document.body.dataset.facts = own ? 'ready' : 'none';
