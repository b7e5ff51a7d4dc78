// The demo page's "Inside this head" panel, and the "Colour by" choice of the attention views.
// The panel's head comes from the model's inspectHead() through an InsideSource
// (web/component/runtime/inside-source.js), in full while the panel is on screen (or an article linked to
// it with ?inside=). "Weight × value size" reads the value sizes from the result on screen
// (web/component/model/weighting.js): the page's runs ask for them in that mode.
// demo.js calls update(result, theme) in its render path.
import {
  InsideView,
  InsideSource,
  Tooltip,
  hasValueNorms,
  valueWeightingSentence,
  focusToken,
  headSharing,
} from '../../component/headscope-view.js';
import { watchOnScreen } from './on-screen.js';

const $ = (id) => document.getElementById(id);
const setText = (node, text) => {
  if (node.textContent !== text) node.textContent = text;
}; // text, never markup

/**
 * ctx: { state, announce(text), render(), reducedMotion(), wantValueSizes() }. state gains step
 * (1-6), insideOpen (the reader used the panel or came by a link to it: the URL then says inside=)
 * and by ('weight' | 'value'); wantValueSizes() is called when the reader picks 'value' and the
 * result on screen has no value sizes (the page then runs the text again, asking for them).
 */
export function installInside({ state, announce, render, reducedMotion, wantValueSizes, onExplain }) {
  const section = $('inside');
  const tooltip = new Tooltip(section);
  let source = null;
  const view = new InsideView($('inside-view'), {
    tooltip,
    onAnnounce: announce,
    onStep: (step) => {
      state.step = step;
      state.insideOpen = true;
      render();
    },
    onExplain,
    onShowCombine: () => {
      const combine = $('combine-title').closest('section');
      combine.scrollIntoView({ behavior: reducedMotion() ? 'auto' : 'smooth', block: 'start' });
    },
  });
  view.setStep(state.step, { silent: true });
  // the panel's head is read, and the panel drawn, while its figure is on screen (a heading at the
  // bottom of the window is not): an inspect run takes the worker from typing, and drawing a step
  // costs a keystroke milliseconds
  // (out of view, the next render withdraws the wish: a long text's pending inspect run never starts)
  const figure = watchOnScreen($('inside-view'), () => render());

  // colour the attention views by the weights, or by weight × value size
  const by = $('by-select');
  by.value = state.by;
  by.addEventListener('change', () => {
    state.by = by.value;
    render();
    if (state.by === 'value') wantValueSizes?.();
  });

  return {
    /** A new model: insides are read through its runner's idle moments. */
    useModel(model, runner) {
      source = new InsideSource(model, { onUpdate: render, idle: () => runner.idle() });
    },

    /** Before the views are drawn: wants the insides they show, and draws the panel. */
    update(result, theme) {
      const { layer, head } = state;
      source?.want(result.text, {
        panel: figure.visible || state.insideOpen ? [layer, head] : null,
        ablate: result.ablate ?? state.ablate,
      });
      const byNote = $('by-explain');
      byNote.hidden = state.by !== 'value';
      // a result of a run without them (the mode was just switched) is shown by its weights meanwhile
      if (state.by === 'value')
        setText(byNote, hasValueNorms(result) ? valueWeightingSentence(result.ablate) : 'Reading the value sizes…');
      const gridBy = $('grid-by'); // the grid follows the same choice
      const gridWeighted = state.by === 'value' && hasValueNorms(result);
      if (gridBy.hidden === gridWeighted) gridBy.hidden = !gridWeighted;
      // the panel: the selected head's insides, an earlier text's while the next one is read
      const latest = source?.inside;
      const inside = latest && latest.layer === layer && latest.head === head ? latest : null;
      const fresh = !!inside && !!source?.fresh && inside.text === result.text;
      const error = source?.error;
      const status = error
        ? `This head could not be read: ${error}`
        : fresh
          ? ''
          : `Reading layer ${layer}, head ${head}…`;
      if (figure.visible) view.update(inside, state, theme, { status });
      const note = $('inside-note');
      // the panel reads the head with the page's switched-off heads off (InsideSource), except itself
      const off = state.ablate.some(([l, h]) => l === layer && h === head);
      // a patched run (the patching panel's "patch only this head") is read without its patch
      const patched = result.patch
        ? `The other views show L${result.patch.layer}H${result.patch.head} patched from the clean text; this panel reads the text without the patch.`
        : '';
      note.hidden = !off && !patched;
      setText(
        note,
        [
          off ? 'This head is switched off: the model drops its write, and the panel shows what it would write.' : '',
          patched,
        ]
          .filter(Boolean)
          .join(' '),
      );
      // grouped-query attention: the heads of this head's group read the same keys and values
      const kvNote = $('inside-kv');
      const shared = headSharing(result.nHead, result.nKvHead ?? result.nHead, head);
      kvNote.hidden = !shared;
      setText(
        kvNote,
        shared
          ? `In this model ${shared}: their keys (step 2) and values (step 5) are the same numbers; each head's own query (step 1) decides where it looks.`
          : '',
      );
      // for the tests: which head, query and text the panel shows, once it is the text on screen
      section.dataset.ready = fresh ? `${layer}:${head}:${focusToken(inside, state)}:${inside.T}` : '';
    },

    /** The panel's current step as a scene, for PNG and SVG export. */
    exportScene: () => view.exportScene(),
    /** Scrolls the panel into view (a link to it: ?inside=). */
    reveal: () => section.scrollIntoView({ block: 'start' }),
    get step() {
      return view.step;
    },
  };
}
