// The demo page's "Why does it look there?": the selected head's score of one query token on one key
// (a heatmap cell the reader clicked, else the focused token and the key the head weighs most) split
// into what earlier parts of the model wrote, on the query side and on the key side
// (model.explainScore(); the numbers are defined in cpp/include/headscope/explain.hpp). A small
// matrix of the strongest parts (web/component/charts/explain.js), a sentence, and each upstream head
// as a button that selects it. Asked for after the page's runs are drawn, one request at a time, the
// latest wish next (as component/runtime/attribution.js does); an answer for another text, head or cell is dropped.
import { SceneView } from '../../component/views/scene-view.js';
import { HostWidth } from '../../component/views/host-width.js';
import { focusToken } from '../../component/headscope-view.js';
import { strongestKey } from '../../component/model/describe.js';
import {
  explainSummary,
  explainScene,
  explainSentence,
  upstreamHeads,
  partWords,
} from '../../component/charts/explain.js';
import { sameAblate } from '../../lib/result.js';
import { watchOnScreen } from './on-screen.js';
import { $, setText, afterPaint } from './page-dom.js';

/**
 * ctx: { state (the page's: layer, head, token, why, whyView), getModel(), idle(): the runner has
 * nothing pending, selectHead(l, h), theme(), announce(text) }.
 * Returns { update(result), pick(q, k), query(): its URL keys, exportScene(), draw() }.
 */
export function installWhy(ctx) {
  const { state } = ctx;
  const section = $('why');
  const view = new SceneView($('why-view'));
  const width = new HostWidth($('why-view'), () => draw());
  const buttons = { raw: $('why-raw'), contrast: $('why-contrast') };
  let result = null;
  let wish = null; // { model, text, ablate, layer, head, q, k }
  let answer = null; // { ...wish, split } or { ...wish, error }
  let busy = false;

  const q0 = new URLSearchParams(location.search);
  const m = /^(\d+):(\d+)$/.exec(q0.get('why') ?? '');
  if (m) state.why = { q: Number(m[1]), k: Number(m[2]) };
  state.whyView = q0.get('whyview') === 'contrast' ? 'contrast' : 'raw';

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

  // the cell shown: the reader's pick while it fits the text, else the focus and its strongest key
  function cell(r) {
    if (state.why && state.why.q < r.T && state.why.k <= state.why.q) return state.why;
    const t = focusToken(r, state);
    return { q: t, k: strongestKey(r, state.layer, state.head, t).k };
  }

  async function pump() {
    busy = true;
    try {
      for (;;) {
        await ctx.idle();
        await afterPaint();
        const w = wish;
        if (!w || same(answer, w)) return;
        try {
          const split = await w.model.explainScore(w.text, w.layer, w.head, w.q, w.k, {
            ablate: w.ablate,
            versus: 'mean',
          });
          answer = { ...w, split };
        } catch (e) {
          answer = { ...w, error: e.message };
        }
        draw();
      }
    } finally {
      busy = false;
    }
  }

  function update(r) {
    result = r;
    if (!onScreen.visible || !r) return;
    const model = ctx.getModel();
    if (!model) return;
    const { q, k } = cell(r);
    const w = { model, text: r.text, ablate: r.ablate ?? [], layer: state.layer, head: state.head, q, k };
    if (!same(wish, w)) wish = w;
    if (!same(answer, w) && !busy) pump();
    draw();
  }

  function draw() {
    if (!result || !onScreen.visible) return;
    const theme = ctx.theme();
    if (!theme) return;
    const { q, k } = cell(result);
    const tok = (i) => JSON.stringify(result.tokens[i]?.text.trim() || ' ');
    const current =
      answer && wish && same(answer, wish) && answer.layer === state.layer && answer.head === state.head
        ? answer
        : null;
    const status = $('why-status');
    section.dataset.ready = current?.split ? `${current.layer}:${current.head}:${current.q}:${current.k}` : '';
    if (!current) {
      setText(status, `Reading L${state.layer}H${state.head}'s score of ${tok(q)} on ${tok(k)}…`);
      return;
    }
    if (current.error) {
      setText(status, `This score could not be split: ${current.error}`);
      return;
    }
    const split = current.split;
    const summary = explainSummary(split, { which: state.whyView });
    const { scene } = explainScene(split, summary, theme, { width: Math.max(280, width.width) });
    const sentence = explainSentence(split, summary);
    view.show(
      scene,
      `The score of ${tok(q)} on ${tok(k)} in layer ${split.layer}, head ${split.head}, split. ${sentence}`,
    );
    setText(status, '');
    setText($('why-sentence'), sentence);
    for (const [which, b] of Object.entries(buttons))
      b.setAttribute('aria-pressed', which === state.whyView ? 'true' : 'false');
    // the upstream heads: buttons that select them
    const heads = upstreamHeads(split, summary).slice(0, 6);
    const list = $('why-heads');
    list.replaceChildren(
      ...heads.map((h) => {
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'btn btn-small why-head';
        b.dataset.layer = String(h.layer);
        b.dataset.head = String(h.head);
        b.textContent = `L${h.layer}H${h.head} (${h.side} side, ${h.value >= 0 ? '+' : '−'}${Math.abs(h.value).toFixed(2)})`;
        b.title = `Select ${partWords(`L${h.layer}H${h.head}`).replace('what ', '')}`;
        return b;
      }),
    );
    $('why-heads-label').hidden = heads.length === 0;
  }

  $('why-heads').addEventListener('click', (e) => {
    const b = e.target.closest?.('.why-head');
    if (b) ctx.selectHead(Number(b.dataset.layer), Number(b.dataset.head));
  });
  for (const [which, b] of Object.entries(buttons))
    b.addEventListener('click', () => {
      state.whyView = which;
      draw();
      ctx.render();
    });

  const onScreen = watchOnScreen(section, (shown) => {
    if (shown && result) update(result);
  });

  return {
    update,
    draw,
    /** A heatmap cell picked: the panel explains it (and the URL keeps it). */
    pick(q, k) {
      state.why = { q, k };
      if (result) update(result);
    },
    query: () => ({
      why: state.why ? `${state.why.q}:${state.why.k}` : undefined,
      whyview: state.whyView === 'contrast' ? 'contrast' : undefined,
    }),
    exportScene: () => (answer?.split ? view.scene : null),
    get split() {
      return answer?.split ?? null;
    },
    idle: async () => {
      while (busy || (wish && !same(answer, wish))) await afterPaint();
    },
  };
}
