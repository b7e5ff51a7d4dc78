// The demo page's "Heads working together": which heads compose with which, from the weights alone
// (model.circuits(): Q, K and V composition scores and each head's copying score, defined in
// cpp/include/headscope/explain.hpp), drawn as the layer x head grid with the edges at or above a
// threshold (the scene: web/component/charts/circuits.js, tested in Node); and, on the text on
// screen, the heads upstream of the page's selected head that feed its query and its key: its score
// of the focused token on the key it weighs most, split by model.explainScore(), the table's rows
// (query side) and columns (key side) summed per upstream head. circuits() runs once per model, when
// the panel first comes on screen. The URL keeps the kinds shown (circuit=q,k,v) and the threshold.
import { SceneView } from '../../component/views/scene-view.js';
import { HostWidth } from '../../component/views/host-width.js';
import { focusToken } from '../../component/headscope-view.js';
import { strongestKey } from '../../component/model/describe.js';
import { tokenWords } from '../../component/runtime/theme.js';
import {
  KINDS,
  circuitsScene,
  circuitsLabel,
  defaultThreshold,
  maxComposition,
  upstreamHeadSums,
} from '../../component/charts/circuits.js';
import { scoreText } from '../../component/charts/patching.js';
import { sameAblate } from '../../lib/result.js';
import { watchOnScreen } from './on-screen.js';
import { $, setText, afterPaint } from './page-dom.js';

// the heads each side lists
const TOP = 3;
// at most this many edges drawn (the strongest)
const MAX_EDGES = 120;

/**
 * ctx: { getModel(), idle(): the page's runner has nothing pending, selectHead(l, h), announce(text) }.
 * Returns { setModel(model), update(result, state, theme): the page's render, query(): its URL keys,
 * exportScene(), idle(), circuits, upstream }.
 */
export function installCircuits(ctx) {
  const section = $('circuits');
  const els = {
    status: $('circuits-status'),
    note: $('circuits-note'),
    threshold: $('circuits-threshold'),
    thresholdText: $('circuits-threshold-value'),
    ticks: $('circuits-ticks'),
    baseline: $('circuits-baseline'),
    kinds: Object.fromEntries(KINDS.map((k) => [k.kind, $(`circuits-${k.kind}`)])),
    chart: $('circuits-view'),
    on: $('circuits-on'),
    onText: $('circuits-on-text'),
    query: $('circuits-query'),
    key: $('circuits-key'),
    others: $('circuits-others'),
  };
  const view = new SceneView(els.chart);
  const width = new HostWidth(els.chart, () => draw());
  const panel = {
    model: null,
    circuits: null, // the model's circuits() (once per model)
    computing: null, // its promise
    error: '',
    threshold: null, // null: the model's default (twice the baseline)
    touched: false, // the reader moved the slider or a kind: the URL keeps them
    result: null,
    state: null,
    theme: null,
    wish: null, // { model, text, ablate, layer, head, q, k }
    answer: null, // { ...wish, split, sums } or { ...wish, error }
    busy: false,
    drawn: null, // the last circuitsScene()
  };

  // ---- the URL: circuit=q,k and threshold=0.2 ----------------------------------------------
  const q0 = new URLSearchParams(location.search);
  let kinds = ['q', 'k', 'v'];
  if (q0.has('circuit')) {
    kinds = KINDS.map((k) => k.kind).filter((k) => q0.get('circuit').split(',').includes(k));
    panel.touched = true;
  }
  if (q0.has('threshold') && Number.isFinite(Number(q0.get('threshold')))) {
    panel.threshold = Math.max(0, Number(q0.get('threshold')));
    panel.touched = true;
  }
  for (const [k, box] of Object.entries(els.kinds)) box.checked = kinds.includes(k);

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
    if (!panel.touched) return { circuit: undefined, threshold: undefined };
    return {
      circuit: kinds.length === 3 ? undefined : kinds.join(','),
      threshold: panel.threshold === null ? undefined : String(panel.threshold),
    };
  }

  // ---- the controls ---------------------------------------------------------------------------
  for (const [k, box] of Object.entries(els.kinds))
    box.addEventListener('change', () => {
      kinds = KINDS.map((x) => x.kind).filter((x) => (x === k ? box.checked : kinds.includes(x)));
      panel.touched = true;
      writeUrl();
      draw();
    });
  els.threshold.addEventListener('input', () => {
    panel.threshold = Number(els.threshold.value);
    panel.touched = true;
    writeUrl();
    draw();
  });

  // ---- circuits(), once per model, when the panel is first on screen ---------------------------
  function compute() {
    const model = panel.model;
    if (!model || panel.circuits || panel.computing || !onScreen.visible) return panel.computing;
    const { nLayer, nHead, modelType } = model.info.config;
    const heads = nLayer * nHead;
    const pairs = (heads * heads * (nLayer - 1)) / (2 * nLayer);
    setText(
      els.status,
      `Computing the composition scores from the weights: ${heads} heads, ${Math.round(pairs).toLocaleString('en')} pairs of heads in different layers, three kinds each, and a random baseline (big models take a few seconds)…`,
    );
    section.dataset.circuits = 'computing';
    els.note.hidden = modelType === 'gpt2';
    const t0 = performance.now();
    const run = model
      .circuits()
      .then((c) => {
        if (panel.model !== model) return;
        panel.circuits = c;
        const s = ((performance.now() - t0) / 1000).toFixed(1);
        setText(
          els.status,
          `Computed from the weights in ${s} s. Random matrices of the same shapes score ${scoreText(c.baseline.q)} (Q), ${scoreText(c.baseline.k)} (K) and ${scoreText(c.baseline.v)} (V), the mean of ${c.seeds} seeds.`,
        );
        section.dataset.circuits = 'done';
        setSlider(c);
        draw();
        want();
      })
      .catch((e) => {
        if (panel.model !== model) return;
        panel.error = e.message;
        setText(els.status, `The circuits could not be computed: ${e.message}`);
        section.dataset.circuits = 'error';
      })
      .finally(() => {
        if (panel.computing === run) panel.computing = null;
      });
    panel.computing = run;
    return run;
  }

  function setSlider(c) {
    const max = Math.ceil(100 * maxComposition(c)) / 100;
    els.threshold.max = String(Math.max(0.01, max));
    const base = Math.max(c.baseline.q, c.baseline.k, c.baseline.v);
    // the baseline as a tick mark on the slider (a datalist), and in words beside it
    els.ticks.replaceChildren(new Option('random', base.toFixed(2)));
    setText(els.baseline, `random matrices: ${scoreText(base)}`);
    els.threshold.value = String(threshold());
  }
  const threshold = () => panel.threshold ?? (panel.circuits ? defaultThreshold(panel.circuits) : 0.16);

  // ---- drawing --------------------------------------------------------------------------------
  let queued = false;
  function draw() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      drawNow();
    });
  }
  function drawNow() {
    const c = panel.circuits;
    const theme = panel.theme;
    if (!c || !theme || !onScreen.visible) return;
    const st = panel.state;
    const selected = st && st.layer < c.nLayer && st.head < c.nHead ? [st.layer, st.head] : null;
    const thr = threshold();
    setText(els.thresholdText, scoreText(thr));
    if (els.threshold.value !== String(thr) && document.activeElement !== els.threshold)
      els.threshold.value = String(thr);
    const drawn = circuitsScene(c, theme, {
      width: Math.max(280, width.width),
      kinds,
      threshold: thr,
      selected,
      maxEdges: MAX_EDGES,
    });
    panel.drawn = drawn;
    view.show(
      drawn.scene,
      circuitsLabel(c, { kinds, threshold: thr, edges: drawn.edges, above: drawn.above }),
      'group',
    );
    section.dataset.edges = String(drawn.edges.length);
    drawUpstream();
  }

  // ---- the selected head's upstream heads on the text ------------------------------------------
  const same = (a, b) =>
    !!a &&
    !!b &&
    a.model === b.model &&
    a.text === b.text &&
    sameAblate(a.ablate, b.ablate) &&
    a.layer === b.layer &&
    a.head === b.head &&
    a.q === b.q &&
    a.k === b.k;

  function want() {
    const r = panel.result;
    const st = panel.state;
    const model = panel.model;
    if (!r || !st || !model || !onScreen.visible || !panel.circuits) return;
    const t = focusToken(r, st);
    const w = {
      model,
      text: r.text,
      ablate: r.ablate ?? st.ablate ?? [],
      layer: st.layer,
      head: st.head,
      q: t,
      k: strongestKey(r, st.layer, st.head, t).k,
    };
    if (!same(panel.wish, w)) panel.wish = w;
    if (!same(panel.answer, w) && !panel.busy) pump();
  }
  async function pump() {
    panel.busy = true;
    try {
      for (;;) {
        await ctx.idle?.();
        await afterPaint();
        const w = panel.wish;
        if (!w || same(panel.answer, w)) return;
        try {
          const split = await w.model.explainScore(w.text, w.layer, w.head, w.q, w.k, { ablate: w.ablate });
          panel.answer = { ...w, split, sums: upstreamHeadSums(split) };
        } catch (e) {
          panel.answer = { ...w, error: e.message };
        }
        drawUpstream();
      }
    } finally {
      panel.busy = false;
    }
  }

  function drawUpstream() {
    const r = panel.result;
    const st = panel.state;
    if (!r || !st) return;
    const w = panel.wish;
    const a = panel.answer;
    const current = a && w && same(a, w) && a.layer === st.layer && a.head === st.head ? a : null;
    const tok = (i) => JSON.stringify(tokenWords(r.tokens[i]?.text ?? ''));
    if (!w) return;
    const head = `layer ${w.layer}, head ${w.head}`;
    const Head = `L${head.slice(1)}`;
    if (!current) {
      setText(els.onText, `${Head} at ${tok(w.q)} (token ${w.q}): reading its score on ${tok(w.k)}…`);
      section.dataset.upstream = '';
      return;
    }
    if (current.error) {
      setText(els.onText, `${Head}: its score could not be split: ${current.error}`);
      section.dataset.upstream = 'error';
      return;
    }
    const { split, sums } = current;
    setText(
      els.onText,
      w.layer === 0
        ? `${Head} reads only the embeddings: no head comes before it. Its score of ${tok(w.q)} (token ${w.q}) on ${tok(w.k)} (token ${w.k}), the key it weighs most, is ${scoreText(split.score)}.`
        : `On this text, ${head} at ${tok(w.q)} (token ${w.q}) weighs ${tok(w.k)} (token ${w.k}) most: score ${scoreText(split.score)}. The score splits into what each earlier part wrote into the query and into the key (the raw split, not contrasted with the other keys); summed per upstream head:`,
    );
    fill(els.query, sums.query, 'query');
    fill(els.key, sums.key, 'key');
    const other = (list, side) =>
      list[0]
        ? `${list[0].name} ${list[0].value >= 0 ? '+' : '−'}${Math.abs(list[0].value).toFixed(2)} on the ${side} side`
        : '';
    const parts = [other(sums.queryOthers, 'query'), other(sums.keyOthers, 'key')].filter(Boolean);
    els.others.hidden = w.layer === 0 || parts.length === 0;
    setText(els.others, `Largest parts that are not heads: ${parts.join('; ')}.`);
    els.on.hidden = w.layer === 0;
    section.dataset.upstream = `${w.layer}:${w.head}:${w.q}:${w.k}`;
  }
  function fill(list, heads, side) {
    const top = heads.slice(0, TOP);
    list.replaceChildren(
      ...top.map((h) => {
        const li = document.createElement('li');
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'btn btn-small circuits-head';
        b.dataset.layer = String(h.layer);
        b.dataset.head = String(h.head);
        b.dataset.value = String(h.value);
        b.textContent = `L${h.layer}H${h.head} ${h.value >= 0 ? '+' : '−'}${Math.abs(h.value).toFixed(2)}`;
        b.title = `Select layer ${h.layer} head ${h.head}: it adds ${scoreText(h.value)} to the score through the ${side}`;
        li.append(b);
        return li;
      }),
    );
  }
  for (const list of [els.query, els.key])
    list.addEventListener('click', (e) => {
      const b = e.target.closest?.('.circuits-head');
      if (b) ctx.selectHead(Number(b.dataset.layer), Number(b.dataset.head));
    });

  // ---- keyboard on the grid: arrows move, Enter or Space selects --------------------------------
  const host = els.chart;
  const nodeEl = (l, h) => host.querySelector(`.hs-circuit-node[data-layer="${l}"][data-head="${h}"]`);
  host.addEventListener('click', (e) => {
    const n = e.target.closest?.('.hs-circuit-node');
    if (n) select(Number(n.dataset.layer), Number(n.dataset.head));
  });
  host.addEventListener('keydown', (e) => {
    const n = e.target.closest?.('.hs-circuit-node');
    const c = panel.circuits;
    if (!n || !c) return;
    let l = Number(n.dataset.layer);
    let h = Number(n.dataset.head);
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      select(l, h);
      return;
    }
    const m = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[e.key];
    if (!m) return;
    e.preventDefault();
    l = Math.max(0, Math.min(c.nLayer - 1, l + m[0]));
    h = Math.max(0, Math.min(c.nHead - 1, h + m[1]));
    for (const x of host.querySelectorAll('.hs-circuit-node')) x.tabIndex = -1;
    const next = nodeEl(l, h);
    if (next) {
      next.tabIndex = 0;
      next.focus();
    }
  });
  function select(l, h) {
    ctx.selectHead(l, h);
    // the page renders in the next frame; the selected head keeps the focus
    requestAnimationFrame(() => requestAnimationFrame(() => nodeEl(l, h)?.focus()));
  }

  // ---- the page: its renders, its model ----------------------------------------------------------
  const onScreen = watchOnScreen(section, (shown) => {
    if (!shown) return;
    compute();
    draw();
    want();
  });

  function update(result, state, theme) {
    panel.result = result;
    panel.state = state;
    panel.theme = theme;
    if (!onScreen.visible) return;
    compute();
    draw();
    want();
  }

  function setModel(model) {
    panel.model = model;
    panel.circuits = null;
    panel.computing = null;
    panel.error = '';
    if (!q0.has('threshold') || panel.touched === false) panel.threshold = null;
    panel.answer = null;
    panel.wish = null;
    panel.drawn = null;
    section.dataset.circuits = '';
    setText(els.status, 'The composition scores are computed when this panel comes on screen.');
  }

  return {
    setModel,
    update,
    query,
    draw,
    exportScene: () => (panel.drawn ? panel.drawn.scene : null),
    /** Resolves once circuits() has answered and the upstream heads of the wish are read. */
    idle: async () => {
      await panel.computing;
      while (panel.busy || (panel.wish && !same(panel.answer, panel.wish))) await afterPaint();
    },
    get circuits() {
      return panel.circuits;
    },
    get upstream() {
      return panel.answer?.sums ? { ...panel.answer, model: undefined } : null;
    },
    get drawn() {
      return panel.drawn;
    },
    get threshold() {
      return threshold();
    },
    get kinds() {
      return [...kinds];
    },
  };
}
