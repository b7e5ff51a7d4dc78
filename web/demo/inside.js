// The demo page's "Inside this head" panel and the value sizes behind the detail view's
// "weight × value size". Both come from the model's inspectHead() through one InsideSource
// (web/component/inside-source.js): the panel's head in full while the panel is on screen (or an
// article linked to it with ?inside=), and the value sizes of the heads the detail view colours.
// demo.js calls update(result, theme) in its render path, before the detail view is drawn: it puts
// state.valueNorms in place for the views (web/component/views/weighting.js).
import {
  InsideView, InsideSource, Tooltip, valueSizesValid, VALUE_WEIGHTING_SENTENCE, focusToken,
} from '../component/headscope-view.js';

const $ = (id) => document.getElementById(id);
const setText = (node, text) => { if (node.textContent !== text) node.textContent = text; }; // text, never markup

/**
 * ctx: { state, announce(text), render(), reducedMotion() }. state gains step (1-6),
 * insideOpen (the reader used the panel or came by a link to it: the URL then says inside=),
 * by ('weight' | 'value') and valueNorms.
 */
export function installInside({ state, announce, render, reducedMotion }) {
  const section = $('inside');
  const tooltip = new Tooltip(section);
  let source = null;
  let visible = false;
  const view = new InsideView($('inside-view'), {
    tooltip,
    onAnnounce: announce,
    onStep: (step) => {
      state.step = step;
      state.insideOpen = true;
      render();
    },
    onShowCombine: () => {
      const combine = $('combine-title').closest('section');
      combine.scrollIntoView({ behavior: reducedMotion() ? 'auto' : 'smooth', block: 'start' });
    },
  });
  view.setStep(state.step, { silent: true });
  // the panel's head is read while the panel is on screen (an inspect run is a full forward pass)
  new IntersectionObserver(([entry]) => {
    if (visible === entry.isIntersecting) return;
    visible = entry.isIntersecting;
    if (visible) render();
  }).observe(section);

  // colour the attention views by the weights, or by weight × value size
  const by = $('by-select');
  by.value = state.by;
  by.addEventListener('change', () => { state.by = by.value; render(); });

  return {
    /** A new model: insides are read through its runner's idle moments. */
    useModel(model, runner) {
      source = new InsideSource(model, { onUpdate: render, idle: () => runner.idle() });
    },

    /** Before the views are drawn: wants the insides they show, and draws the panel. */
    update(result, theme) {
      const { layer, head } = state;
      // value sizes are measured with every head on: valid for this layer unless an earlier one has heads off
      const valid = valueSizesValid(state.ablate, layer);
      const weighted = state.by === 'value' ? (state.view === 'lines' && state.heads.length ? state.heads : [head]) : [];
      const norms = valid ? weighted.map((h) => [layer, h]) : [];
      source?.want(result.text, { panel: visible || state.insideOpen ? [layer, head] : null, norms });
      state.valueNorms = new Map();
      for (const [l, h] of norms) {
        const n = source.valueNorm(result.text, l, h);
        if (n) state.valueNorms.set(`${l}:${h}`, n);
      }
      const byNote = $('by-explain');
      byNote.hidden = state.by !== 'value';
      // the grid stays on the weights: value sizes cost an inspect run per head (all 32 heads of the
      // default model: about 130 ms at 13 tokens, 700 ms at 128, measured in Chromium on this page)
      const grid = ' The grid of every head keeps the weights: value sizes cost a run of the model per head.';
      setText(byNote, !valid ? 'Weight × value size needs every head before this layer switched on: the view shows the weights.'
        : source?.pending && state.valueNorms.size < norms.length ? `${VALUE_WEIGHTING_SENTENCE} Reading the value sizes…` : VALUE_WEIGHTING_SENTENCE + grid);
      // the panel: the selected head's insides, an earlier text's while the next one is read
      const latest = source?.inside;
      const inside = latest && latest.layer === layer && latest.head === head ? latest : null;
      const fresh = !!inside && inside.text === result.text;
      const error = source?.error;
      const status = error ? `This head could not be read: ${error}` : fresh ? '' : `Reading layer ${layer}, head ${head}…`;
      view.update(inside, state, theme, { status });
      const note = $('inside-note');
      const earlier = state.ablate.some(([l]) => l < layer);
      const off = state.ablate.some(([l, h]) => l === layer && h === head);
      note.hidden = !earlier && !off;
      setText(note, earlier ? 'Heads are switched off in earlier layers: this panel shows the model with every head on, so its numbers differ from the views above.'
        : off ? 'This head is switched off: the model drops its write, and the panel shows what it would write.' : '');
      // for the tests: which head, query and text the panel shows, once it is the text on screen
      section.dataset.ready = fresh ? `${layer}:${head}:${focusToken(inside, state)}:${inside.T}` : '';
      section.dataset.valueNorms = String(state.valueNorms.size);
    },

    /** The panel's current step as a scene, for PNG and SVG export. */
    exportScene: () => view.exportScene(),
    /** Scrolls the panel into view (a link to it: ?inside=). */
    reveal: () => section.scrollIntoView({ block: 'start' }),
    get step() { return view.step; },
  };
}
