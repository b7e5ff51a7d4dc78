// The direct logit attribution that "How the heads combine" (the demo's panel, and <headscope-view
// view="combine">) draws beside its bars: which heads
// pushed the focused token's next token (attributionTarget(): the text's next token, or at the last
// token the model's prediction). The model is asked for the split of the result's own text
// (logitAttribution(t, token, { text, ablate }): other parts of the page run texts of their own,
// the lab's probes say, and the model's last run may be one of them) after the page's runs are done
// and the result is drawn, one request at a time, the latest wish next: typing never waits behind
// it. An answer is kept only for the model, text, switched-off heads, position and token it was
// asked for, and only if it says it split that text; anything else is dropped, never shown.
import { attributionTarget } from '../views/combine.js';
import { sameAblate } from '../../lib/result.js';

// after the next paint: the frame that shows the result, then a task of its own
const afterPaint = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));

/**
 * getModel(): the page's model now; idle(): resolves once its runner has nothing pending or in
 * flight; onUpdate(): an answer arrived (render again).
 * Returns { shown(result, state) }: what the combine view draws for this result and focus (the
 * LogitAttribution, or { note } saying why there is none), and a request for it if it is missing.
 */
export function installAttribution({ getModel, idle, onUpdate }) {
  let wish = null; // { model, text, ablate, position, token }
  let answer = null; // { ...wish, value } or { ...wish, note }: the latest answer
  let busy = false;

  const same = (x, y) =>
    !!x &&
    !!y &&
    x.model === y.model &&
    x.text === y.text &&
    sameAblate(x.ablate, y.ablate) &&
    x.position === y.position &&
    x.token === y.token;

  async function pump() {
    busy = true;
    try {
      for (;;) {
        await idle();
        await afterPaint();
        const w = wish;
        if (!w || same(answer, w)) return;
        if (w.model !== getModel()) {
          wish = null;
          return;
        }
        let value = null;
        let note = '';
        try {
          value = await w.model.logitAttribution(w.position, w.token, { text: w.text, ablate: w.ablate });
        } catch (e) {
          note = `could not be read: ${e?.message ?? e}`;
        }
        if (
          value &&
          (value.text !== w.text ||
            !sameAblate(value.ablate, w.ablate) ||
            value.position !== w.position ||
            value.token !== w.token)
        ) {
          value = null; // not what was asked (the model answers for the text given): never shown
          note = 'could not be read for this text';
        }
        answer = value ? { ...w, value } : { ...w, note };
        if (same(w, wish)) onUpdate();
      }
    } finally {
      busy = false;
    }
  }

  function shown(result, state) {
    const target = attributionTarget(result, state);
    const model = getModel();
    if (!target || !model) return { note: 'no prediction to explain' };
    if (result.patch) return { note: 'not split for a patched run' };
    const w = { model, text: result.text, ablate: result.ablate ?? [], position: target.position, token: target.token };
    if (same(answer, w)) return answer.value ?? { note: answer.note };
    if (!same(wish, w)) {
      wish = w;
      if (!busy) pump();
    }
    return { note: 'reading…' };
  }

  return { shown };
}
